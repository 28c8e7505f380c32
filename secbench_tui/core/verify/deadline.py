"""The deadline every statement of a verification runs under, kept from outside its session.

`Watchdog.limit` wraps each statement on a case's or the checker's connection: past the
deadline it cancels the statement, and after a grace ends the session (a plpgsql block that
catches the cancel gains nothing); a stop (`stopping.Stop`) does both at once. Verify's own
connections (`connect_admin`) carry a statement and a lock timeout of their own instead: no
case runs code in those sessions, so nothing can lift them.
"""

from __future__ import annotations

import heapq
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from secbench_tui.core.verify.stopping import Stop, Stopped


@dataclass(frozen=True)
class Limits:
    deadline: float = 10.0  # seconds per statement, fixtures included
    rows: int = 10_000  # rows a statement may return; one more fails the case
    grace: float = 2.0  # after the cancel, seconds before the session is ended
    # a Python case's fresh process may take this long to load its code before the deadline of
    # its first parameter set starts (imports on a busy machine)
    startup: float = 10.0


# Each statement verify runs on a connection of its own (creating and dropping databases and
# roles, reading the tables after a Python case) ends within this (a database is created in
# well under a second, or a few on a busy machine), and waits no longer than the deadline for
# a lock: a lock a case's process still holds never stalls verify.
ADMIN_SECONDS = 60.0


def connect_admin(
    uri: str, lock_seconds: float, dbname: str | None = None
) -> psycopg.Connection[Any]:
    """A connection of verify's own, as the server's administrator (autocommit)."""
    options = str(conninfo_to_dict(uri).get("options") or "")
    timeouts = (
        f"-c statement_timeout={round(ADMIN_SECONDS * 1000)} "
        f"-c lock_timeout={round(lock_seconds * 1000)}"
    )
    extra = {"dbname": dbname} if dbname else {}
    conninfo = make_conninfo(uri, options=f"{options} {timeouts}".strip(), **extra)
    return psycopg.connect(conninfo, autocommit=True, connect_timeout=10)


class DeadlineExceeded(Exception):
    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"did not finish within the {seconds:g} s deadline (stopped from outside the "
            "session; --verify-deadline sets it)"
        )


class Watchdog:
    """Keeps the deadline of statements on a connection, from outside its session, and ends
    them at once on a stop (`stop`: Ctrl+C, SIGTERM, the app's stop).

    Without `admin_uri` (in the Python child, which holds no administrator's secret) it only
    cancels; the parent ends the child, and its sessions, when the cancel was caught.

    One thread of its own keeps every deadline (a verification runs thousands of statements,
    and a pair of timer threads for each cost more than the statements); what a deadline does
    when it passes (cancel, terminate) runs in a thread of its own, so a slow cancel never
    delays another statement's deadline."""

    def __init__(self, admin_uri: str | None, limits: Limits, stop: Stop | None = None) -> None:
        self.admin_uri = admin_uri
        self.limits = limits
        self.stop = stop if stop is not None else Stop()
        self._clock = _Alarms()

    @contextmanager
    def limit(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        """Raises DeadlineExceeded past the deadline, and Stopped once a stop was asked (at
        the start of the statement, or as it ends it)."""
        pid = conn.info.backend_pid
        lock = threading.Lock()
        state = {"done": False, "fired": False}

        def cancel() -> None:
            with lock:
                if state["done"]:
                    return
                state["fired"] = True
                try:
                    conn.cancel_safe(timeout=self.limits.grace)
                except Exception:  # the terminate below still comes
                    pass

        def terminate() -> None:  # the cancel was caught (EXCEPTION WHEN query_canceled)
            with lock:
                if state["done"] or self.admin_uri is None:
                    return
                try:
                    with connect_admin(self.admin_uri, self.limits.grace) as a:
                        a.execute("SELECT pg_terminate_backend(%s)", [pid])
                except psycopg.Error:
                    pass

        def stopped() -> None:
            cancel()
            time.sleep(self.limits.grace)
            terminate()

        alarms = [
            self._clock.set(self.limits.deadline, cancel),
            self._clock.set(self.limits.deadline + self.limits.grace, terminate),
        ]
        try:
            with self.stop.ending(stopped):
                yield
        except psycopg.Error as exc:
            if self.stop.is_set():
                raise Stopped from exc
            if state["fired"]:
                raise DeadlineExceeded(self.limits.deadline) from exc
            raise
        finally:
            with lock:
                state["done"] = True
            for alarm in alarms:
                self._clock.clear(alarm)
        self.stop.check()
        if state["fired"]:
            raise DeadlineExceeded(self.limits.deadline)


class _Alarm:
    __slots__ = ("due", "action", "cleared")

    def __init__(self, due: float, action: Callable[[], None]) -> None:
        self.due, self.action, self.cleared = due, action, False

    def __lt__(self, other: _Alarm) -> bool:
        return self.due < other.due


# Taken by the first alarm of an `_Alarms` in a process; made anew in a forked child, where
# a lock some other thread of the parent held would stay held for ever.
_STARTING = threading.Lock()


def _new_starting_lock() -> None:
    global _STARTING
    _STARTING = threading.Lock()


os.register_at_fork(after_in_child=_new_starting_lock)


class _Alarms:
    """Actions due after a delay, kept by one daemon thread (started at the first alarm, and
    again in a forked process, which inherits the list but not the thread). A cleared alarm
    stays in the heap until it comes to the top, where it is dropped unrun."""

    def __init__(self) -> None:
        self._owner = -1

    def _start(self) -> None:
        self._due: list[_Alarm] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._keep, name="secbench-watchdog", daemon=True).start()
        self._owner = os.getpid()  # last: another thread sees it only once all is ready

    def set(self, delay: float, action: Callable[[], None]) -> _Alarm:
        if self._owner != os.getpid():
            with _STARTING:  # threads arming the first alarm at once start one keeper
                if self._owner != os.getpid():
                    self._start()
        alarm = _Alarm(time.monotonic() + delay, action)
        with self._changed:
            heapq.heappush(self._due, alarm)
            if self._due[0] is alarm:
                self._changed.notify()
        return alarm

    def clear(self, alarm: _Alarm) -> None:
        alarm.cleared = True

    def _keep(self) -> None:
        due, changed = self._due, self._changed
        while True:
            with changed:
                while due and due[0].cleared:
                    heapq.heappop(due)
                if not due:
                    changed.wait()
                    continue
                wait = due[0].due - time.monotonic()
                if wait > 0:
                    changed.wait(wait)
                    continue
                alarm = heapq.heappop(due)
            threading.Thread(target=alarm.action, daemon=True).start()
