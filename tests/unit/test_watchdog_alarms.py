"""The verify watchdog's one thread of alarms: an alarm runs once its delay has passed, in
order of when it is due whatever order it was set in, and a cleared one never runs (a
statement that finished in time is never cancelled). The deadlines themselves, cancel and
terminate on a real PostgreSQL, are tested in tests/e2e/test_verify_sandbox.py."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("psycopg", reason="needs the verify extra (psycopg)")

from secbench_tui.core.suites.verify.sandbox import _Alarms  # noqa: E402


def test_alarms_run_when_due_in_order_and_cleared_ones_never() -> None:
    alarms = _Alarms()
    ran: list[str] = []
    finished = threading.Event()

    def note(name: str) -> None:
        ran.append(name)
        if name == "last":
            finished.set()

    started = time.monotonic()
    alarms.set(0.30, lambda: note("last"))
    cleared = alarms.set(0.05, lambda: note("cleared"))
    alarms.set(0.10, lambda: note("first"))
    alarms.set(0.20, lambda: note("second"))
    alarms.clear(cleared)
    assert finished.wait(10)
    assert time.monotonic() - started >= 0.30
    time.sleep(0.05)  # nothing else comes
    assert ran == ["first", "second", "last"]


def test_many_alarms_share_one_thread() -> None:
    alarms = _Alarms()
    before = threading.active_count()
    for _ in range(1000):
        alarms.clear(alarms.set(60, lambda: None))
    assert threading.active_count() <= before + 1
