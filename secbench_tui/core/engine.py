"""The evaluation engine: an async stream of events over one run.

The engine owns the order of work and nothing about display. It creates (or resumes) a run
in the store, reuses results already paid for, asks the provider for the rest with up to
`concurrency` requests in flight, commits every result the moment it arrives, and yields
`CaseFinished` events in case order whatever order the answers come back in.

A failing case is recorded as an error and the run goes on; only a run-level fault (bad key,
no credits, unknown model, database unwritable) ends it early, as `aborted`, with a message
that says what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from secbench_tui import __version__
from secbench_tui.core.events import (
    CaseFinished,
    CaseStarted,
    Event,
    Retrying,
    RunFinished,
    RunStarted,
)
from secbench_tui.core.metrics import summarize, usage_stats
from secbench_tui.core.models import Case, Completion, Evaluation, Outcome, SuiteKind
from secbench_tui.core.providers.base import Provider, RetryCallback, RetryNotice, RunAborted
from secbench_tui.core.scoring import score_completion
from secbench_tui.core.store import Store, now_iso, text_hash

# Settings that change what a model is asked; a resumed run must match them all.
REQUEST_SETTINGS = ("base_url", "temperature", "max_tokens", "seed", "response_format")


@dataclass
class RunSpec:
    """Everything that defines a run, built once by the front end."""

    model: str
    cases: Sequence[Case]
    suite_kind: str
    suite_path: str
    settings: dict[str, Any] = field(default_factory=dict)
    prompt_hash: str = ""
    repeats: int = 1
    concurrency: int = 1
    resume: bool = False
    force: bool = False
    retry_errors: bool = False
    max_cost: float | None = None
    vdb_scoring: str = "correct"
    skipped: tuple[str, ...] = ()

    @cached_property
    def suite_hash(self) -> str:
        """The cases as asked: ids, labels, code and every prompt text around it."""
        prefixes = {c.prompt_prefix for c in self.cases}
        return text_hash(
            *sorted(prefixes),
            *(
                f"{c.case_id}\0{c.expected}\0{c.code}\0{c.messages and c.prompt_messages()}"
                for c in self.cases
            ),
        )

    @cached_property
    def fingerprint(self) -> str:
        """What a resumed run must share with this one: the same questions to the same model."""
        return text_hash(
            self.model,
            self.suite_kind,
            self.suite_path,
            self.suite_hash,
            self.prompt_hash,
            json.dumps(self._request_settings(), sort_keys=True),
            str(self.repeats),
            self.vdb_scoring,
        )

    def _request_settings(self) -> dict[str, Any]:
        request = {k: self.settings.get(k) for k in REQUEST_SETTINGS}
        request["base_url"] = str(request["base_url"] or "").rstrip("/")
        return request

    def request_hash(self, case: Case) -> str:
        """Identifies what was asked: same model, endpoint, settings, case and prompt."""
        request = self._request_settings()
        messages = json.dumps([[m.role, m.content] for m in case.prompt_messages()])
        return text_hash(
            self.model,
            case.case_id,
            messages,
            str(case.structured),
            json.dumps(request, sort_keys=True),
        )


class AdaptiveLimit:
    """At most `limit` cases in flight; halves on a rate limit, creeps back up on success."""

    def __init__(self, maximum: int, cooldown: float = 20.0) -> None:
        self.maximum = max(1, maximum)
        self.limit = self.maximum
        self.active = 0
        self.cooldown = cooldown
        self._calm_after = 0.0
        self._successes = 0
        self._cond = asyncio.Condition()

    async def acquire(self) -> None:
        async with self._cond:
            await self._cond.wait_for(lambda: self.active < self.limit)
            self.active += 1

    async def release(self, success: bool) -> None:
        async with self._cond:
            self.active -= 1
            if success:
                self._successes += 1
                calm = time.monotonic() >= self._calm_after
                if calm and self.limit < self.maximum and self._successes >= self.limit:
                    self.limit += 1
                    self._successes = 0
            self._cond.notify_all()

    def rate_limited(self) -> None:
        self.limit = max(1, self.limit // 2)
        self._successes = 0
        self._calm_after = time.monotonic() + self.cooldown


@dataclass(frozen=True)
class _Work:
    seq: int
    index: int
    case: Case
    repeat: int
    request_hash: str


class _Abandoned(Exception):
    """A stop came while the case waited to retry: it has no answer, so nothing is kept."""


@dataclass(frozen=True)
class _Done:
    """A worker's finished case, before it is put back in order."""

    seq: int
    evaluation: Evaluation


class Engine:
    """One run. Iterate `events()` once; call `stop()` to finish in-flight cases and end."""

    def __init__(self, spec: RunSpec, provider: Provider, store: Store) -> None:
        self.spec = spec
        self.provider = provider
        self.store = store
        self.run_id: int | None = None
        self.limit = AdaptiveLimit(spec.concurrency)
        self._stopping = asyncio.Event()
        self._stop_message: str | None = None
        self._queue: asyncio.Queue[Event | _Done | BaseException | None] = asyncio.Queue()
        self._cost = 0.0
        self._stop_waiter: asyncio.Future[Any] | None = None
        self._answered = 0  # cases asked in this run that came back (not reused ones)

    def stop(self, message: str | None = None) -> None:
        """Start no new case; the ones in flight finish and are recorded."""
        if not self._stopping.is_set():
            self._stop_message = message or "stopped by the user"
            self._stopping.set()

    def _check_budget(self) -> None:
        if self.spec.max_cost is not None and self._cost >= self.spec.max_cost:
            self.stop(f"budget reached: cost {self._cost:.4f} >= --max-cost {self.spec.max_cost}")

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    async def _open_run(self) -> tuple[int, bool]:
        spec = self.spec
        if spec.resume or spec.retry_errors:
            run_id = await self.store.latest_run(spec.fingerprint, unfinished=not spec.retry_errors)
            if run_id is not None:
                await self.store.reopen_run(run_id, len(spec.cases) * spec.repeats)
                return run_id, True
        run_id = await self.store.create_run(
            model=spec.model,
            suite_kind=spec.suite_kind,
            suite_path=spec.suite_path,
            suite_hash=spec.suite_hash,
            prompt_hash=spec.prompt_hash,
            settings={
                **spec.settings,
                "repeats": spec.repeats,
                "concurrency": spec.concurrency,
                "vdb_scoring": spec.vdb_scoring,
            },
            fingerprint=spec.fingerprint,
            tool_version=__version__,
            total_cases=len(spec.cases) * spec.repeats,
        )
        return run_id, False

    async def _reuse(self, run_id: int, work: _Work, row: dict[str, Any]) -> Evaluation:
        completion = Completion(
            text=row["raw_reply"],
            status=row["http_status"],
            finish_reason=row["finish_reason"],
            prompt_tokens=row["prompt_tokens"],
            completion_tokens=row["completion_tokens"],
            cost=row["cost"],
            served_model=row["served_model"],
            provider=row["provider"],
            latency_ms=row["latency_ms"] or 0.0,
            attempts=row["attempts"],
            notes=row.get("notes"),
        )
        evaluation = Evaluation(
            run_id=run_id,
            case=work.case,
            repeat=work.repeat,
            index=work.index,
            completion=completion,
            scored=score_completion(work.case, completion, self.spec.vdb_scoring),
            timestamp=now_iso(),
            reused=True,
        )
        await self.store.record(evaluation, work.request_hash, row["id"])
        return evaluation

    async def events(self) -> AsyncIterator[Event]:
        started = time.perf_counter()
        run_id, resumed = await self._open_run()  # no run yet to record a fault on: raise
        self.run_id = run_id
        status, message = "completed", None
        pending: list[_Work] = []
        try:
            async for event in self._run(run_id, resumed, pending):
                yield event
        except RunAborted as exc:
            status, message = "aborted", str(exc)
        except Exception as exc:  # a run-level fault: the database, most likely
            status, message = "aborted", f"{type(exc).__name__}: {exc}"
        if status == "completed" and self.stopping and self._answered < len(pending):
            status, message = "stopped", self._stop_message
        summary = await self._summary(run_id, time.perf_counter() - started)
        try:
            await self.store.finish_run(run_id, status, message)
        except Exception as exc:
            status, message = "aborted", f"could not record the run's end: {exc}"
        yield RunFinished(run_id=run_id, status=status, message=message, summary=summary)

    async def _run(self, run_id: int, resumed: bool, pending: list[_Work]) -> AsyncIterator[Event]:
        """Reuse what was paid for, then ask the rest; fills `pending` with what is asked."""
        spec = self.spec
        done_keys: set[tuple[str, int]] = set()
        earlier: dict[str, Any] = {}
        if resumed:
            done_keys = await self.store.finished_keys(run_id, include_errors=not spec.retry_errors)
            self._cost = await self.store.spent(run_id)  # the budget covers the whole run
            self._check_budget()
            kept = [
                row
                for row in await self.store.run_results(run_id, with_text=False)
                if (row["case_id"], row["repeat"]) in done_keys
            ]
            earlier = {"counts": dict(Counter(row["outcome"] for row in kept)), **usage_stats(kept)}
        work = [
            _Work(0, index, case, repeat, request)
            for index, case in enumerate(spec.cases)
            for request in (spec.request_hash(case),)
            for repeat in range(spec.repeats)
            if (case.case_id, repeat) not in done_keys
        ]
        paid_for = {} if spec.force else await self.store.reusable([w.request_hash for w in work])
        reused: list[Evaluation] = []
        for item in work:
            row = paid_for.get((item.request_hash, item.repeat))
            if row is not None:
                reused.append(await self._reuse(run_id, item, row))
            else:
                pending.append(replace(item, seq=len(pending)))
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
            earlier=earlier,
        )
        for evaluation in reused:
            done += 1
            yield CaseFinished(run_id, evaluation, done, total)
        async for event in self._ask_all(run_id, pending, done, total):
            yield event

    async def _summary(self, run_id: int, wall: float) -> dict[str, Any]:
        try:
            rows = await self.store.run_results(run_id, with_text=False)
        except Exception as exc:  # every result is already stored: report, do not fail
            rows = []
            summary_error: str | None = f"could not read the results back: {exc}"
        else:
            summary_error = None
        summary = summarize(rows)
        if summary_error:
            summary["summary_error"] = summary_error
        vdb_rows = [r for r in rows if r["suite_kind"] == SuiteKind.VULDETECTBENCH.value]
        if vdb_rows:
            from secbench_tui.core.vdb_scoring import (
                aggregate_rows,
                summary_counts,
                summary_metrics,
            )

            aggregate = aggregate_rows(vdb_rows, self.spec.vdb_scoring)
            summary["vuldetectbench"] = summary_metrics(aggregate)
            summary["vuldetectbench_counts"] = summary_counts(aggregate)
            summary["vdb_scoring"] = self.spec.vdb_scoring
        summary["wall_seconds"] = wall
        summary["run_id"] = run_id
        summary["model"] = self.spec.model
        return summary

    async def _ask_all(
        self, run_id: int, pending: list[_Work], done: int, total: int
    ) -> AsyncIterator[Event]:
        """Run workers; yield their events, CaseFinished in `seq` order."""
        cursor = iter(pending)
        finished: dict[int, Evaluation] = {}
        next_seq = 0
        workers = [
            asyncio.create_task(self._worker(run_id, cursor))
            for _ in range(min(self.spec.concurrency, len(pending)) or 0)
        ]
        remaining = len(workers)
        try:
            while remaining:
                item = await self._queue.get()
                if item is None:
                    remaining -= 1
                    continue
                if isinstance(item, BaseException):
                    raise item
                if isinstance(item, _Done):
                    finished[item.seq] = item.evaluation
                    while next_seq in finished:
                        evaluation = finished.pop(next_seq)
                        next_seq += 1
                        done += 1
                        self._answered += 1
                        yield CaseFinished(run_id, evaluation, done, total)
                else:
                    yield item
            for seq in sorted(finished):
                done += 1
                self._answered += 1
                yield CaseFinished(run_id, finished[seq], done, total)
        finally:
            for task in workers:
                task.cancel()
            waiters = [] if self._stop_waiter is None else [self._stop_waiter]
            for waiter in waiters:
                waiter.cancel()
            await asyncio.gather(*workers, *waiters, return_exceptions=True)

    async def _worker(self, run_id: int, cursor: Any) -> None:
        try:
            for work in cursor:
                if self.stopping:
                    break
                await self.limit.acquire()
                success = False
                try:
                    if self.stopping:
                        break
                    await self._queue.put(CaseStarted(run_id, work.case, work.index, work.repeat))
                    try:
                        evaluation = await self._ask(run_id, work)
                    except _Abandoned:
                        break
                    success = evaluation.scored.outcome is not Outcome.ERROR
                    await self._queue.put(_Done(work.seq, evaluation))
                    if evaluation.completion.cost:
                        self._cost += evaluation.completion.cost
                        self._check_budget()
                finally:
                    await self.limit.release(success)
        except BaseException as exc:  # noqa: B036 - handed to the consumer, which re-raises
            if not isinstance(exc, asyncio.CancelledError):
                await self._queue.put(exc)
                return
            raise
        await self._queue.put(None)

    async def _complete(
        self, case: Case, on_retry: RetryCallback, waiting_until: Callable[[], float]
    ) -> Completion:
        """The provider's answer; a stop drops the case if it is only waiting to retry."""
        if self._stop_waiter is None:
            self._stop_waiter = asyncio.ensure_future(self._stopping.wait())
        ask = asyncio.ensure_future(self.provider.complete(case, on_retry))
        await asyncio.wait({ask, self._stop_waiter}, return_when=asyncio.FIRST_COMPLETED)
        if not ask.done() and time.monotonic() < waiting_until():
            ask.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ask
            raise _Abandoned
        return await ask  # a request in flight may still bring an answer worth keeping

    async def _ask(self, run_id: int, work: _Work) -> Evaluation:
        """Ask one case and record the result (`_Abandoned` when a stop drops it unanswered)."""
        case = work.case
        waiting_until = 0.0

        async def on_retry(notice: RetryNotice) -> None:
            nonlocal waiting_until
            if self.stopping:
                raise _Abandoned
            if notice.rate_limited:
                self.limit.rate_limited()
            waiting_until = time.monotonic() + notice.wait_seconds
            await self._queue.put(Retrying(run_id, notice, self.limit.limit))

        try:
            completion = await self._complete(case, on_retry, lambda: waiting_until)
            scored = score_completion(case, completion, self.spec.vdb_scoring)
        except (RunAborted, _Abandoned):
            raise
        except Exception as exc:  # a failing case is data, not an exception
            completion = Completion(error=f"{type(exc).__name__}: {exc}")
            scored = score_completion(case, completion, self.spec.vdb_scoring)
        evaluation = Evaluation(
            run_id=run_id,
            case=case,
            repeat=work.repeat,
            index=work.index,
            completion=completion,
            scored=scored,
            timestamp=now_iso(),
        )
        await self.store.record(evaluation, work.request_hash)
        return evaluation
