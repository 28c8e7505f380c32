"""A stop asked from outside the work: Ctrl+C or SIGTERM, turned into a call by a front end,
or the app's stop.

Verify, its mutants and the rewrites' gate run statements and child processes that may each
take up to a deadline; a stop must not wait for them, and nothing may start after it.
`Stop.set()` ends what is in flight (while a statement or a child process runs, it registers
how to end it: `ending`), and from then on `check()` raises `Stopped` before anything new
starts, so the work unwinds through its `finally` blocks, which drop its databases and roles
and remove the embedded server. `abandon()` is for a second stop that will not wait even for
that: what registered with `abandoning` (the embedded server) is stopped and removed at once.

It imports nothing of the verify extra: a front end makes one whether or not it is installed.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Stopped(Exception):
    """The work was stopped (`Stop.set`); whatever it made is removed on the way out."""

    def __init__(self) -> None:
        super().__init__("stopped before it finished")


class Stop:
    def __init__(self) -> None:
        self._set = threading.Event()
        self._lock = threading.Lock()
        self._keys = itertools.count()
        self._ending: dict[int, Callable[[], None]] = {}
        self._abandoning: dict[int, Callable[[], None]] = {}

    def is_set(self) -> bool:
        return self._set.is_set()

    def check(self) -> None:
        """Raise `Stopped` once a stop was asked."""
        if self._set.is_set():
            raise Stopped

    def set(self) -> None:
        """Stop: what is in flight is ended (each in a thread of its own, so a slow cancel
        never holds up the caller, a signal handler or the app's event loop)."""
        with self._lock:
            if self._set.is_set():
                return
            self._set.set()
            actions = list(self._ending.values())
        for action in actions:
            threading.Thread(target=_quietly, args=(action,), daemon=True).start()

    def abandon(self) -> None:
        """Stop, and remove at once what must not outlive the process (it is about to end)."""
        self.set()
        with self._lock:
            actions = list(self._abandoning.values())
        for action in actions:
            _quietly(action)

    @contextmanager
    def ending(self, action: Callable[[], None]) -> Iterator[None]:
        """While the block runs, a stop calls `action` (cancel a statement, kill a process).
        Raises `Stopped` at once when the stop came first."""
        with self._registered(self._ending, action):
            self.check()
            yield

    @contextmanager
    def abandoning(self, action: Callable[[], None]) -> Iterator[None]:
        """While the block runs, `abandon()` calls `action` (stop and remove a server)."""
        with self._registered(self._abandoning, action):
            yield

    @contextmanager
    def _registered(
        self, table: dict[int, Callable[[], None]], action: Callable[[], None]
    ) -> Iterator[None]:
        with self._lock:
            key = next(self._keys)
            table[key] = action
        try:
            yield
        finally:
            with self._lock:
                table.pop(key, None)


def _quietly(action: Callable[[], None]) -> None:
    try:
        action()
    except Exception:  # a stop is best effort: the process is on its way out
        pass
