"""Reading results: the pages the results browser, the reports and the exports ask for.

Every page is a keyset page (pass the last id or sort key seen), so a database of 100,000
results opens as fast as a small one; every row is typed through `stored_values`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from secbench_tui.core.models import ChatRequest
from secbench_tui.core.store import requests
from secbench_tui.core.store import stored_values as stored
from secbench_tui.core.store.connection import StoreConnection
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.schema import FIX_FIGURES_SQL, FIX_JOIN, FIX_SQL, ROW_SQL
from secbench_tui.core.store.stored_values import BELIEVABLE_COST_SQL


@dataclass
class ResultFilter:
    """What the results browser and exports select. Empty fields select everything."""

    run_ids: Sequence[int] = ()
    models: Sequence[str] = ()
    apps: Sequence[str] = ()
    outcomes: Sequence[str] = ()
    text: str = ""
    prompts: Sequence[str] = ()  # evaluation prompt names, a property of the run

    def where(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if self.prompts:
            clauses.append(
                "e.run_id IN (SELECT id FROM runs WHERE prompt_name IN"
                f" ({', '.join('?' * len(self.prompts))}))"
            )
            params.extend(self.prompts)
        for column, values in (
            ("run_id", self.run_ids),
            ("model_name", self.models),
            ("app", self.apps),
            ("outcome", self.outcomes),
        ):
            if values:
                clauses.append(f"e.{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        if self.text:
            clauses.append(
                "(e.case_id LIKE ? ESCAPE '\\' OR e.explanation LIKE ? ESCAPE '\\'"
                " OR e.raw_reply LIKE ? ESCAPE '\\' OR e.error LIKE ? ESCAPE '\\')"
            )
            pattern = (
                "%" + self.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            )
            params.extend([pattern] * 4)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


# A result's proven finding (`--prove-findings`), where a read of whole rows shows it.
FINDING_SQL = (
    "f.exploit AS exploit, f.outcome AS exploit_outcome, f.reason AS exploit_reason,"
    " f.proof AS exploit_proof"
)
FINDING_JOIN = "LEFT JOIN findings f ON f.evaluation_id = e.id"

# The columns the results browser sorts by (`Store.results_page_sorted`), by the row key.
SORT_COLUMNS = {"case_id": "e.case_id", "outcome": "e.outcome", "run_id": "e.run_id"}


class ResultQueries(StoreConnection):
    """The reads of results (`evaluations`) by filter, run, request or id."""

    async def finished_keys(self, run_id: int, include_errors: bool = True) -> set[tuple[str, int]]:
        sql = "SELECT case_id, repeat FROM evaluations WHERE run_id=?"
        if not include_errors:
            sql += " AND outcome != 'error'"
        cursor = await self.db.execute(sql, (run_id,))
        return {(row[0], row[1]) for row in await cursor.fetchall()}

    async def reusable(self, request_hashes: Sequence[str]) -> dict[tuple[str, int], ResultRow]:
        """The latest complete (non-error) result of each request, by (request hash, repeat)."""
        found: dict[tuple[str, int], ResultRow] = {}
        unique = sorted(set(request_hashes))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            cursor = await self.db.execute(
                "SELECT * FROM evaluations WHERE outcome != 'error'"
                f" AND request_hash IN ({', '.join('?' * len(chunk))}) ORDER BY id",
                chunk,
            )
            for row in await cursor.fetchall():
                found[(row["request_hash"], row["repeat"])] = stored.evaluation_row(dict(row))
        return found

    @property
    def adopted_requests(self) -> bool:
        """Whether this is the original evaluator's table with the request bodies it sent."""
        return self._adopted is not None and self._adopted.request

    async def adopted_answers(
        self, model: str, bodies: dict[str, ChatRequest]
    ) -> dict[tuple[str, int], ResultRow]:
        """Answers the original evaluator recorded for exactly these requests: rows of its
        imported runs of `model` whose stored request body is the one given for their case id.
        Keyed by (case id, n): the n-th such row of the case, in the order they were written."""
        from secbench_tui.core.store.original import same_request

        found: dict[tuple[str, int], ResultRow] = {}
        if not self.adopted_requests or not bodies:
            return found
        taken: dict[str, int] = {}
        case_ids = sorted(bodies)
        for start in range(0, len(case_ids), 500):
            chunk = case_ids[start : start + 500]
            cursor = await self.db.execute(
                "SELECT e.* FROM evaluations e JOIN runs r ON r.id = e.run_id"
                " WHERE r.status = 'imported' AND e.model_name = ? AND e.outcome != 'error'"
                f" AND e.case_id IN ({', '.join('?' * len(chunk))}) ORDER BY e.id",
                [model, *chunk],
            )
            for row in await cursor.fetchall():
                case_id = row["case_id"]
                if same_request(row["request"], bodies[case_id]):
                    n = taken.get(case_id, 0)
                    taken[case_id] = n + 1
                    found[(case_id, n)] = stored.evaluation_row(dict(row))
        return found

    def _where(self, flt: ResultFilter | None) -> tuple[str, list[Any]]:
        where, params = (flt or ResultFilter()).where()
        if self._adopted is not None:  # what the original wrote since this open: next open
            where += (" AND " if where else " WHERE ") + "e.run_id IS NOT NULL"
        return where, params

    async def count_results(self, flt: ResultFilter | None = None) -> int:
        where, params = self._where(flt)
        cursor = await self.db.execute(f"SELECT COUNT(*) FROM evaluations e{where}", params)
        row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def results_page(
        self,
        flt: ResultFilter | None = None,
        after_id: int | None = None,
        limit: int = 200,
        with_text: bool = False,
        newest_first: bool = False,
    ) -> list[ResultRow]:
        """One page of results in id order (keyset pagination: pass the last id seen)."""
        where, params = self._where(flt)
        if after_id is not None:
            where += (" AND " if where else " WHERE ") + (
                "e.id < ?" if newest_first else "e.id > ?"
            )
            params.append(after_id)
        columns = (
            f"{ROW_SQL}, c.code AS code, c.description AS description, {FINDING_SQL}"
            if with_text
            else (
                "e.id, e.timestamp, e.model_name, e.run_id, e.app, e.case_id, e.expected_result,"
                " e.actual_result, e.outcome, e.latency_ms, e.cost, e.prompt_tokens,"
                " e.completion_tokens, e.repeat, e.suite_kind, e.reasons"
            )
        )
        join = (
            f" LEFT JOIN case_texts c ON c.hash = e.case_hash {FINDING_JOIN}" if with_text else ""
        )
        cursor = await self.db.execute(
            f"SELECT {columns} FROM evaluations e{join}{where}"
            f" ORDER BY e.id{' DESC' if newest_first else ''} LIMIT ?",
            [*params, limit],
        )
        return [stored.evaluation_row(dict(row)) for row in await cursor.fetchall()]

    async def result(self, evaluation_id: int) -> ResultRow | None:
        """One result, whole: its code, and its verified fix (`--task fix`) when it has one."""
        cursor = await self.db.execute(
            f"SELECT {ROW_SQL}, c.code AS code, c.description AS description, {FIX_SQL},"
            f" {FINDING_SQL} FROM evaluations e LEFT JOIN case_texts c ON c.hash = e.case_hash"
            f" {FIX_JOIN} {FINDING_JOIN} WHERE e.id=?",
            (evaluation_id,),
        )
        row = await cursor.fetchone()
        return stored.evaluation_row(dict(row)) if row else None

    async def case_family(self, run_id: int, original: str) -> list[ResultRow]:
        """An original case of a run and its `--rewrites` variants (ids `<original>#...`),
        each on its first repeat, the original first, with code."""
        pattern = original.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        cursor = await self.db.execute(
            f"SELECT {ROW_SQL}, c.code AS code, c.description AS description FROM evaluations e"
            " LEFT JOIN case_texts c ON c.hash = e.case_hash WHERE e.run_id=? AND e.repeat=0"
            " AND (e.case_id=? OR e.case_id LIKE ? ESCAPE '\\') ORDER BY e.case_index, e.id",
            (run_id, original, pattern + "#%"),
        )
        rows = [stored.evaluation_row(dict(row)) for row in await cursor.fetchall()]
        rows = [r for r in rows if r["case_id"] == original or r.get("variant") is not None]
        return sorted(rows, key=lambda r: r.get("variant") is not None)

    async def run_results(self, run_id: int, with_text: bool = True) -> list[ResultRow]:
        """A run's results in case order, with their verified fixes (`--task fix`); without
        text, only what figures are made of."""
        columns = (
            f"{ROW_SQL}, c.code AS code, c.description AS description, {FIX_SQL}, {FINDING_SQL}"
            if with_text
            else "e.id, e.app, e.case_id, e.case_index, e.repeat, e.suite_kind, e.outcome,"
            " e.expected_result, e.actual_result, e.prompt_tokens, e.completion_tokens, e.cost,"
            " e.latency_ms, e.reused_from, e.scores, e.explanation, e.reasoning_tokens, e.error,"
            f" e.gold, e.reasons, e.scoring_version, e.variant, {FIX_FIGURES_SQL}"
        )
        join = (
            f" LEFT JOIN case_texts c ON c.hash = e.case_hash {FINDING_JOIN}" if with_text else ""
        )
        cursor = await self.db.execute(
            f"SELECT {columns} FROM evaluations e{join} {FIX_JOIN} WHERE e.run_id=?"
            " ORDER BY e.case_index, e.repeat",
            (run_id,),
        )
        return [stored.evaluation_row(dict(row)) for row in await cursor.fetchall()]

    async def rescorable_page(
        self, run_ids: Sequence[int] = (), after_id: int = 0, limit: int = 500
    ) -> list[ResultRow]:
        """Markdown results whose reply arrived readable (no error), with what scoring reads:
        the raw reply, the case's code, its label and gold. Keyset pages by id."""
        where = "e.suite_kind = 'markdown' AND e.error IS NULL AND e.id > ?"
        params: list[Any] = [after_id]
        if run_ids:
            where += f" AND e.run_id IN ({', '.join('?' * len(run_ids))})"
            params.extend(run_ids)
        if self._adopted is not None:
            where += " AND e.run_id IS NOT NULL"
        cursor = await self.db.execute(
            "SELECT e.id, e.run_id, e.app, e.case_id, e.test_file, e.expected_result,"
            " e.actual_result, e.outcome, e.explanation, e.raw_reply, e.gold, e.reasons,"
            " e.scoring_version, c.code AS code FROM evaluations e"
            f" LEFT JOIN case_texts c ON c.hash = e.case_hash WHERE {where} ORDER BY e.id LIMIT ?",
            [*params, limit],
        )
        return [stored.evaluation_row(dict(row)) for row in await cursor.fetchall()]

    async def spent(self, run_id: int) -> float:
        """What a run's own requests cost (results reused from earlier runs cost nothing)."""
        cursor = await self.db.execute(
            f"SELECT TOTAL({BELIEVABLE_COST_SQL}) FROM evaluations"
            " WHERE run_id=? AND reused_from IS NULL",
            (run_id,),
        )
        row = await cursor.fetchone()
        return float(row[0]) if row else 0.0

    async def sent_request(self, result_id: int) -> requests.SentRequest | None:
        """The messages a result was asked with, as far as the database kept them."""
        return await requests.sent_request(self.db, result_id, self.adopted_requests)

    async def requests_for_export(
        self, rows: Sequence[ResultRow]
    ) -> tuple[dict[int, requests.ExportedRequest], dict[str, str]]:
        """Each result's request and the texts it names (`requests.for_export`)."""
        return await requests.for_export(self.db, rows, self.adopted_requests)

    async def prompt_names(self) -> list[str]:
        """The evaluation prompts that runs with results were made with, by name."""
        cursor = await self.db.execute(
            "SELECT DISTINCT prompt_name FROM runs WHERE prompt_name IS NOT NULL"
            " AND id IN (SELECT DISTINCT run_id FROM evaluations) ORDER BY prompt_name"
        )
        return [row[0] for row in await cursor.fetchall()]

    async def distinct(self, column: str) -> list[str]:
        if column not in ("model_name", "app", "outcome"):
            raise ValueError(column)
        cursor = await self.db.execute(
            f"SELECT DISTINCT {column} FROM evaluations ORDER BY {column}"
        )
        return [stored.text(row[0], required=True) or "" for row in await cursor.fetchall()]

    async def results_page_sorted(
        self,
        flt: ResultFilter | None,
        sort: str,
        after: tuple[Any, int] | None = None,
        limit: int = 200,
        descending: bool = False,
    ) -> list[ResultRow]:
        """One page of results ordered by `sort` ("case", "outcome", "run"), then id.

        Keyset pagination on (that column, id): pass the last row's pair as `after`."""
        column = SORT_COLUMNS[sort]
        where, params = (flt or ResultFilter()).where()
        if after is not None:
            where += (" AND " if where else " WHERE ") + (
                f"({column}, e.id) {'<' if descending else '>'} (?, ?)"
            )
            params.extend(after)
        way = " DESC" if descending else ""
        cursor = await self.db.execute(
            "SELECT e.id, e.timestamp, e.model_name, e.run_id, e.app, e.case_id,"
            " e.expected_result, e.actual_result, e.outcome, e.latency_ms, e.cost,"
            " e.prompt_tokens, e.completion_tokens, e.repeat, e.suite_kind, e.reasons"
            f" FROM evaluations e{where} ORDER BY {column}{way}, e.id{way} LIMIT ?",
            [*params, limit],
        )
        return [stored.evaluation_row(dict(row)) for row in await cursor.fetchall()]
