"""Verified fixes (`--task fix`): one `fixes` row per result whose fix was verified.

A row keeps the fixed code as the reply gave it (None when the reply gave none), what
verifying it on PostgreSQL found (`outcome`, `reason`, whether it is `secure` and
`functional`), the compliant twin it was compared with, how many lines it changes in the bad
case, the detail a reader needs to see why (JSON: the failing parameter set, its rows and the
twin's), and the fixing version and engine. The figures are computed from these rows whenever
they are read (`core.results.fixes`), so a change to the figures needs no verifying again; a
change to verifying raises its version, and `--rescore` verifies the stored fixes again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from secbench_tui.core.store.connection import StoreConnection
from secbench_tui.core.store.stored_values import text, whole
from secbench_tui.core.store.values import storable


@dataclass(frozen=True)
class StoredFix:
    evaluation_id: int
    outcome: str  # a `core.fixes.models.FixOutcome` value, as written
    fixed_code: str | None = None
    reason: str | None = None
    secure: bool | None = None
    functional: bool | None = None
    twin: str | None = None  # the case id of the compliant twin it was compared with
    change_lines: int | None = None
    detail: str = "{}"  # JSON
    fixing_version: int = 0
    engine: str | None = None
    fixed_at: str = ""


COLUMNS = (
    "evaluation_id",
    "fixed_code",
    "outcome",
    "reason",
    "secure",
    "functional",
    "twin",
    "change_lines",
    "detail",
    "fixing_version",
    "engine",
    "fixed_at",
)


def _flag(value: object) -> bool | None:
    number = whole(value, 0, 1)
    return None if number is None else bool(number)


def _fix(row: Sequence[object]) -> StoredFix | None:
    """A stored row, typed as the program writes it (a damaged one reads as None)."""
    evaluation_id = whole(row[0], -(2**63), 2**63 - 1)
    outcome = text(row[2])
    if evaluation_id is None or not outcome:
        return None
    return StoredFix(
        evaluation_id=evaluation_id,
        fixed_code=text(row[1]),
        outcome=outcome,
        reason=text(row[3]),
        secure=_flag(row[4]),
        functional=_flag(row[5]),
        twin=text(row[6]),
        change_lines=whole(row[7], 0, 10**9),
        detail=text(row[8]) or "{}",
        fixing_version=whole(row[9], 0, 10**9) or 0,
        engine=text(row[10]),
        fixed_at=text(row[11], True) or "",
    )


class FixQueries(StoreConnection):
    """Writes and reads of `fixes`."""

    async def record_fixes(self, fixes: Sequence[StoredFix]) -> None:
        """Write (or replace) each result's fix, in one transaction."""
        await self.db.executemany(
            f"INSERT OR REPLACE INTO fixes ({', '.join(COLUMNS)})"
            f" VALUES ({', '.join('?' * len(COLUMNS))})",
            [tuple(storable(getattr(f, c)) for c in COLUMNS) for f in fixes],
        )
        await self.db.commit()

    async def fixes_of_run(self, run_id: int) -> dict[int, StoredFix]:
        """Every verified fix of a run's results, by result id."""
        columns = ", ".join(f"x.{c}" for c in COLUMNS)
        cursor = await self.db.execute(
            f"SELECT {columns} FROM fixes x JOIN evaluations e ON e.id = x.evaluation_id"
            " WHERE e.run_id = ?",
            (run_id,),
        )
        found = (_fix(tuple(row)) for row in await cursor.fetchall())
        return {f.evaluation_id: f for f in found if f is not None}
