"""A run's cases asked through a batch API (`--batch`): sent, polled, read, stored.

The engine hands over the cases it would ask live (`Work`, after reuse). Each goes in a batch
as the exact body a live run sends for it (`payload`), tagged with an id made from its request
hash and repeat (`split.custom_id`). First the batches already sent for any of them are taken
up: an open batch in the store (accepted, its results not all read) that holds the same
request, whichever run sent it, is polled again, never sent again. The rest are cut into new
batches within the provider's limits, each recorded with its mapping, then sent, its provider
id committed as soon as the provider answers: all before the first poll.

Batches are polled on a backing-off timer (`polling.PollTimer`); a poll that fails is tried
again later, for as long as the run goes on. When a batch ends, its results are read one by
one and each is read as a live reply is (`read_reply`: the same verdict, tokens, raw reply
and reported cost), scored and committed as it is read. A request the batch has no answer for
(it failed, expired or was cancelled) is recorded as an error, which `--retry-errors` asks
again. A stop ends the waiting at once: nothing is lost, and `--resume` (or the same command
again) polls the same batches.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from secbench_tui.core.models import Case, ChatRequest, Completion, Evaluation, JSONObject
from secbench_tui.core.results.grading import score_completion
from secbench_tui.core.run.batch.polling import PollTimer
from secbench_tui.core.run.batch.protocol import (
    BatchLost,
    BatchProtocol,
    BatchRefused,
    Line,
    Polled,
    PollFailed,
    Result,
)
from secbench_tui.core.run.batch.split import custom_id, split
from secbench_tui.core.run.events import BatchProgress, BatchView, CaseFinished, Event
from secbench_tui.core.run.providers.base import RunAborted
from secbench_tui.core.run.providers.retry import Failure, given_up, one_line
from secbench_tui.core.run.scheduling import Work
from secbench_tui.core.run.stopping import Stop
from secbench_tui.core.store.batches import BatchedRequest, BatchRecord
from secbench_tui.core.store.values import now_iso
from secbench_tui.core.untrusted import redact_url

# a submission the server answered with 429 or a 5xx is sent again, this often, after
# SUBMIT_BACKOFF seconds times the attempt (or its Retry-After, up to SUBMIT_WAIT_MAX)
SUBMIT_TRIES = 4
SUBMIT_BACKOFF = 2.0
SUBMIT_WAIT_MAX = 120.0
LIVE_HINT = (
    "the model may have no batch API there, or its batch API may reject what was sent "
    "(structured outputs: try --response-format json_object); or run it live, without --batch"
)


class ReadsReplies(Protocol):
    """The live provider a batch stands in for: the bodies it sends, and how it reads a reply."""

    def payload(self, case: Case) -> ChatRequest: ...

    def read_reply(self, data: JSONObject, raw: str) -> Completion: ...


class BatchBook(Protocol):
    """What a batch run needs of the store (`core.store.batches`)."""

    async def add_batch(
        self,
        *,
        run_id: int,
        protocol: str,
        endpoint: str,
        model: str,
        requests: Sequence[BatchedRequest],
    ) -> int: ...

    async def batch_submitted(
        self, batch_id: int, provider_id: str, status: str, details: dict[str, str]
    ) -> None: ...

    async def batch_polled(
        self,
        batch_id: int,
        *,
        status: str,
        counts: dict[str, int],
        message: str | None,
        details: dict[str, str],
        ended: bool,
    ) -> None: ...

    async def batch_read(self, batch_id: int) -> None: ...

    async def batch_unanswered(self, batch_id: int) -> int: ...

    async def batch_closed(self, batch_id: int, status: str, message: str) -> None: ...

    async def open_batches(
        self, protocol: str, keys: Sequence[tuple[str, int]]
    ) -> list[tuple[BatchRecord, list[BatchedRequest]]]: ...


@dataclass
class Batching:
    """How one model's runs use its batch API."""

    protocol: BatchProtocol
    provider: ReadsReplies
    model: str
    endpoint: str  # the API root; recorded without credentials
    timer: PollTimer = field(default_factory=PollTimer)
    clock: Callable[[], float] = time.monotonic  # for the polls
    wall: Callable[[], float] = time.time  # for how long ago a batch was sent
    # waits between polls: None waits on the run's stop (which ends a wait at once)
    sleep: Callable[[float], Awaitable[None]] | None = None


@dataclass
class _Tracked:
    """A batch this run waits on: the requests it waits for there, and its polling."""

    batch_id: int
    provider_id: str
    work: dict[str, Work]  # by request id: what is not stored yet
    requests: int
    sent_at: float  # wall clock
    status: str
    due: float = 0.0  # when to poll next (the run's clock)
    polls: int = 0
    completed: int = 0
    failed: int = 0
    note: str | None = None
    read: bool = False


Record = Callable[[Work, Evaluation], Awaitable[None]]


def _epoch(iso: str, default: float) -> float:
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return default


class BatchRun:
    """One run's cases through its model's batch API; `events` streams what happens."""

    def __init__(
        self,
        batching: Batching,
        store: BatchBook,
        stop: Stop,
        *,
        record: Record,
        first_request: Callable[[], Awaitable[None]],
        vdb_scoring: str,
        repeats: int = 1,
    ) -> None:
        self.batching = batching
        self.store = store
        self.stop = stop
        self._record, self._first_request = record, first_request
        self.vdb_scoring = vdb_scoring
        self.repeats = repeats
        self.answered = 0  # cases recorded from a batch's results (or its failure)
        self._done = 0
        self._total = 0

    async def events(
        self, run_id: int, pending: list[Work], done: int, total: int
    ) -> AsyncIterator[Event]:
        self._done, self._total = done, total
        if not pending:
            return
        await self._first_request()
        by_id = {custom_id(w.request_hash, w.repeat): w for w in pending}
        tracked = await self._taken_up(by_id)
        claimed = {cid for batch in tracked for cid in batch.work}
        lines = [
            Line(cid, dict(self.batching.provider.payload(work.case)))
            for cid, work in by_id.items()
            if cid not in claimed
        ]
        protocol = self.batching.protocol
        batches, oversize = split(lines, protocol.limits, protocol.line_bytes)
        try:
            for batch in batches:
                if self.stop.asked:
                    break
                tracked.append(await self._send(run_id, batch, by_id))
                yield self._progress(run_id, tracked)
            for line in oversize:
                message = (
                    f"the request is larger than a batch may be ({protocol.limits.bytes:,} "
                    f"bytes at {protocol.name}); run it live, without --batch"
                )
                yield await self._store(run_id, by_id[line.custom_id], Completion(error=message))
            async for event in self._wait(run_id, tracked):
                yield event
        finally:
            self.stop.end()

    async def _taken_up(self, by_id: dict[str, Work]) -> list[_Tracked]:
        """The open batches that already hold some of these requests (oldest first)."""
        keys = [(w.request_hash, w.repeat) for w in by_id.values()]
        found = await self.store.open_batches(self.batching.protocol.name, keys)
        tracked: list[_Tracked] = []
        claimed: set[str] = set()
        now = self.batching.wall()
        for record, requests in found:
            mine = {
                r.custom_id: by_id[r.custom_id]
                for r in requests
                if r.custom_id in by_id and r.custom_id not in claimed
            }
            if not mine or record.provider_id is None:
                continue
            claimed.update(mine)
            tracked.append(
                _Tracked(
                    record.id,
                    record.provider_id,
                    mine,
                    len(mine),
                    _epoch(record.submitted_at, now),
                    record.status,
                    due=self.batching.clock(),  # it may have ended meanwhile: poll at once
                    completed=record.counts.get("completed", 0),
                    failed=record.counts.get("failed", 0),
                )
            )
        return tracked

    async def _send(self, run_id: int, lines: list[Line], by_id: dict[str, Work]) -> _Tracked:
        """Record the batch and its mapping, send it, commit the provider's id."""
        b = self.batching
        requests = [
            BatchedRequest(
                line.custom_id,
                by_id[line.custom_id].request_hash,
                by_id[line.custom_id].repeat,
                by_id[line.custom_id].case.case_id,
                by_id[line.custom_id].index,
            )
            for line in lines
        ]
        batch_id = await self.store.add_batch(
            run_id=run_id,
            protocol=b.protocol.name,
            endpoint=redact_url(b.endpoint),
            model=b.model,
            requests=requests,
        )
        for attempt in range(1, SUBMIT_TRIES + 1):
            try:
                submitted = await b.protocol.submit(lines)
                break
            except BatchRefused as exc:
                await self.store.batch_closed(batch_id, "refused", str(exc))
                raise RunAborted(
                    f"{b.protocol.name}'s batch API would not take a batch of {b.model!r} "
                    f"({exc}); {LIVE_HINT}"
                ) from None
            except PollFailed as exc:
                if exc.maybe_accepted or attempt == SUBMIT_TRIES:
                    await self.store.batch_closed(batch_id, "unknown", str(exc))
                    raise RunAborted(self._unanswered(exc)) from None
                wait = exc.retry_after if exc.retry_after is not None else SUBMIT_BACKOFF * attempt
                await self._sleep(min(wait, SUBMIT_WAIT_MAX))
        await self.store.batch_submitted(
            batch_id, submitted.provider_id, submitted.status, submitted.details
        )
        return _Tracked(
            batch_id,
            submitted.provider_id,
            {line.custom_id: by_id[line.custom_id] for line in lines},
            len(lines),
            b.wall(),
            submitted.status,
            due=b.clock() + b.timer.wait(0),
        )

    async def _sleep(self, seconds: float) -> None:
        sleep = self.batching.sleep or self.stop.pause
        await sleep(seconds)

    def _unanswered(self, exc: PollFailed) -> str:
        if not exc.maybe_accepted:
            return f"could not send a batch ({exc}); the same command again sends it"
        return (
            f"a batch was sent and no answer came back ({exc}): the provider may have "
            "accepted it. Check its list of batches before running again: the same command "
            "sends these requests again (the batches sent before it are polled, not sent)"
        )

    async def _wait(self, run_id: int, tracked: list[_Tracked]) -> AsyncIterator[Event]:
        """Poll the open batches as their timers come due; read each one that has ended."""
        clock = self.batching.clock
        while not self.stop.asked:
            open_ = [batch for batch in tracked if not batch.read]
            if not open_:
                return
            now = clock()
            due = [batch for batch in open_ if batch.due <= now]
            if not due:
                await self._sleep(min(batch.due for batch in open_) - now)
                continue
            for batch in due:
                if self.stop.asked:
                    break
                async for event in self._poll(run_id, batch):
                    yield event
            yield self._progress(run_id, tracked)

    async def _poll(self, run_id: int, batch: _Tracked) -> AsyncIterator[Event]:
        b = self.batching
        try:
            polled = await b.protocol.poll(batch.provider_id)
        except PollFailed as exc:
            batch.polls += 1
            batch.note = str(exc)
            batch.due = b.clock() + b.timer.wait(batch.polls, exc.retry_after)
            return
        except BatchLost as exc:
            gone = f"the provider no longer has it: {exc}"
            async for event in self._lost(run_id, batch, gone, gone=True):
                yield event
            return
        batch.polls += 1
        batch.note = None
        batch.status = polled.status
        batch.completed, batch.failed = polled.counts.completed, polled.counts.failed
        await self.store.batch_polled(
            batch.batch_id,
            status=polled.status,
            counts=polled.counts.as_dict(),
            message=polled.message,
            details=polled.details,
            ended=polled.ended,
        )
        if not polled.ended:
            batch.due = b.clock() + b.timer.wait(batch.polls)
            return
        async for event in self._read(run_id, batch, polled):
            yield event

    async def _read(self, run_id: int, batch: _Tracked, polled: Polled) -> AsyncIterator[Event]:
        """An ended batch's results, each stored as it is read; then what got none."""
        b = self.batching
        try:
            async for result in b.protocol.results(batch.provider_id, polled):
                work = batch.work.pop(result.custom_id, None)
                if work is not None:  # another run's request, or one already stored: skip
                    yield await self._store(run_id, work, self._completion(result))
        except PollFailed as exc:  # read the rest later; what was stored stays stored
            batch.note = f"reading its results: {exc}"
            batch.due = b.clock() + b.timer.wait(batch.polls, exc.retry_after)
            return
        except BatchLost as exc:
            gone = f"its results are gone: {exc}"
            async for event in self._lost(run_id, batch, gone, gone=True):
                yield event
            return
        why = f"batch {batch.provider_id} ended {polled.status} with no result for this request"
        if polled.message:
            why += f" ({polled.message}; {LIVE_HINT})"
        async for event in self._lost(run_id, batch, why):
            yield event

    async def _lost(
        self, run_id: int, batch: _Tracked, why: str, gone: bool = False
    ) -> AsyncIterator[Event]:
        """The batch's requests still waiting get no answer from it: an error each, for
        `--retry-errors`. The batch is closed once every request it holds has its answer
        stored, by this run or another (a run may take a batch up for some of its requests
        only: it stays open for the runs that want the rest), or when the provider no longer
        has it (`gone`)."""
        for work in list(batch.work.values()):
            error = one_line(f"{why}; --retry-errors asks it again")
            yield await self._store(run_id, work, Completion(error=error))
        batch.work.clear()
        batch.read = True
        if gone or not await self.store.batch_unanswered(batch.batch_id):
            await self.store.batch_read(batch.batch_id)

    def _completion(self, result: Result) -> Completion:
        """A result read as a live reply would be (an error when there is none to read)."""
        if result.data is not None and result.status in (None, 200):
            try:
                return self.batching.provider.read_reply(result.data, json.dumps(result.data))
            except Failure as failure:
                return given_up(failure)
            except RunAborted as exc:  # a key or credit error inside a result is the case's
                return Completion(error=one_line(str(exc)), status=exc.status)
        message = result.error or f"HTTP {result.status} with no body"
        return Completion(error=one_line(f"in the batch: {message}"), status=result.status)

    async def _store(self, run_id: int, work: Work, completion: Completion) -> CaseFinished:
        evaluation = Evaluation(
            run_id=run_id,
            case=work.case,
            repeat=work.repeat,
            index=work.index,
            completion=completion,
            scored=score_completion(work.case, completion, self.vdb_scoring),
            timestamp=now_iso(),
        )
        await self._record(work, evaluation)
        self.answered += 1
        self._done += 1
        position = work.index * self.repeats + work.repeat
        return CaseFinished(run_id, evaluation, self._done, self._total, position)

    def _progress(self, run_id: int, tracked: list[_Tracked]) -> BatchProgress:
        now, wall = self.batching.clock(), self.batching.wall()
        return BatchProgress(
            run_id,
            tuple(
                BatchView(
                    batch_id=batch.batch_id,
                    provider_id=batch.provider_id,
                    status=batch.status,
                    requests=batch.requests,
                    completed=batch.completed,
                    failed=batch.failed,
                    elapsed=max(0.0, wall - batch.sent_at),
                    next_poll=None if batch.read else max(0.0, batch.due - now),
                    note=batch.note,
                    read=batch.read,
                )
                for batch in tracked
            ),
        )
