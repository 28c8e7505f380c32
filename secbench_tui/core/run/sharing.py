"""A run shared by workers (`--worker`): its queue, each worker's heartbeat, the shared rate.

Any number of processes, on any number of machines, run the same command with `--worker`
against one PostgreSQL store. Each plans the same run (the same fingerprint); the first to
take the run's lock creates it, records the answers already paid for and puts the rest on
the queue (`core.store.queue`); every one then claims cases a few at a time (`SharedTodo`),
asks them and stores each with its row of the queue marked done, so each is stored once. A
heartbeat (`Heartbeat`) renews the worker's leases; a worker killed renews nothing, and its
cases go to the others once its leases run out. Requests of one model wait their turn on
its shared rate (`SharedPace`), so N workers on one key send what one process would.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from secbench_tui.core.run.scheduling import Work
from secbench_tui.core.run.stopping import Stop
from secbench_tui.core.store.queue import Claimed, QueueState

LEASE = 60.0  # seconds a worker's claim on its cases lasts without a heartbeat


@dataclass(frozen=True)
class Sharing:
    """How this process shares its runs: as a worker whose leases last `lease` seconds,
    with the model's shared rate set to `rate` requests per second and the requests all its
    workers have in flight to `concurrency` (None: as they are)."""

    lease: float = LEASE
    rate: float | None = None
    concurrency: int | None = None

    @property
    def beat(self) -> float:
        """Seconds between heartbeats: three in each lease."""
        return self.lease / 3

    @property
    def poll(self) -> float:
        """Seconds between looks at a queue whose last cases other workers hold."""
        return min(1.0, self.lease / 4)


class QueueBook(Protocol):
    """What a worker needs of the store's queue (`core.store.queue.SharedQueue`)."""

    def shared_run_lock(self, fingerprint: str) -> contextlib.AbstractAsyncContextManager[None]: ...

    async def open_shared_run(self, fingerprint: str) -> int | None: ...

    async def share_run(
        self, run_id: int, lease_seconds: float, cases: Sequence[tuple[int, str, int]]
    ) -> None: ...

    async def enlist(self, run_id: int) -> int: ...

    async def claim(self, run_id: int, worker_id: int, count: int) -> list[Claimed]: ...

    async def heartbeat(self, run_id: int, worker_id: int) -> None: ...

    async def release(self, worker_id: int) -> None: ...

    async def queue_state(self, run_id: int) -> QueueState: ...

    async def finish_shared(self, run_id: int) -> bool: ...


class RateBook(Protocol):
    """What the shared rate needs of the store (`core.store.pace.SharedRates`)."""

    async def set_rate(
        self, model: str, rate: float | None, concurrency: int | None = None
    ) -> None: ...

    async def model_share(self, model: str) -> int | None: ...

    async def reserve(self, model: str) -> tuple[float, float]: ...

    async def rate_limited(self, model: str, retry_after: float | None, sent_at: float) -> None: ...


Reuse = Callable[[list[Work]], Awaitable[list[Work]]]


class SharedTodo:
    """A shared run's cases for this worker: claimed from the queue `batch` at a time. The
    answers on record to what it claims are stored at once by `reuse`, which gives back the
    cases still to ask. Empty once the queue holds nothing this worker could claim now or
    later: every case stored, or the run ended (`ended` says how)."""

    def __init__(
        self,
        store: QueueBook,
        run_id: int,
        worker_id: int,
        work: Sequence[Work],
        *,
        batch: int,
        stop: Stop,
        poll: float,
        reuse: Reuse,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.worker_id = worker_id
        self.work = {(w.index, w.repeat): w for w in work}
        self.batch = max(1, batch)
        self.stop = stop
        self.poll = poll
        self.reuse = reuse
        self.ended: str | None = None  # the run's status, when it ended elsewhere
        self._held: deque[Work] = deque()
        self._over = False
        self._turn = asyncio.Lock()  # one claim at a time

    def __bool__(self) -> bool:
        return bool(self._held) or not self._over

    async def take(self) -> Work | None:
        async with self._turn:
            while not self._held:
                if self._over or self.stop.asked:
                    return None
                claimed = await self.store.claim(self.run_id, self.worker_id, self.batch)
                if claimed:
                    found = [
                        replace(self.work[(c.case_index, c.repeat)], seq=c.seq)
                        for c in claimed
                        if (c.case_index, c.repeat) in self.work
                    ]
                    self._held.extend(await self.reuse(found))
                    continue
                state = await self.store.queue_state(self.run_id)
                if state.status != "running" or state.finished:
                    self._over = True
                    if state.status not in ("running", "completed"):
                        self.ended = state.status
                    return None
                await self.stop.pause(self.poll)  # the last cases are other workers'
            return self._held.popleft()


class Heartbeat:
    """Renews a worker's leases every `every` seconds while it runs, and takes its share
    of the concurrency its model's workers have together (`share`), as workers come and go."""

    def __init__(
        self,
        store: QueueBook,
        run_id: int,
        worker_id: int,
        every: float,
        share: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.worker_id = worker_id
        self.every = every
        self.share = share
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._beat(), name="heartbeat")

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            with contextlib.suppress(Exception):  # a missed beat: the next one renews
                await self.store.heartbeat(self.run_id, self.worker_id)
                if self.share is not None:
                    await self.share()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class SharedPace:
    """Each request of one model waits its turn on the model's shared rate."""

    def __init__(self, store: RateBook, model: str) -> None:
        self.store = store
        self.model = model

    async def turn(self, stop: Stop) -> float:
        """Wait for the next free time of the model's rate; that time (the database's
        clock), which a rate limit to this request is then told by."""
        wait, at = await self.store.reserve(self.model)
        if wait > 0:
            await stop.pause(wait)
        return at

    async def rate_limited(self, retry_after: float | None, sent_at: float) -> None:
        await self.store.rate_limited(self.model, retry_after, sent_at)
