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
`RunStore`, the methods those jobs use.
"""

from __future__ import annotations

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
from secbench_tui.core.run.spec import RunSpec
from secbench_tui.core.run.stopping import STOP_GRACE, Stop

__all__ = ["STOP_GRACE", "Engine", "RunSpec", "RunStore"]


class RunStore(RunBook, AnswerBook, BatchBook, Protocol):
    """What a run needs of the store: its record, the answers on record, its writes, and the
    batches it sends (`--batch`)."""

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
    ) -> None:
        self.spec = spec
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
        if self._summary:
            summary = await run_summary(self.spec, self.store, run_id, wall)
        else:
            summary = RunSummary(
                run_id=run_id,
                model=self.spec.model,
                prompt=self.spec.prompt_name,
                wall_seconds=wall,
            )
        yield RunFinished(run_id=run_id, status=status, message=message, summary=summary)

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
        """A case's answer, counted against the budget, then committed."""
        if evaluation.completion.cost:
            self._spend(evaluation.completion.cost)
        await self.store.record(evaluation, work.request_hash, messages=self._messages_of(work))
