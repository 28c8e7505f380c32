"""A run's stop: no new case starts, the requests in flight get a grace, then are cancelled.

A stop comes from the user, from a budget spent or from another run of the model that aborted.
What finished is recorded; a case whose request the grace cut short has no answer
(`Abandoned`), so nothing of it is kept and `--resume` asks it again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")

STOP_GRACE = 5.0  # seconds a stop lets requests in flight finish before cancelling them


class Abandoned(Exception):
    """A stop came while the case waited to retry, or its request outlived the stop's grace:
    it has no answer, so nothing is kept (and `--resume` asks it)."""


class Stop:
    """One run's stop, asked at most once; the requests it may cancel go through `request`."""

    def __init__(self, grace: float = STOP_GRACE) -> None:
        self.grace = grace
        self.message: str | None = None
        self._asked = asyncio.Event()
        self._halted = False  # the grace is over: requests in flight are cancelled
        self._requests: set[asyncio.Task[Any]] = set()  # case tasks awaiting a reply
        self._halting: set[asyncio.Task[Any]] = set()  # those `_halt` cancelled
        self._timer: asyncio.TimerHandle | None = None

    @property
    def asked(self) -> bool:
        return self._asked.is_set()

    def ask(self, message: str | None = None, grace: bool = True) -> None:
        """Start no new case; requests in flight get `grace` seconds to finish (for ever with
        `grace=False`), then are cancelled."""
        if not self._asked.is_set():
            self.message = message or "stopped by the user"
            self._asked.set()
        if grace and self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # not running yet: the run will not start a case
                return
            self._timer = loop.call_later(self.grace, self._halt)

    def end(self) -> None:
        """The run is over: a grace still counting has nothing left to cut short."""
        if self._timer is not None:
            self._timer.cancel()

    async def pause(self, seconds: float) -> None:
        """Wait `seconds`, or less if a stop comes meanwhile."""
        if seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._asked.wait(), seconds)

    def _halt(self) -> None:
        self._halted = True
        for task in list(self._requests):
            self._halting.add(task)
            task.cancel()

    async def request(self, ask: Awaitable[T]) -> T:
        """One request to the provider, cancelled (as `Abandoned`) when the grace ends.

        The request runs in its case's own task: `_halt` cancels the tasks waiting here, and
        a cancellation that came from `_halt` alone becomes `Abandoned`.
        """
        if self._halted:
            raise Abandoned
        task = asyncio.current_task()
        assert task is not None, "a request is always awaited inside a task"
        self._requests.add(task)
        try:
            return await ask
        except asyncio.CancelledError:
            if task in self._halting:
                self._halting.discard(task)
                if task.uncancel() == 0:  # nobody else asked this task to stop
                    raise Abandoned from None
            raise
        finally:
            self._requests.discard(task)
