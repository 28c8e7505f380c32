"""Fixtures of the unit tests."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass, field

import pytest


@dataclass
class HeldWrites:
    """Result rows held on the database's thread until `gate` is set; a write still held
    after 5 s goes on, and is kept in `timed_out` (a run that waited for its row would
    wait there in vain)."""

    gate: threading.Event = field(default_factory=threading.Event)
    timed_out: list[object] = field(default_factory=list)


@pytest.fixture
def held_writes(monkeypatch: pytest.MonkeyPatch) -> HeldWrites:
    from secbench_tui.core.store import recording

    held = HeldWrites()
    write = recording._write_committed

    def holding(conn: sqlite3.Connection, rows: object) -> object:
        if not held.gate.wait(5):
            held.timed_out.append(rows)
        return write(conn, rows)  # type: ignore[arg-type]

    monkeypatch.setattr(recording, "_write_committed", holding)
    return held
