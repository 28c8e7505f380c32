"""Handing a run's cases out: as many at once as the concurrency limit lets, in order.

A case takes a slot of the limit its model's runs share (`AdaptiveLimit`), is asked, and its
result recorded; then the slot goes straight on to the run's next case, as a bare loop of
requests would. The run's events come out in one stream as they happen: each case's start in
the order the cases are handed out, each case's end (`CaseFinished`) once its row is
committed, so a slow or retrying case holds nothing back and progress follows what is stored.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from secbench_tui.core.models import Case, Evaluation, Outcome
from secbench_tui.core.run.events import CaseFinished, CaseStarted, Event
from secbench_tui.core.run.limits import AdaptiveLimit
from secbench_tui.core.run.stopping import Abandoned, Stop


@dataclass(frozen=True)
class Work:
    """One case to ask: its place in the run (`seq` among the cases asked, `index` in the
    suite, `repeat`) and the hash of its request."""

    seq: int
    index: int
    case: Case
    repeat: int
    request_hash: str


@dataclass(frozen=True)
class _Done:
    """A case's end, as the worker hands it to the stream; no evaluation when it was not asked."""

    seq: int
    evaluation: Evaluation | None


class _Dispatched:
    """Every case has been handed out (or a stop came): none will start after this."""


class Slot:
    """One case's hold on the concurrency limit, given back while it waits to retry."""

    def __init__(self, limit: AdaptiveLimit) -> None:
        self.limit = limit
        self.held = True

    async def give_back(self, success: bool = False) -> None:
        if self.held:
            self.held = False
            await self.limit.release(success)

    async def take(self) -> None:
        await self.limit.acquire(priority=True)
        self.held = True


class Todo(Protocol):
    """The cases a run has still to hand out: its own list (`Cases`), or a shared run's
    queue, claimed a few at a time (`core.run.sharing.SharedTodo`)."""

    def __bool__(self) -> bool: ...  # False once none is left to hand out

    async def take(self) -> Work | None: ...  # the next, or None when none is left


class Cases:
    """A run's own cases, handed out in order."""

    def __init__(self, work: Sequence[Work]) -> None:
        self._todo = deque(work)

    def __bool__(self) -> bool:
        return bool(self._todo)

    async def take(self) -> Work | None:
        return self._todo.popleft() if self._todo else None


Ask = Callable[[int, Work, Slot], Awaitable[Evaluation]]  # a case asked, with its slot
Record = Callable[[Work, Evaluation], Awaitable[None]]  # its result committed


class Schedule:
    """The cases of one run, handed out as slots free up; `events` streams what happens.

    `ask` gets a case's answer (or raises `Abandoned` when a stop dropped it unanswered),
    `record` commits it, `first_request` runs once, when the first case has its slot.
    """

    def __init__(
        self,
        limit: AdaptiveLimit,
        stop: Stop,
        *,
        ask: Ask,
        record: Record,
        first_request: Callable[[], Awaitable[None]],
        repeats: int = 1,
        rank: int = 0,
    ) -> None:
        self.limit = limit
        self.stop = stop
        self.rank = rank  # its turn among the runs sharing `limit` (AdaptiveLimit.enroll)
        self.repeats = repeats
        self._ask, self._record, self._first_request = ask, record, first_request
        self._queue: asyncio.Queue[Event | _Done | _Dispatched | BaseException] = asyncio.Queue()
        self._todo: Todo = Cases(())  # cases not handed out yet
        self._first_sent = False
        self._recording: set[asyncio.Task[None]] = set()  # results being written
        self.started = 0  # cases handed out
        self.answered = 0  # cases asked that came back, recorded

    def report(self, event: Event) -> None:
        """An event of a case under way (a retry), into the run's stream."""
        self._queue.put_nowait(event)

    async def events(
        self, run_id: int, pending: Sequence[Work] | Todo, done: int, total: int
    ) -> AsyncIterator[Event]:
        """Hand the cases out as slots free up; yield each CaseFinished as its case ends."""
        self._todo = Cases(pending) if isinstance(pending, Sequence) else pending
        cases: set[asyncio.Task[None]] = set()
        dispatcher = asyncio.create_task(self._dispatch(run_id, cases))
        dispatched = False
        ended = 0
        try:
            while not dispatched or ended < self.started:
                item = await self._queue.get()
                if isinstance(item, BaseException):
                    raise item
                if isinstance(item, _Dispatched):
                    dispatched = True
                elif isinstance(item, _Done):
                    ended += 1
                    if item.evaluation is not None:
                        done += 1
                        self.answered += 1
                        yield self.finished(run_id, item.evaluation, done, total)
                else:
                    yield item
        finally:
            self.stop.end()
            dispatcher.cancel()
            for task in list(cases):
                task.cancel()
            await asyncio.gather(dispatcher, *cases, return_exceptions=True)
            await self._writes_ended()  # every answer in: the summary is taken from the rows

    def finished(self, run_id: int, evaluation: Evaluation, done: int, total: int) -> CaseFinished:
        position = evaluation.index * self.repeats + evaluation.repeat
        return CaseFinished(run_id, evaluation, done, total, position)

    async def _next(self, run_id: int) -> Work | None:
        """The run's next case to ask, counted and announced as started (here, so that cases
        are announced in the order they are handed out, which the headless lines keep);
        None once every case has been handed out or a stop came. Handing out the last one
        lets the model's next run start (`AdaptiveLimit.withdraw`)."""
        if not self._todo or self.stop.asked:
            return None
        work = await self._todo.take()
        if work is None:
            return None
        self.started += 1
        self._queue.put_nowait(CaseStarted(run_id, work.case, work.index, work.repeat))
        if not self._todo:
            await self.limit.withdraw(self.rank)
        return work

    def _wanted(self) -> bool:
        """A new slot would be used: a case is left to hand out and no stop came."""
        return bool(self._todo) and not self.stop.asked

    async def _dispatch(self, run_id: int, cases: set[asyncio.Task[None]]) -> None:
        """Start a case whenever a slot is free and no case's own task went on to it
        (`_worker`). Cases waiting to retry hold no slot, so at most four times the
        concurrency are open at once, which bounds the tasks held in memory."""
        room = asyncio.Semaphore(4 * self.limit.maximum)
        try:
            while self._todo and not self.stop.asked:
                await room.acquire()
                if not await self.limit.acquire(rank=self.rank, wanted=self._wanted):
                    room.release()
                    break
                work = await self._next(run_id)
                if work is None:
                    await self.limit.release(False)
                    room.release()
                    break
                if not self._first_sent:
                    self._first_sent = True
                    await self._first_request()
                task = asyncio.create_task(self._worker(run_id, work, room))
                cases.add(task)
                task.add_done_callback(cases.discard)
        except BaseException as exc:  # noqa: B036 - handed to the consumer, which re-raises
            if not isinstance(exc, asyncio.CancelledError):
                self._queue.put_nowait(exc)
                return
            raise
        await self.limit.withdraw(self.rank)  # the next run of the model may start
        self._queue.put_nowait(_Dispatched())

    async def _worker(self, run_id: int, work: Work, room: asyncio.Semaphore) -> None:
        """Cases one after another on one slot: when a case ends and its slot may go straight
        on (`AdaptiveLimit.pass_on`), this task asks the run's next case itself. It ends when
        the slot must go elsewhere (a retry waiting for one, a lowered limit), was given back
        on the way, or no case is left."""
        slot = Slot(self.limit)
        try:
            while True:
                success = await self._case(run_id, work, slot)
                if not slot.held:
                    return
                if not await self.limit.pass_on(success, self.rank):
                    slot.held = False  # released by `pass_on`
                    return
                following = await self._next(run_id)
                if following is None:
                    return
                work = following
        finally:
            room.release()
            await slot.give_back()

    async def _case(self, run_id: int, work: Work, slot: Slot) -> bool:
        """One case from its slot to its record; puts exactly one `_Done` (or the fault).
        True when it got a usable answer. The slot stays held, unless a retry's wait gave it
        back or a fault ended the case (then the worker ends)."""
        try:
            try:
                evaluation = await self._ask(run_id, work, slot)
            except Abandoned:
                self._queue.put_nowait(_Done(work.seq, None))
                return False
            await asyncio.shield(self._recorded(work, evaluation))
            return evaluation.scored.outcome is not Outcome.ERROR
        except BaseException as exc:  # noqa: B036 - handed to the consumer, which re-raises
            if not isinstance(exc, asyncio.CancelledError):
                await self._writes_ended()  # the cases stored meanwhile are reported first
                self._queue.put_nowait(exc)
                await slot.give_back()
                return False
            raise

    def _recorded(self, work: Work, evaluation: Evaluation) -> asyncio.Task[None]:
        """The case's result committed, then the case reported (once it is stored), in a task
        of its own: a case cancelled meanwhile (the run ends) still keeps its answer, which
        was paid for, and the run's summary waits for it (`_writes_ended`)."""

        async def record() -> None:
            await self._record(work, evaluation)
            self._queue.put_nowait(_Done(work.seq, evaluation))

        task = asyncio.create_task(record())
        self._recording.add(task)
        task.add_done_callback(self._recording.discard)
        return task

    async def _writes_ended(self) -> None:
        """Wait until every result handed to `record` is written (or failed)."""
        while self._recording:
            await asyncio.wait(list(self._recording))
