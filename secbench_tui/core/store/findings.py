"""Proven findings (`--prove-findings`): one `findings` row per result a proving looked at.

A row keeps the exploits the result's reply offered (JSON, as the model sent them, each with
the rule it was given for), how running them ended (`outcome`: proven, refuted, false exploit,
or no exploit; `reason`: the first refutation's), each exploit's proof (JSON: what ran, the
property's rows, the compliant cases it also ran on) and the proving version and engine. The
figures are computed from these rows whenever they are read (`core.results.findings`), so a
change to the figures needs no proving again; a change to proving raises its version, and
`--rescore --prove-findings` proves again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from secbench_tui.core.store.connection import StoreConnection
from secbench_tui.core.store.stored_values import text, whole
from secbench_tui.core.store.values import storable


@dataclass(frozen=True)
class StoredFinding:
    evaluation_id: int
    outcome: str  # proven | refuted | false exploit | no exploit
    exploit: str | None = None  # JSON: [{"rule": n, "exploit": <as sent>}, ...]
    reason: str | None = None
    proof: str = "[]"  # JSON: one proof per exploit, in order
    proving_version: int = 0
    engine: str | None = None
    proved_at: str = ""


_COLUMNS = (
    "evaluation_id",
    "exploit",
    "outcome",
    "reason",
    "proof",
    "proving_version",
    "engine",
    "proved_at",
)


def _finding(row: Sequence[object]) -> StoredFinding | None:
    """A stored row, typed as the program writes it (a damaged one reads as None)."""
    evaluation_id = whole(row[0], -(2**63), 2**63 - 1)
    outcome = text(row[2])
    if evaluation_id is None or not outcome:
        return None
    return StoredFinding(
        evaluation_id=evaluation_id,
        exploit=text(row[1]),
        outcome=outcome,
        reason=text(row[3]),
        proof=text(row[4]) or "[]",
        proving_version=whole(row[5], 0, 10**9) or 0,
        engine=text(row[6]),
        proved_at=text(row[7], True) or "",
    )


class FindingQueries(StoreConnection):
    """Writes and reads of `findings`."""

    async def record_findings(self, findings: Sequence[StoredFinding]) -> None:
        """Write (or replace) each result's finding, in one transaction."""
        async with self.transaction() as db:
            await db.executemany(
                f"INSERT OR REPLACE INTO findings ({', '.join(_COLUMNS)})"
                f" VALUES ({', '.join('?' * len(_COLUMNS))})",
                [tuple(storable(getattr(f, c)) for c in _COLUMNS) for f in findings],
            )

    async def findings_of_runs(self, run_ids: Sequence[int]) -> dict[int, StoredFinding]:
        """Every finding of these runs' results, by result id."""
        if not run_ids:
            return {}
        columns = ", ".join(f"f.{c}" for c in _COLUMNS)
        cursor = await self.db.execute(
            f"SELECT {columns} FROM findings f JOIN evaluations e ON e.id = f.evaluation_id"
            f" WHERE e.run_id IN ({', '.join('?' * len(run_ids))})",
            list(run_ids),
        )
        found = (_finding(tuple(row)) for row in await cursor.fetchall())
        return {f.evaluation_id: f for f in found if f is not None}
