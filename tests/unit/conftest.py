"""Fixtures of the unit tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest


class HeldWrites:
    """The database's write lock, held by another connection between `hold()` and
    `release()`, as another process writing to the same file holds it: the store's writes
    wait for it (up to the store's busy timeout, then fail); reads go on (WAL)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None

    @property
    def holding(self) -> bool:
        return self._conn is not None

    def hold(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("BEGIN IMMEDIATE")
        self._conn = conn

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.execute("ROLLBACK")
            conn.close()


@pytest.fixture
def held_writes(tmp_path: Path) -> Iterator[HeldWrites]:
    """Writes to `tmp_path / "r.db"` held at will (`HeldWrites`); released at the end."""
    held = HeldWrites(tmp_path / "r.db")
    yield held
    held.release()
