"""Writing results: each case's row committed as it arrives, and rescored rows rewritten."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from secbench_tui.core.models import Case, Evaluation
from secbench_tui.core.store.connection import StoreConnection, StoreError
from secbench_tui.core.store.schema import EVAL_COLUMNS
from secbench_tui.core.store.values import gold_json, now_iso, storable, text_hash


def _insert_result(columns: Sequence[str]) -> str:
    return (
        f"INSERT OR REPLACE INTO evaluations ({', '.join(columns)})"
        f" VALUES ({', '.join('?' * len(columns))})"
    )


_INSERT_RESULT = _insert_result(EVAL_COLUMNS)


@functools.lru_cache(maxsize=4096)
def case_text_hash(code: str, description: str) -> str:
    """`text_hash` of a case's texts, kept for the cases of the runs under way: a case's row
    names them by it, and a run writes its cases' rows one after another (a text's own
    `hash()`, which the lookup takes, is kept by the text)."""
    return text_hash(code, description)


def _variant_text(value: Any) -> str | None:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else None


class ResultRecording(StoreConnection):
    """The writes of results (`evaluations`) and of the case texts they point at."""

    async def remember_texts(self, cases: Sequence[Case]) -> None:
        """Write the code and description of every case a run is about to ask, in one write.

        `record` then writes only each result's row. The texts are committed here, before
        any result: a result's write that fails is rolled back (`transaction`), and must not
        take the texts other rows point at with it (rows of the content-addressed text table,
        so one written for a case a stopped run never asked is harmless).
        """
        rows: dict[str, tuple[str, Any, Any]] = {}
        for case in cases:
            case_hash = case_text_hash(case.code, case.description)
            if case_hash not in self._known_texts:
                rows[case_hash] = (case_hash, storable(case.code), storable(case.description))
        if rows:
            await self._write_many(
                "INSERT OR IGNORE INTO case_texts (hash, code, description) VALUES (?, ?, ?)",
                list(rows.values()),
            )
            self._known_texts.update(rows)

    async def remember_requests(self, cases: Sequence[Case]) -> dict[str, str]:
        """Write the texts of every message a run's cases send, in one write, committed (as
        `remember_texts` says why), and return what each result's row names them by, by case
        id (`core.store.requests`)."""
        refs = {case.case_id: self._request_texts.refs(case) for case in cases}
        rows = self._request_texts.rows(self._known_request_texts)
        if rows:
            await self._write_many(
                "INSERT OR IGNORE INTO request_texts (hash, text) VALUES (?, ?)", rows
            )
            self._known_request_texts.update(h for h, _ in rows)
        return refs

    async def _write_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        async with self.transaction() as db, db.executemany(sql, rows):
            pass  # the cursor is closed on the database's thread, as `async with` does

    async def record(
        self,
        evaluation: Evaluation,
        request_hash: str,
        reused_from: int | None = None,
        messages: str | None = None,
    ) -> int:
        """Write one result and commit it before returning its row's id; `messages`: its
        request's, as `remember_requests` named them. A caller cancelled meanwhile does not
        undo the write: the answer was paid for, and `close` waits for it (`kept`)."""
        row = await self._record(evaluation, request_hash, reused_from, messages, None)
        assert row is not None, "a write of no claim always writes"
        return row

    async def record_claimed(
        self,
        evaluation: Evaluation,
        request_hash: str,
        seq: int,
        reused_from: int | None = None,
        messages: str | None = None,
    ) -> int | None:
        """`record` for a case of a shared run's queue (`--worker`, `seq` its place there):
        the case marked done and its result written in one transaction, unless another
        worker stored it first (its lease ran out meanwhile): then nothing is written and
        None comes back, so each case of the run is stored exactly once."""
        return await self._record(evaluation, request_hash, reused_from, messages, seq)

    async def _record(
        self,
        evaluation: Evaluation,
        request_hash: str,
        reused_from: int | None,
        messages: str | None,
        seq: int | None,
    ) -> int | None:
        case, completion, scored = evaluation.case, evaluation.completion, evaluation.scored
        case_hash = case_text_hash(case.code, case.description)
        values: Sequence[Any] = [
            storable(value)
            for value in (
                evaluation.timestamp or now_iso(),
                case.test_file,
                await self._model_of(evaluation),
                case.expected,
                scored.actual,
                scored.explanation,
                evaluation.run_id,
                case.kind.value,
                case.app,
                case.case_id,
                evaluation.index,
                evaluation.repeat,
                scored.outcome.value,
                completion.text,
                completion.error or completion.unreadable,  # unreadable: unparsed, and why
                completion.status,
                completion.finish_reason,
                completion.prompt_tokens,
                completion.completion_tokens,
                completion.cost,
                completion.latency_ms,
                completion.attempts,
                completion.served_model,
                completion.provider,
                json.dumps(scored.scores, sort_keys=True),
                case_hash,
                request_hash,
                reused_from,
                completion.reasoning,
                completion.reasoning_tokens,
                completion.notes,
                gold_json(case),
                scored.reason.to_json() if scored.reason is not None else None,
                scored.scoring_version or None,
                _variant_text(case.meta.get("variant")),
                messages,
            )
        ]
        sql = _INSERT_RESULT
        if self._adopted is not None:  # the original evaluator's table: fill what it requires
            columns, values = self._adopted.row(
                EVAL_COLUMNS, values, self._run_prompts.get(evaluation.run_id)
            )
            sql = _insert_result(columns)
        claim = None if seq is None else (evaluation.run_id, seq)
        return await self.kept(self._write_result(case, case_hash, sql, values, claim))

    async def _write_result(
        self,
        case: Case,
        case_hash: str,
        sql: str,
        values: Sequence[Any],
        claim: tuple[int, int] | None = None,
    ) -> int | None:
        """The result's row, and its case's texts first when this store has not written
        them (`remember_texts`), in one committed write; the row's id. With a `claim` (run,
        seq) of the shared queue, only if that case is not done yet, which it then is."""
        new_text = case_hash not in self._known_texts
        async with self.transaction() as db:
            if claim is not None:
                async with db.execute(
                    "UPDATE queue SET state = 'done' WHERE run_id = ? AND seq = ?"
                    " AND state != 'done'",
                    claim,
                ) as cursor:
                    if cursor.rowcount == 0:
                        return None
            if new_text:
                await db.execute_insert(
                    "INSERT OR IGNORE INTO case_texts (hash, code, description) VALUES (?, ?, ?)",
                    (case_hash, storable(case.code), storable(case.description)),
                )
            row = await db.execute_insert(sql, values)
        if new_text:
            self._known_texts.add(case_hash)
        assert row is not None, "an INSERT always has a last row id"
        return int(row[0])

    async def _model_of(self, evaluation: Evaluation) -> str:
        if evaluation.run_id not in self._run_models:
            async with self.db.execute(
                "SELECT model_name, prompt_name FROM runs WHERE id=?", (evaluation.run_id,)
            ) as cursor:
                row = await cursor.fetchone()
            if row is None:
                raise StoreError(f"run {evaluation.run_id} does not exist in {self.path}")
            self._run_models[evaluation.run_id] = row[0]
            self._run_prompts[evaluation.run_id] = row[1]
        return self._run_models[evaluation.run_id]

    async def update_scores(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Write rescored results: (outcome, actual_result, explanation, reasons, gold,
        scoring_version, id) each, in one transaction."""
        required = self._adopted.required if self._adopted is not None else frozenset()
        if "actual_result" in required:  # the original's NOT NULL column: "" for no verdict
            rows = [(r[0], "" if r[1] is None else r[1], *r[2:]) for r in rows]
        await self._write_many(
            "UPDATE evaluations SET outcome=?, actual_result=?, explanation=?, reasons=?,"
            " gold=?, scoring_version=? WHERE id=?",
            [tuple(storable(v) for v in row) for row in rows],
        )
