"""How much a run may ask at once, and what it may spend.

`AdaptiveLimit` is the concurrency a model's runs share, halved by a rate limit and restored
when the provider's wait is over; `Budget` is `--max-cost`, counted over a run's own requests.
The provider's failures are classified elsewhere (`providers.retry`); this is what the engine
does about them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class AdaptiveLimit:
    """At most `limit` cases hold a slot; a rate limit halves it until the provider's wait is over.

    Standalone so several engines asking the same model can share one (`Engine(limit=...)`).
    A case coming back from a retry wait (`acquire(priority=True)`) goes before new cases.
    Runs sharing it take turns in order (`enroll`): a run's new cases wait while a run of a
    lower rank still has cases to hand out, so a model's runs go one after another and a run
    that is waiting has truly not started (a retry still goes first, whatever its run).
    After a rate limit the limit stays down as long as the provider's Retry-After asked (or
    `cooldown` seconds when it did not say), then the next success restores it; above that,
    it creeps back up by one per `limit` successes.
    """

    def __init__(self, maximum: int, cooldown: float = 20.0) -> None:
        self.maximum = max(1, maximum)
        self.limit = self.maximum
        self.active = 0
        self.cooldown = cooldown
        self._calm_after = 0.0
        self._lowered_at = float("-inf")
        self._restore_to = self.maximum  # the limit before the rate limits still in force
        self._successes = 0
        self._priority = 0
        self._handing_out: set[int] = set()  # ranks of runs with cases still to hand out
        self._cond = asyncio.Condition()

    async def resize(self, maximum: int) -> None:
        """A new most cases at once: a worker's share of the concurrency its model's workers
        have together (`--shared-concurrency`), as workers join and leave."""
        maximum = max(1, maximum)
        if maximum == self.maximum:
            return
        async with self._cond:
            lowered = self.limit < self.maximum
            self.maximum = maximum
            self._restore_to = min(self._restore_to, maximum)
            self.limit = min(self.limit, maximum) if lowered else maximum
            self._cond.notify_all()

    def enroll(self, rank: int) -> None:
        """A run of this rank will hand out cases: runs of higher ranks wait for it."""
        self._handing_out.add(rank)

    async def withdraw(self, rank: int) -> None:
        """The run of this rank has handed out every case (or ended): the next may start."""
        if rank in self._handing_out:
            async with self._cond:
                self._handing_out.discard(rank)
                self._cond.notify_all()

    def _turn(self, rank: int) -> bool:
        return not any(other < rank for other in self._handing_out)

    async def acquire(
        self, priority: bool = False, rank: int = 0, wanted: Callable[[], bool] | None = None
    ) -> bool:
        """Wait for a slot and take it (True); with `wanted`, give up without one (False) as
        soon as it says False when the limit is next looked at (a `withdraw` or a `release`
        looks), so a run that has handed out its last case meanwhile does not wait for a
        slot it would not use, and ends when its last case does."""

        def room() -> bool:
            return self.active < self.limit and (
                priority or (not self._priority and self._turn(rank))
            )

        async with self._cond:
            self._priority += priority
            try:
                await self._cond.wait_for(lambda: room() or (wanted is not None and not wanted()))
            finally:
                self._priority -= priority
            if not room():
                return False
            self.active += 1
            if priority:
                self._cond.notify_all()  # new cases may go now, if room is left
            return True

    async def release(self, success: bool) -> None:
        async with self._cond:
            self.active -= 1
            self._count(success)
            self._cond.notify_all()

    async def pass_on(self, success: bool, rank: int = 0) -> bool:
        """A case holding a slot has ended: True when its slot may go straight to its run's
        next case (nothing that goes first is waiting, and the limit still has room for it),
        which wakes nobody; otherwise the slot is released as by `release`."""
        async with self._cond:
            if self._count(success):
                self._cond.notify_all()  # the limit rose: a waiting case may go as well
            if self.active <= self.limit and not self._priority and self._turn(rank):
                return True
            self.active -= 1
            self._cond.notify_all()
            return False

    def _count(self, success: bool) -> bool:
        """Count a case's end; True when that raised the limit."""
        if not success:
            return False
        self._successes += 1
        if time.monotonic() >= self._calm_after:
            if self.limit < self._restore_to:
                self.limit = self._restore_to
                self._successes = 0
                return True
            if self.limit < self.maximum and self._successes >= self.limit:
                self.limit += 1
                self._successes = 0
                return True
        return False

    def rate_limited(self, retry_after: float | None = None, sent_at: float | None = None) -> None:
        """Halve the limit, once per wave: a 429 to a request sent before the last cut (under
        the old limit) says nothing new."""
        now = time.monotonic()
        if sent_at is not None and sent_at < self._lowered_at:
            return
        if now >= self._calm_after:  # a new episode: remember where it started
            self._restore_to = self.limit
        self.limit = max(1, self.limit // 2)
        self._successes = 0
        self._lowered_at = now
        wait = self.cooldown if retry_after is None else retry_after
        self._calm_after = max(self._calm_after, now + wait)


class Budget:
    """What a run's own requests cost (a resumed run's earlier ones included) against
    `--max-cost`; None: no limit."""

    def __init__(self, max_cost: float | None) -> None:
        self.max_cost = max_cost
        self.spent = 0.0

    def add(self, cost: float | None) -> None:
        self.spent += cost or 0.0

    def reached(self) -> str | None:
        """Why the run must stop, once the budget is spent; None until then."""
        if self.max_cost is not None and self.spent >= self.max_cost:
            return f"budget reached: cost {self.spent:.4f} >= --max-cost {self.max_cost}"
        return None
