"""Is a file of schema version 0 the original evaluator's, to adopt? Asked before anything in
it is copied or changed: any database with a table named `evaluations` was adopted (and, once
refused, copied again at every attempt)."""

from __future__ import annotations

import aiosqlite

# The columns of the original's table in every version of it (the specification's seven).
ORIGINAL_COLUMNS = (
    "id",
    "timestamp",
    "test_file",
    "model_name",
    "expected_result",
    "actual_result",
    "explanation",
)


async def refuse_foreign(db: aiosqlite.Connection) -> None:
    """A file of schema version 0 that holds tables is the original evaluator's, to adopt,
    only when its `evaluations` table has the original's columns; ValueError (saying what is
    missing) for any other, before anything in it is copied or changed. A file without
    tables is a new one."""
    cursor = await db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"
    )
    tables = sorted(str(row[0]) for row in await cursor.fetchall())
    if not tables:
        return
    if "evaluations" not in tables:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        raise ValueError(f"it holds other tables ({shown}) and no evaluations table")
    cursor = await db.execute("PRAGMA table_info(evaluations)")
    have = {str(row[1]) for row in await cursor.fetchall()}
    missing = [c for c in ORIGINAL_COLUMNS if c not in have]
    if missing:
        raise ValueError(
            "its evaluations table is not the original security-bench's: it has no "
            + ", ".join(missing)
            + (" column" if len(missing) == 1 else " columns")
        )
