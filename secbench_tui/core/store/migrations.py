"""Bringing an older database up to the current schema: `MIGRATIONS[n]` goes from n to n + 1.

A SQLite file keeps its version in `PRAGMA user_version`; version 0 is a database written by
the original security-bench evaluator (the seven columns and nothing else), adopted in place.
A PostgreSQL database keeps it in `secbench_schema` (`postgres_schema`); none is older than
version 9, the first PostgreSQL held, so the migrations before it are SQLite's history, and
every one after it runs on both dialects: it is written in the store's SQL (SQLite's, which
`translation` turns for PostgreSQL), and a table it adds is one of `schema.TABLES`, made for
the dialect at hand (`adds_tables`). Each migration runs inside the opening's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from secbench_tui.core.store import requests
from secbench_tui.core.store.schema import (
    BATCH_REQUESTS,
    BATCHES,
    FINDINGS,
    FIXES,
    Dialect,
    Table,
    create_tables,
    create_v1,
)
from secbench_tui.core.store.values import LEGACY_PROMPT_NAME, prompt_keyed, vdb_prompt_name


async def _migrate_legacy(db: Any, dialect: Dialect) -> None:
    """Version 0 -> 1: a database of the original evaluator, adopted in place.

    Its `evaluations` table keeps its columns, rows and ids (so the original still reads and
    appends to it) and gains ours beside them; its rows are imported once the schema is
    current (`core/original.py`).
    """
    from secbench_tui.core.store import original

    await original.add_our_columns(db)
    await create_v1(db)


# A migration gets the store's connection (aiosqlite's, or `postgres.PgDatabase`) and its dialect.
Migration = Callable[[Any, Dialect], Awaitable[None]]


def adds_tables(*tables: Table) -> Migration:
    """A migration that makes these tables of `schema.TABLES` (of the dialect at hand)."""

    async def migrate(db: Any, dialect: Dialect) -> None:
        await create_tables(db, dialect, tables)

    return migrate


async def _add_run_owner(db: Any, dialect: Dialect) -> None:
    """Version 1 -> 2: which process runs a run, so a killed one shows as interrupted."""
    await db.execute("ALTER TABLE runs ADD COLUMN pid INTEGER")
    await db.execute("ALTER TABLE runs ADD COLUMN host TEXT")


async def _add_prompt_name(db: Any, dialect: Dialect) -> None:
    """Version 2 -> 3: each run names its evaluation prompt; reuse and resume keys include it.

    Runs recorded before are named as their prompt was then (`evaluation-prompt`, or the
    VulDetectBench method); their keys are re-derived with that name, so a result already paid
    for is still reused by a run of the same prompt file. Imported runs name none.
    """
    await db.execute("ALTER TABLE runs ADD COLUMN prompt_name TEXT")
    cursor = await db.execute("SELECT id, suite_kind, settings, fingerprint FROM runs")
    names: dict[int, str] = {}
    for run_id, kind, settings, fingerprint in await cursor.fetchall():
        if not fingerprint:  # imported from the original tool: its prompt is not known here
            continue
        try:
            method = json.loads(settings or "{}").get("method")
        except (ValueError, AttributeError):
            method = None
        names[run_id] = vdb_prompt_name(method) if kind == "vuldetectbench" else LEGACY_PROMPT_NAME
        await db.execute(
            "UPDATE runs SET prompt_name=?, fingerprint=? WHERE id=?",
            (names[run_id], prompt_keyed(fingerprint, names[run_id]), run_id),
        )
    cursor = await db.execute(
        "SELECT id, run_id, request_hash FROM evaluations WHERE request_hash IS NOT NULL"
    )
    await db.executemany(
        "UPDATE evaluations SET request_hash=? WHERE id=?",
        [
            (prompt_keyed(request_hash, names[run_id]), row_id)
            for row_id, run_id, request_hash in await cursor.fetchall()
            if run_id in names
        ],
    )


async def _add_reasoning(db: Any, dialect: Dialect) -> None:
    """Version 3 -> 4: the model's reasoning text and reasoning tokens, per result."""
    await db.execute("ALTER TABLE evaluations ADD COLUMN reasoning TEXT")
    await db.execute("ALTER TABLE evaluations ADD COLUMN reasoning_tokens INTEGER")


async def _add_notes(db: Any, dialect: Dialect) -> None:
    """Version 4 -> 5: notes on a case, such as a cost from the server that was not believed."""
    await db.execute("ALTER TABLE evaluations ADD COLUMN notes TEXT")


async def _add_case_index(db: Any, dialect: Dialect) -> None:
    """Version 5 -> 6: the comparison views walk cases in order across runs (`grid_page`)."""
    await db.execute(
        "CREATE INDEX IF NOT EXISTS ix_eval_case ON evaluations (case_id, run_id, repeat, outcome)"
    )


async def _add_reasons(db: Any, dialect: Dialect) -> None:
    """Version 6 -> 7: why a bad case is bad (`gold`: its right rules and lines, JSON), why the
    model said what it said (`reasons`: the violations cited, scored, JSON) and the version of
    the scoring that wrote the row's scores (`scoring_version`; NULL: before versions were kept,
    which `--rescore` brings up to date from the raw replies)."""
    cursor = await db.execute("PRAGMA table_info(evaluations)")
    have = {row[1] for row in await cursor.fetchall()}
    for column, kind in (("gold", "TEXT"), ("reasons", "TEXT"), ("scoring_version", "INTEGER")):
        if column not in have:
            await db.execute(f"ALTER TABLE evaluations ADD COLUMN {column} {kind}")


async def _add_variant(db: Any, dialect: Dialect) -> None:
    """Version 7 -> 8: a rewritten case's identity (`--rewrites`): its original case, the
    relation, seed and code hash, and whether the equivalence gate proved it; NULL for an
    original case."""
    await db.execute("ALTER TABLE evaluations ADD COLUMN variant TEXT")


# MIGRATIONS[n] brings a file at version n to version n + 1.
MIGRATIONS: dict[int, Migration] = {
    0: _migrate_legacy,
    1: _add_run_owner,
    2: _add_prompt_name,
    3: _add_reasoning,
    4: _add_notes,
    5: _add_case_index,
    6: _add_reasons,
    7: _add_variant,
    8: requests.add_request_texts,
    9: adds_tables(FIXES),  # `--task fix`: each result's fixed code, and what verifying found
    10: adds_tables(BATCHES, BATCH_REQUESTS),  # `--batch`: the batches sent, their requests
    11: adds_tables(FINDINGS),  # `--prove-findings`: each result's exploits and their proof
}
