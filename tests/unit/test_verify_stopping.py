"""`Stop`: what is in flight is ended at once, nothing starts after it, and a second stop
removes what must not outlive the process (the embedded server) before it ends."""

from __future__ import annotations

import threading

import pytest

from secbench_tui.core.verify.stopping import Stop, Stopped


def test_a_stop_ends_what_is_in_flight_and_nothing_starts_after_it() -> None:
    stop = Stop()
    ended = threading.Event()
    with stop.ending(ended.set):
        stop.set()
        assert ended.wait(10)  # called from a thread of its own, not by the caller
    with pytest.raises(Stopped), stop.ending(lambda: None):
        pytest.fail("a statement started after the stop")
    with pytest.raises(Stopped):
        stop.check()


def test_what_ended_is_forgotten_and_abandon_runs_what_is_registered() -> None:
    stop = Stop()
    calls: list[str] = []
    with stop.ending(lambda: calls.append("statement")):
        pass
    with stop.abandoning(lambda: calls.append("server")):
        stop.abandon()
    stop.abandon()  # twice: nothing registered any more
    assert calls == ["server"]
    assert stop.is_set()
