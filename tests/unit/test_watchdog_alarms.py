"""The verify watchdog's one thread of alarms: an alarm runs once its delay has passed, in
order of when it is due whatever order it was set in, and a cleared one never runs (a
statement that finished in time is never cancelled). The deadlines themselves, cancel and
terminate on a real PostgreSQL, are tested in tests/e2e/test_verify_sandbox.py."""

from __future__ import annotations

import sys
import threading
import time

import pytest

pytest.importorskip("psycopg", reason="needs the verify extra (psycopg)")

from secbench_tui.core.verify.deadline import _Alarms  # noqa: E402


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


def test_threads_arming_the_first_alarm_together_lose_no_deadline() -> None:
    """Eight threads setting the first alarms of new watchdogs at once: each alarm fires, with
    no error, and each watchdog has one keeping thread."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch often: the race, if any, shows
    try:
        _arm_together(rounds=40)
    finally:
        sys.setswitchinterval(interval)


def _arm_together(rounds: int) -> None:
    for _ in range(rounds):
        _one_round(_Alarms())


def _one_round(alarms: _Alarms) -> None:
    fired = threading.Semaphore(0)
    errors: list[BaseException] = []
    go = threading.Barrier(8)

    def arm() -> None:
        go.wait()
        try:
            alarms.set(0.01, fired.release)
        except BaseException as exc:  # noqa: BLE001 - the test counts them
            errors.append(exc)

    threads = [threading.Thread(target=arm) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert all(fired.acquire(timeout=5) for _ in range(8))
