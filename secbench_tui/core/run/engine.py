"""The evaluation engine: an async stream of events over one run.

The engine owns the order of work and nothing about display. It creates (or resumes) a run
in the store, reuses results already paid for, asks the provider for the rest with up to
`concurrency` requests in flight, commits every result the moment it arrives, and yields
`CaseFinished` for it once it is stored, carrying the case's `position` in the run: a slow or
retrying case holds nothing back, so progress follows what is stored.

A failing case is recorded as an error and the run goes on; only a run-level fault (bad key,
no credits, unknown model, an endpoint that cannot be reached, database unwritable) ends it
early, as `aborted`, with a message that says what to do. A stop lets the requests in flight
finish for a short grace, then cancels them; a case that got no answer is not recorded, so
`--resume` asks it.

Each job has its own module: what a run is (`spec`), its record in the store (`record`), the
answers already paid for (`reuse`), the cases handed out (`scheduling`) and each one asked
(`asking`), within the limits (`limits`) until a stop (`stopping`); with `--batch`, the cases
go through the model's batch API instead (`batch`). The engine sees the store through
`RunStore`, the methods those jobs use. A run shared by workers (`--worker`) takes its cases
from the queue in the database instead of its own list, and its requests wait their turn on
the model's shared rate (`sharing`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Protocol

from secbench_tui.core.models import Case, Evaluation, RunStatus
from secbench_tui.core.results.summary import RunSummary
from secbench_tui.core.run.asking import Asker
from secbench_tui.core.run.batch.runner import BatchBook, Batching, BatchRun
from secbench_tui.core.run.events import Event, RunFinished, RunStarted
from secbench_tui.core.run.limits import AdaptiveLimit, Budget
from secbench_tui.core.run.providers.base import Provider, RunAborted
from secbench_tui.core.run.record import (
    KeptBefore,
    RunBook,
    kept_before,
    open_run,
    run_summary,
)
from secbench_tui.core.run.reuse import AnswerBook, on_record, reused_evaluation
from secbench_tui.core.run.scheduling import Schedule, Work
from secbench_tui.core.run.sharing import (
    Heartbeat,
    QueueBook,
    RateBook,
    SharedPace,
    SharedTodo,
    Sharing,
)
from secbench_tui.core.run.spec import RunSpec
from secbench_tui.core.run.stopping import STOP_GRACE, Stop

__all__ = ["STOP_GRACE", "Engine", "RunSpec", "RunStore"]


class RunStore(RunBook, AnswerBook, BatchBook, QueueBook, RateBook, Protocol):
    """What a run needs of the store: its record, the answers on record, its writes, the
    batches it sends (`--batch`), and a shared run's queue and rate (`--worker`)."""

    async def remember_requests(self, cases: Sequence[Case]) -> dict[str, str]: ...

    async def remember_texts(self, cases: Sequence[Case]) -> None: ...

    async def claim_imported(
        self, run_ids: Sequence[int], suite_kind: str, suite_path: str
    ) -> None: ...

    async def record(
        self,
        evaluation: Evaluation,
        request_hash: str,
        reused_from: int | None = None,
        messages: str | None = None,
    ) -> int: ...

    async def record_claimed(
        self,
        evaluation: Evaluation,
        request_hash: str,
        seq: int,
        reused_from: int | None = None,
        messages: str | None = None,
    ) -> int | None: ...


class Engine:
    """One run. Iterate `events()` once; call `stop()` to finish in-flight cases and end."""

    def __init__(
        self,
        spec: RunSpec,
        provider: Provider,
        store: RunStore,
        limit: AdaptiveLimit | None = None,
        stop_grace: float = STOP_GRACE,
        rank: int = 0,
        batching: Batching | None = None,
        sharing: Sharing | None = None,
        pace: SharedPace | None = None,
    ) -> None:
        self.spec = spec
        self.sharing = sharing  # a worker of a shared run (`--worker`), or None
        self._claims: dict[int, int] = {}  # a shared run's cases held: seq by work id
        self.rank = rank  # its turn among the runs sharing `limit` (AdaptiveLimit.enroll)
        self.provider = provider
        self.store = store
        self.run_id: int | None = None
        # one model's runs share its limit: the rate limit belongs to the model, not the run
        self.limit = limit if limit is not None else AdaptiveLimit(spec.concurrency)
        self._stop = Stop(stop_grace)
        self._budget = Budget(spec.max_cost)
        self._asker = Asker(
            provider,
            self.limit,
            self._stop,
            self._report,
            concurrency=spec.concurrency,
            vdb_scoring=spec.vdb_scoring,
            pace=pace,
        )
        self._schedule = Schedule(
            self.limit,
            self._stop,
            ask=self._asker.ask,
            record=self._record,
            first_request=self._first_request,
            repeats=spec.repeats,
            rank=rank,
        )
        # --batch: the cases go through the model's batch API instead (`core.run.batch`)
        self._batches = (
            None
            if batching is None
            else BatchRun(
                batching,
                store,
                self._stop,
                record=self._record,
                first_request=self._first_request,
                vdb_scoring=spec.vdb_scoring,
                repeats=spec.repeats,
            )
        )
        self._resumed = False
        self._first_sent: float | None = None  # perf_counter when the first case was started
        self._messages: dict[str, str] = {}  # what each result's row names its messages by
        self._summary = True  # compute the run's figures at its end (`stop(summary=False)`)

    def stop(self, message: str | None = None, grace: bool = True, summary: bool = True) -> None:
        """Start no new case; requests in flight get `stop_grace` seconds to finish (for ever
        with `grace=False`), then are cancelled. Every case that finished is recorded.
        `summary=False` (nobody will read it: the app is quitting) ends the run without
        computing its figures: its `RunFinished` carries who ran it and its time only."""
        self._stop.ask(message, grace)
        self._summary = self._summary and summary

    @property
    def stopping(self) -> bool:
        return self._stop.asked

    async def events(self) -> AsyncIterator[Event]:
        if self.sharing is not None:
            async for event in self._shared_events(self.sharing):
                yield event
            return
        started = time.perf_counter()
        run_id, resumed = await open_run(self.spec, self.store)  # no run to record a fault on
        self.run_id = run_id
        self._resumed = resumed
        status, message = RunStatus.COMPLETED, None
        pending: list[Work] = []
        try:
            async for event in self._run(run_id, resumed, pending):
                yield event
        except RunAborted as exc:
            status, message = RunStatus.ABORTED, str(exc)
        except Exception as exc:  # a run-level fault: the database, most likely
            status, message = RunStatus.ABORTED, f"{type(exc).__name__}: {exc}"
        if status is RunStatus.COMPLETED and self.stopping:
            answered = self._schedule.answered if self._batches is None else self._batches.answered
            if answered < len(pending):
                status, message = RunStatus.STOPPED, self._stop.message
        # a run's time counts from its first request (a queued run of a matrix waits first)
        wall = time.perf_counter() - (self._first_sent or started)
        try:  # its end is recorded first: `finished_at` is when its last case was stored
            await self.store.finish_run(run_id, status, message)
        except Exception as exc:
            status, message = RunStatus.ABORTED, f"could not record the run's end: {exc}"
        summary = await self._closing_summary(run_id, wall)
        yield RunFinished(run_id=run_id, status=status, message=message, summary=summary)

    async def _closing_summary(self, run_id: int, wall: float) -> RunSummary:
        """The ended run's figures, or (`stop(summary=False)`) who ran it and its time only."""
        if self._summary:
            return await run_summary(self.spec, self.store, run_id, wall)
        return RunSummary(
            run_id=run_id, model=self.spec.model, prompt=self.spec.prompt_name, wall_seconds=wall
        )

    async def _shared_events(self, sharing: Sharing) -> AsyncIterator[Event]:
        """This process as one worker of the shared run (see `sharing`): the run joined
        (or made, and its cases queued), cases claimed and asked until the queue is empty.
        The run ends completed once every case is stored, by whichever worker stores the
        last; a worker stopped leaves the run to the others, its cases back on the queue."""
        started = time.perf_counter()
        spec = self.spec
        run_id, work, reused, worker_id = await self._join(sharing)
        self.run_id = run_id
        todo = SharedTodo(
            self.store,
            run_id,
            worker_id,
            work,
            batch=spec.concurrency,
            stop=self._stop,
            poll=sharing.poll,
            reuse=self._reuse_claimed,
        )
        await self._take_share()
        heartbeat = Heartbeat(self.store, run_id, worker_id, sharing.beat, self._take_share)
        heartbeat.start()
        status, message = RunStatus.COMPLETED, None
        try:
            queue = await self.store.queue_state(run_id)
            total = len(spec.cases) * spec.repeats
            yield RunStarted(
                run_id=run_id,
                model=spec.model,
                total=total,
                pending=queue.ready + queue.leased,
                reused=reused,
                resumed=False,
                concurrency=spec.concurrency,
                skipped=spec.skipped,
                prompt=spec.prompt_name,
            )
            async for event in self._schedule.events(run_id, todo, queue.done, total):
                yield event
        except RunAborted as exc:
            status, message = RunStatus.ABORTED, str(exc)
        except Exception as exc:  # a run-level fault: the database, most likely
            status, message = RunStatus.ABORTED, f"{type(exc).__name__}: {exc}"
        finally:
            await heartbeat.stop()
            with contextlib.suppress(Exception):  # its cases go back on the queue
                await self.store.release(worker_id)
        if status is RunStatus.COMPLETED and todo.ended is not None:
            status = RunStatus.STOPPED
            message = f"run {run_id} was ended by another worker ({todo.ended})"
        elif status is RunStatus.COMPLETED and self.stopping:
            status, message = RunStatus.STOPPED, self._stop.message
        wall = time.perf_counter() - (self._first_sent or started)
        try:  # its end is recorded first, as a run of one process's is
            if status is RunStatus.ABORTED:  # the others would meet the same fault
                await self.store.finish_run(run_id, status, message)
            elif status is RunStatus.COMPLETED:
                await self.store.finish_shared(run_id)
        except Exception as exc:
            status, message = RunStatus.ABORTED, f"could not record the run's end: {exc}"
        summary = await self._closing_summary(run_id, wall)
        yield RunFinished(run_id=run_id, status=status, message=message, summary=summary)

    async def _join(self, sharing: Sharing) -> tuple[int, list[Work], int, int]:
        """The shared run of this spec, joined, or made with its cases queued (the answers
        on record stored first): its id, this run's work, the answers reused, this worker."""
        spec, store = self.spec, self.store
        work = [
            Work(0, index, case, repeat, spec.request_hash(case))
            for index, case in enumerate(spec.cases)
            for repeat in range(spec.repeats)
        ]
        self._messages = await store.remember_requests(list(spec.cases))
        reused = 0
        await store.set_rate(spec.model, sharing.rate, sharing.concurrency)
        async with store.shared_run_lock(spec.fingerprint):
            run_id = await store.open_shared_run(spec.fingerprint)
            if run_id is None:
                run_id = await _create_run(spec, store)
                answers = await on_record(spec, self.provider, store, work)
                queued: list[tuple[int, str, int]] = []
                for item in work:
                    row = answers.answer(item)
                    if row is None:
                        queued.append((item.index, item.case.case_id, item.repeat))
                        continue
                    evaluation = reused_evaluation(run_id, item, row, spec.vdb_scoring)
                    await store.record(
                        evaluation, item.request_hash, row["id"], self._messages_of(item)
                    )
                    reused += 1
                await store.share_run(run_id, sharing.lease, queued)
            worker_id = await store.enlist(run_id)
        await store.remember_texts(spec.cases)
        return run_id, work, reused, worker_id

    async def _take_share(self) -> None:
        """This worker's share of the model's concurrency (`--shared-concurrency`), never
        more than its own `--concurrency`."""
        share = await self.store.model_share(self.spec.model)
        if share is not None:
            await self.limit.resize(min(share, self.spec.concurrency))

    async def _reuse_claimed(self, claimed: list[Work]) -> list[Work]:
        """Cases claimed whose answer is on record by now (another run asked the same since
        the queue was filled): stored as reused; the rest, to ask."""
        if self.spec.force or not claimed or self.run_id is None:
            return claimed
        answers = await on_record(self.spec, self.provider, self.store, claimed)
        left = []
        for item in claimed:
            row = answers.answer(item)
            if row is None:
                left.append(item)
                continue
            evaluation = reused_evaluation(self.run_id, item, row, self.spec.vdb_scoring)
            await self.store.record_claimed(
                evaluation, item.request_hash, item.seq, row["id"], self._messages_of(item)
            )
        return left

    async def _run(self, run_id: int, resumed: bool, pending: list[Work]) -> AsyncIterator[Event]:
        """Reuse what was paid for, then ask the rest; fills `pending` with what is asked."""
        spec = self.spec
        before = KeptBefore()
        if resumed:
            before = await kept_before(spec, self.store, run_id)
            self._spend(before.spent)  # the budget covers the whole run
        work = [
            Work(0, index, case, repeat, request)
            for index, case in enumerate(spec.cases)
            for request in (spec.request_hash(case),)
            for repeat in range(spec.repeats)
            if (case.case_id, repeat) not in before.done
        ]
        answers = await on_record(spec, self.provider, self.store, work)
        # every message this run sends (or reuses the answer to), written in one call
        self._messages = await self.store.remember_requests(
            list({item.case.case_id: item.case for item in work}.values())
        )
        reused: list[Evaluation] = []
        for item in work:
            row = answers.answer(item)
            if row is not None:
                evaluation = reused_evaluation(run_id, item, row, spec.vdb_scoring)
                await self.store.record(
                    evaluation, item.request_hash, row["id"], self._messages_of(item)
                )
                reused.append(evaluation)
            else:
                pending.append(replace(item, seq=len(pending)))
        await self.store.claim_imported(answers.imported_runs(), spec.suite_kind, spec.suite_path)
        await self.store.remember_texts([item.case for item in pending])
        total = len(spec.cases) * spec.repeats
        done = total - len(pending) - len(reused)
        yield RunStarted(
            run_id=run_id,
            model=spec.model,
            total=total,
            pending=len(pending),
            reused=len(reused),
            resumed=resumed,
            concurrency=spec.concurrency,
            skipped=spec.skipped,
            earlier=before.earlier,
            prompt=spec.prompt_name,
        )
        for evaluation in reused:
            done += 1
            yield self._schedule.finished(run_id, evaluation, done, total)
        asked = self._schedule if self._batches is None else self._batches
        async for event in asked.events(run_id, pending, done, total):
            yield event

    def _messages_of(self, work: Work) -> str | None:
        """What the result's row names its messages by (`remember_requests`)."""
        return self._messages.get(work.case.case_id)

    def _report(self, event: Event) -> None:
        """A retry, into the run's stream (the asker is made before the schedule)."""
        self._schedule.report(event)

    def _spend(self, cost: float | None) -> None:
        self._budget.add(cost)
        reached = self._budget.reached()
        if reached is not None:  # what is in flight is paid for: let it come back
            self.stop(reached, grace=False)

    async def _first_request(self) -> None:
        """The run starts now: its first case has a slot. A resumed run keeps its start."""
        self._first_sent = time.perf_counter()
        if not self._resumed and self.run_id is not None:
            await self.store.mark_started(self.run_id)

    async def _record(self, work: Work, evaluation: Evaluation) -> None:
        """A case's answer, counted against the budget, then committed (a shared run's with
        its place on the queue marked done)."""
        if evaluation.completion.cost:
            self._spend(evaluation.completion.cost)
        if self.sharing is not None:
            await self.store.record_claimed(
                evaluation, work.request_hash, work.seq, messages=self._messages_of(work)
            )
            return
        await self.store.record(evaluation, work.request_hash, messages=self._messages_of(work))


async def _create_run(spec: RunSpec, store: RunStore) -> int:
    """A new run of `spec` (a shared run is never one reopened: it carries on by itself)."""
    run_id, _ = await open_run(replace(spec, resume=False, retry_errors=False), store)
    return run_id
