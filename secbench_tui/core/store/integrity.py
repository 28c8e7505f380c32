"""Is a database file whole? Asked before a command reads one through (a report, an export,
a rescore), so damage is said once, naming the file and the way out, instead of surfacing
as a traceback from whichever page a query happens to read first."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiosqlite

# at most this many of SQLite's findings are quoted (it lists up to 100)
_SHOWN = 3


class DamagedError(Exception):
    """The file's pages fail SQLite's own check; the message names it and what to do."""


async def check_intact(path: Path) -> None:
    """SQLite's `PRAGMA quick_check` (every page's structure, without the slower index
    cross-checks of integrity_check), on a read-only connection of its own: DamagedError
    when it finds anything. (A file SQLite cannot open at all is left to the open that
    follows, which says so.)"""
    try:
        db = await aiosqlite.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except aiosqlite.Error:
        return
    try:
        async with db.execute("PRAGMA quick_check") as cursor:
            found = [str(row[0]) for row in await cursor.fetchall()]
    except aiosqlite.DatabaseError as exc:
        if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_CORRUPT:
            return  # not a database at all, locked, unreadable: the open says which
        found = [str(exc)]  # too damaged to be checked
    finally:
        await db.close()
    if found == ["ok"]:
        return
    more = f" (+{len(found) - _SHOWN} more)" if len(found) > _SHOWN else ""
    raise DamagedError(
        f"--db {path}: the database is damaged (SQLite's check: {'; '.join(found[:_SHOWN])}"
        f"{more}); nothing was changed in it; recover what it holds with: sqlite3 {path} "
        ".recover | sqlite3 recovered.db, then point --db at recovered.db"
    )
