"""What the comparison views read: one verdict per case and run, and the cases that flipped.

The store returns these (`Store.grid_page`, `Store.flips_page` ...) a page at a time, so a
grid of several runs of 100,000 results opens as fast as a small one. Nothing here touches
the display: the front ends neutralise the text (`core.untrusted`) when they draw it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, cast

from secbench_tui.core.store.connection import StoreConnection
from secbench_tui.core.store.rows import ResultRow


class Flip(StrEnum):
    """How a case's outcome changed from one run to the other."""

    FIXED = "fixed"  # not correct before, correct after
    BROKE = "broke"  # correct before, not correct after
    CHANGED = "changed"  # neither correct, but a different outcome (wrong -> unparsed ...)


def flip_of(before: str, after: str) -> Flip:
    if after == "correct":
        return Flip.FIXED
    if before == "correct":
        return Flip.BROKE
    return Flip.CHANGED


@dataclass(frozen=True)
class Verdict:
    """One run's answer to one case (its first repeat)."""

    run_id: int
    outcome: str
    actual: str | None


@dataclass
class GridRow:
    """One case across the compared runs; runs without this case have no verdict."""

    case_id: str
    app: str
    expected: str
    verdicts: dict[int, Verdict] = field(default_factory=dict)

    @property
    def disagree(self) -> bool:
        return len({v.outcome for v in self.verdicts.values()}) > 1


@dataclass(frozen=True)
class GridCounts:
    cases: int
    disagreements: int
    failures: int = 0  # cases some run did not get right


@dataclass(frozen=True)
class FlipRow:
    """A case whose outcome differs between the `before` run and the `after` run."""

    case_id: str
    app: str
    expected: str
    before: Verdict
    after: Verdict

    @property
    def flip(self) -> Flip:
        return flip_of(self.before.outcome, self.after.outcome)


@dataclass(frozen=True)
class FlipCounts:
    """How the cases of two runs compare, first repeats only."""

    fixed: int = 0
    broke: int = 0
    changed: int = 0
    same: int = 0
    only_before: int = 0
    only_after: int = 0

    @property
    def flipped(self) -> int:
        return self.fixed + self.broke + self.changed


class ComparisonQueries(StoreConnection):
    """The comparison views (case x run grid, run-versus-run flips): keyset pages by case id."""

    async def grid_page(
        self,
        run_ids: Sequence[int],
        after_case: str | None = None,
        limit: int = 200,
        only_disagreements: bool = False,
        only_failures: bool = False,
    ) -> list[GridRow]:
        """The next `limit` cases (by case id) of `run_ids`, each with every run's verdict.

        Only first repeats count. `only_disagreements` keeps the cases whose outcomes differ,
        `only_failures` those that some run did not get right (both: what satisfies both)."""
        if not run_ids:
            return []
        marks = ", ".join("?" * len(run_ids))
        after = " AND case_id > ?" if after_case is not None else ""
        conditions = [
            *(["COUNT(DISTINCT outcome) > 1"] if only_disagreements else []),
            *(["TOTAL(outcome != 'correct') > 0"] if only_failures else []),
        ]
        having = f" HAVING {' AND '.join(conditions)}" if conditions else ""
        cursor = await self.db.execute(
            f"SELECT case_id FROM evaluations WHERE +run_id IN ({marks}) AND repeat = 0{after}"
            f" GROUP BY case_id{having} ORDER BY case_id LIMIT ?",
            [*run_ids, *([after_case] if after_case is not None else []), limit],
        )
        case_ids = [row[0] for row in await cursor.fetchall()]
        if not case_ids:
            return []
        rows = {case_id: GridRow(case_id, "", "") for case_id in case_ids}
        cursor = await self.db.execute(
            "SELECT run_id, case_id, app, expected_result, outcome, actual_result"
            f" FROM evaluations WHERE run_id IN ({marks}) AND repeat = 0"
            f" AND case_id IN ({', '.join('?' * len(case_ids))})",
            [*run_ids, *case_ids],
        )
        for run_id, case_id, app, expected, outcome, actual in await cursor.fetchall():
            row = rows[case_id]
            row.app, row.expected = app, expected
            row.verdicts[run_id] = Verdict(run_id, outcome, actual)
        return list(rows.values())

    async def grid_counts(self, run_ids: Sequence[int]) -> GridCounts:
        """How many cases the grid of `run_ids` has, and on how many the runs disagree."""
        if not run_ids:
            return GridCounts(0, 0)
        cursor = await self.db.execute(
            "SELECT COUNT(*), TOTAL(n > 1), TOTAL(bad > 0) FROM (SELECT"
            " COUNT(DISTINCT outcome) AS n, TOTAL(outcome != 'correct') AS bad"
            f" FROM evaluations WHERE +run_id IN ({', '.join('?' * len(run_ids))})"
            " AND repeat = 0 GROUP BY case_id)",
            list(run_ids),
        )
        row = await cursor.fetchone()
        if not row:
            return GridCounts(0, 0)
        return GridCounts(int(row[0]), int(row[1]), int(row[2]))

    async def case_answers(self, run_ids: Sequence[int], case_id: str) -> list[ResultRow]:
        """Each run's full first answer to one case, in the order of `run_ids`."""
        if not run_ids:
            return []
        cursor = await self.db.execute(
            "SELECT e.*, c.code AS code, c.description AS description FROM evaluations e"
            " LEFT JOIN case_texts c ON c.hash = e.case_hash"
            f" WHERE e.run_id IN ({', '.join('?' * len(run_ids))}) AND e.case_id = ?"
            " AND e.repeat = 0",
            [*run_ids, case_id],
        )
        found = {row["run_id"]: cast(ResultRow, dict(row)) for row in await cursor.fetchall()}
        return [found[r] for r in run_ids if r in found]

    async def flips_page(
        self,
        before: int,
        after: int,
        after_case: str | None = None,
        limit: int = 200,
        only: str | None = None,
    ) -> list[FlipRow]:
        """The next `limit` cases (by case id) whose outcome differs between two runs.

        `only` keeps one direction: "fixed", "broke" or "changed" (`core.comparison.Flip`)."""
        # a: the run before, b: the run after
        clauses = ["a.run_id = ?", "a.repeat = 0", "a.outcome != b.outcome"]
        params: list[Any] = [after, before]  # b.run_id in the join, then a.run_id
        if after_case is not None:
            clauses.append("a.case_id > ?")
            params.append(after_case)
        if only == "fixed":
            clauses.append("b.outcome = 'correct'")
        elif only == "broke":
            clauses.append("a.outcome = 'correct'")
        elif only == "changed":
            clauses.append("a.outcome != 'correct' AND b.outcome != 'correct'")
        cursor = await self.db.execute(
            "SELECT a.case_id, a.app, a.expected_result, a.outcome, a.actual_result,"
            " b.outcome, b.actual_result FROM evaluations a JOIN evaluations b"
            " ON b.run_id = ? AND b.case_id = a.case_id AND b.repeat = 0"
            f" WHERE {' AND '.join(clauses)} ORDER BY a.case_id LIMIT ?",
            [*params, limit],
        )
        return [
            FlipRow(
                case_id, app, expected, Verdict(before, a_out, a_act), Verdict(after, b_out, b_act)
            )
            for case_id, app, expected, a_out, a_act, b_out, b_act in await cursor.fetchall()
        ]

    async def flip_counts(self, before: int, after: int) -> FlipCounts:
        """How many cases flipped each way between two runs, and how many are in one only."""
        cursor = await self.db.execute(
            "SELECT a.outcome, b.outcome, COUNT(*) FROM evaluations a JOIN evaluations b"
            " ON b.run_id = ? AND b.case_id = a.case_id AND b.repeat = 0"
            " WHERE a.run_id = ? AND a.repeat = 0 GROUP BY a.outcome, b.outcome",
            (after, before),
        )
        tally = {"fixed": 0, "broke": 0, "changed": 0, "same": 0}
        both = 0
        for before_outcome, after_outcome, n in await cursor.fetchall():
            both += n
            key = (
                "same"
                if before_outcome == after_outcome
                else flip_of(before_outcome, after_outcome).value
            )
            tally[key] += n
        cursor = await self.db.execute(
            "SELECT run_id, COUNT(*) FROM evaluations WHERE run_id IN (?, ?) AND repeat = 0"
            " GROUP BY run_id",
            (before, after),
        )
        sizes = {run_id: n for run_id, n in await cursor.fetchall()}
        return FlipCounts(
            **tally,
            only_before=sizes.get(before, 0) - both,
            only_after=sizes.get(after, 0) - both,
        )
