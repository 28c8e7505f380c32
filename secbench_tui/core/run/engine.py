"""The evaluation engine: an async stream of events over one run.

The engine owns the order of work and nothing about display. It creates (or resumes) a run
in the store, reuses results already paid for, asks the provider for the rest with up to
`concurrency` requests in flight, commits every result the moment it arrives, and yields
`CaseFinished` for it once it is stored, carrying the case's `position` in the run: a slow or
retrying case holds nothing back, so progress follows what is stored.

It drives retries under the provider's `RetryPolicy` (core/retry.py): a case that waits to try
again gives its concurrency slot back, so the other cases go on meanwhile. A failing case is
recorded as an error and the run goes on; only a run-level fault (bad key, no credits, unknown
model, an endpoint that cannot be reached, database unwritable) ends it early, as `aborted`,
with a message that says what to do. A stop lets the requests in flight finish for a short
grace, then cancels them; a case that got no answer is not recorded, so `--resume` asks it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from secbench_tui import __version__
from secbench_tui.core.models import (
    Case,
    ChatRequest,
    Completion,
    Evaluation,
    JSONObject,
    Outcome,
    RecordedSettings,
    RewritesRecord,
    RunStatus,
    SuiteKind,
)
from secbench_tui.core.results.figures import run_figures
from secbench_tui.core.results.grading import score_completion
from secbench_tui.core.results.metrics import summarize, usage_stats
from secbench_tui.core.results.summary import RunSummary
from secbench_tui.core.run.events import (
    CaseFinished,
    CaseStarted,
    Earlier,
    Event,
    Retrying,
    RunFinished,
    RunStarted,
)
from secbench_tui.core.run.providers.base import (
    Provider,
    RetryCallback,
    RetryNotice,
    RunAborted,
    SendsBodies,
)
from secbench_tui.core.run.providers.json_body import SharedPrefixes
from secbench_tui.core.run.providers.retry import (
    Attempter,
    Breaker,
    Failure,
    RetryHooks,
    Unreachable,
    one_line,
    run_attempts,
    unreachable_message,
)
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.rows import ResultRow, originals_only
from secbench_tui.core.store.values import LEGACY_PROMPT_NAME, now_iso, prompt_keyed, text_hash
from secbench_tui.core.suites import security_bench
from secbench_tui.core.vuldetectbench import DEFAULT_SCORING

# Settings that change what a model is asked; a resumed run must match them all.
REQUEST_SETTINGS = ("base_url", "temperature", "max_tokens", "seed", "response_format")
# Later ones, with the value that leaves the request as it was before they existed: they
# count only when set otherwise, so results recorded before them are still reused.
OPTIONAL_REQUEST_SETTINGS = {"reasoning_effort": None, "request_style": security_bench.OWN_STYLE}


# Reuse and resume keys name no prompt: the same words are the same question, whatever file
# they were read from. Keys are still made as the schema-3 ones were, with this one name in
# the place of the prompt's, so every result keyed under it (all those recorded before prompts
# had names, re-keyed by that migration, and every later run of `./evaluation-prompt.txt`)
# keeps its key; results keyed under another name are found through `legacy_names`.
CONTENT_KEYED = LEGACY_PROMPT_NAME


@dataclass
class RunSpec:
    """Everything that defines a run, built once by the front end."""

    model: str
    cases: Sequence[Case]
    suite_kind: str
    suite_path: str
    settings: RecordedSettings = field(default_factory=RecordedSettings)
    prompt_hash: str = ""
    prompt_name: str = ""  # the evaluation prompt's name: part of the reuse and resume keys
    repeats: int = 1
    concurrency: int = 1
    resume: bool = False
    force: bool = False
    retry_errors: bool = False
    max_cost: float | None = None
    vdb_scoring: str = DEFAULT_SCORING
    skipped: tuple[str, ...] = ()
    # The endpoint requests go to, credentials included: hashed into the fingerprint and the
    # request hashes (two keys in a query are two endpoints), never stored; `settings` holds
    # it redacted. None: the one in `settings`.
    base_url: str | None = None
    _request_bases: dict[int, tuple[Case, str]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _prompt_strings: SharedPrefixes = field(
        default_factory=lambda: SharedPrefixes(ensure_ascii=True),
        init=False,
        repr=False,
        compare=False,
    )

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
        """What a resumed run must share with this one: the same questions to the same model.

        Keyed on the prompt's content (`prompt_hash`, and its text inside `suite_hash`), not
        on its name: the same words read from another file are the same run."""
        return self.fingerprint_named(CONTENT_KEYED)

    def fingerprint_named(self, prompt_name: str) -> str:
        """The fingerprint as it was written under a prompt's name (`legacy_names`)."""
        return prompt_keyed(self._fingerprint_base, prompt_name)

    @cached_property
    def _fingerprint_base(self) -> str:
        return text_hash(
            self.model,
            self.suite_kind,
            self.suite_path,
            self.suite_hash,
            self.prompt_hash,
            self._request_json,
            str(self.repeats),
            self.vdb_scoring,
        )

    def _request_settings(self) -> JSONObject:
        recorded = self.settings.as_dict()  # the keys recorded, by name
        request = {k: recorded.get(k) for k in REQUEST_SETTINGS}
        endpoint = request["base_url"] if self.base_url is None else self.base_url
        request["base_url"] = str(endpoint or "").rstrip("/")
        for key, unset in OPTIONAL_REQUEST_SETTINGS.items():
            if recorded.get(key, unset) != unset:
                request[key] = recorded[key]
        return request

    @cached_property
    def _request_json(self) -> str:
        return json.dumps(self._request_settings(), sort_keys=True)

    def request_hash(self, case: Case, prompt_name: str = "") -> str:
        """Identifies what was asked: same model, endpoint, settings and messages (the
        evaluation prompt's text is in them; its name is not part of the key). With a
        `prompt_name`, the key as it was written under that name (`legacy_names`)."""
        return prompt_keyed(self._request_base(case), prompt_name or CONTENT_KEYED)

    def _request_base(self, case: Case) -> str:
        """The request's hash before a prompt's name is added, once per case: every name a
        run looks its answers up under (`legacy_names`) starts from it."""
        known = self._request_bases.get(id(case))
        if known is not None and known[0] is case:
            return known[1]
        # json.dumps([[m.role, m.content], ...]) written with the app's prompt escaped once
        strings, prefix = self._prompt_strings, case.prompt_prefix
        messages = (
            "["
            + ", ".join(
                f"[{json.dumps(m.role)}, {strings.string(m.content, prefix)}]"
                for m in case.prompt_messages()
            )
            + "]"
        )
        base = text_hash(
            self.model, case.case_id, messages, str(case.structured), self._request_json
        )
        self._request_bases[id(case)] = (case, base)
        return base


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

    async def acquire(self, priority: bool = False, rank: int = 0) -> None:
        async with self._cond:
            self._priority += priority
            try:
                await self._cond.wait_for(
                    lambda: (
                        self.active < self.limit
                        and (priority or (not self._priority and self._turn(rank)))
                    )
                )
            finally:
                self._priority -= priority
            self.active += 1
            if priority:
                self._cond.notify_all()  # new cases may go now, if room is left

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


@dataclass(frozen=True)
class _Work:
    seq: int
    index: int
    case: Case
    repeat: int
    request_hash: str


class _Abandoned(Exception):
    """A stop came while the case waited to retry, or its request outlived the stop's grace:
    it has no answer, so nothing is kept (and `--resume` asks it)."""


@dataclass(frozen=True)
class _Done:
    """A case's end, as the worker hands it to the stream; no evaluation when it was not asked."""

    seq: int
    evaluation: Evaluation | None


class _Dispatched:
    """Every case has been handed out (or a stop came): none will start after this."""


STOP_GRACE = 5.0  # seconds a stop lets requests in flight finish before cancelling them


class _Slot:
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


class Engine:
    """One run. Iterate `events()` once; call `stop()` to finish in-flight cases and end."""

    def __init__(
        self,
        spec: RunSpec,
        provider: Provider,
        store: Store,
        limit: AdaptiveLimit | None = None,
        stop_grace: float = STOP_GRACE,
        rank: int = 0,
    ) -> None:
        self.spec = spec
        self.rank = rank  # its turn among the runs sharing `limit` (AdaptiveLimit.enroll)
        self.provider = provider
        # a provider whose retries the engine drives (asked once: a Protocol's isinstance
        # check costs as much as the rest of a case's bookkeeping)
        self._attempter = provider if isinstance(provider, Attempter) else None
        self.store = store
        self.run_id: int | None = None
        # one model's runs share its limit: the rate limit belongs to the model, not the run
        self.limit = limit if limit is not None else AdaptiveLimit(spec.concurrency)
        self.breaker = Breaker.for_concurrency(spec.concurrency)
        self.stop_grace = stop_grace
        self._stopping = asyncio.Event()
        self._stop_message: str | None = None
        self._queue: asyncio.Queue[Event | _Done | _Dispatched | BaseException] = asyncio.Queue()
        self._cost = 0.0
        self._answered = 0  # cases asked in this run that came back (not reused ones)
        self._halted = False  # the stop's grace is over: requests in flight are cancelled
        self._requests: set[asyncio.Task[Any]] = set()  # case tasks awaiting a reply
        self._halting: set[asyncio.Task[Any]] = set()  # those `_halt` cancelled
        self._grace: asyncio.TimerHandle | None = None
        self._resumed = False
        self._first_sent: float | None = None  # perf_counter when the first case was started
        self._todo: deque[_Work] = deque()  # cases not handed out yet
        self._started = 0  # cases handed out
        self._messages: dict[str, str] = {}  # what each result's row names its messages by
        self._recording: set[asyncio.Task[None]] = set()  # results being written

    def stop(self, message: str | None = None, grace: bool = True) -> None:
        """Start no new case; requests in flight get `stop_grace` seconds to finish (for ever
        with `grace=False`), then are cancelled. Every case that finished is recorded."""
        if not self._stopping.is_set():
            self._stop_message = message or "stopped by the user"
            self._stopping.set()
        if grace and self._grace is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # not running yet: the run will not start a case
                return
            self._grace = loop.call_later(self.stop_grace, self._halt)

    def _halt(self) -> None:
        self._halted = True
        for task in list(self._requests):
            self._halting.add(task)
            task.cancel()

    def _check_budget(self) -> None:
        if self.spec.max_cost is not None and self._cost >= self.spec.max_cost:
            self.stop(
                f"budget reached: cost {self._cost:.4f} >= --max-cost {self.spec.max_cost}",
                grace=False,  # what is in flight is paid for: let it come back
            )

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    async def _open_run(self) -> tuple[int, bool]:
        spec = self.spec
        if spec.resume or spec.retry_errors:
            run_id = await latest_run(spec, self.store, unfinished=not spec.retry_errors)
            if run_id is not None:
                await self.store.reopen_run(run_id, len(spec.cases) * spec.repeats)
                return run_id, True
        run_id = await self.store.create_run(
            model=spec.model,
            suite_kind=spec.suite_kind,
            suite_path=spec.suite_path,
            suite_hash=spec.suite_hash,
            prompt_hash=spec.prompt_hash,
            settings=spec.settings.model_copy(
                update={
                    "repeats": spec.repeats,
                    "concurrency": spec.concurrency,
                    "vdb_scoring": spec.vdb_scoring,
                }
            ),
            fingerprint=spec.fingerprint,
            tool_version=__version__,
            total_cases=len(spec.cases) * spec.repeats,
            prompt_name=spec.prompt_name,
        )
        return run_id, False

    async def _reuse(self, run_id: int, work: _Work, row: ResultRow) -> Evaluation:
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
            reasoning=row.get("reasoning"),
            reasoning_tokens=row.get("reasoning_tokens"),
            notes=row.get("notes"),
            # errors are never reused: a reason kept on another outcome is an unreadable reply's
            unreadable=row.get("error"),
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
        messages = self._messages.get(work.case.case_id)
        await self.store.record(evaluation, work.request_hash, row["id"], messages)
        return evaluation

    async def events(self) -> AsyncIterator[Event]:
        started = time.perf_counter()
        run_id, resumed = await self._open_run()  # no run yet to record a fault on: raise
        self.run_id = run_id
        self._resumed = resumed
        status, message = RunStatus.COMPLETED, None
        pending: list[_Work] = []
        try:
            async for event in self._run(run_id, resumed, pending):
                yield event
        except RunAborted as exc:
            status, message = RunStatus.ABORTED, str(exc)
        except Exception as exc:  # a run-level fault: the database, most likely
            status, message = RunStatus.ABORTED, f"{type(exc).__name__}: {exc}"
        if status is RunStatus.COMPLETED and self.stopping and self._answered < len(pending):
            status, message = RunStatus.STOPPED, self._stop_message
        # a run's time counts from its first request (a queued run of a matrix waits first)
        summary = await self._summary(run_id, time.perf_counter() - (self._first_sent or started))
        try:
            await self.store.finish_run(run_id, status, message)
        except Exception as exc:
            status, message = RunStatus.ABORTED, f"could not record the run's end: {exc}"
        yield RunFinished(run_id=run_id, status=status, message=message, summary=summary)

    async def _run(self, run_id: int, resumed: bool, pending: list[_Work]) -> AsyncIterator[Event]:
        """Reuse what was paid for, then ask the rest; fills `pending` with what is asked."""
        spec = self.spec
        done_keys: set[tuple[str, int]] = set()
        earlier: Earlier | None = None
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
        paid_for = {} if spec.force else await paid_answers(spec, self.store, work)
        unpaid = [w for w in work if (w.request_hash, w.repeat) not in paid_for]
        adopted = (
            {} if spec.force else await adopted_answers(spec, self.provider, self.store, unpaid)
        )
        # every message this run sends (or reuses the answer to), written in one call
        self._messages = await self.store.remember_requests(
            list({item.case.case_id: item.case for item in work}.values())
        )
        reused: list[Evaluation] = []
        for item in work:
            row = paid_for.get((item.request_hash, item.repeat))
            if row is None:
                row = adopted.get((item.case.case_id, item.repeat))
            if row is not None:
                reused.append(await self._reuse(run_id, item, row))
            else:
                pending.append(replace(item, seq=len(pending)))
        await self.store.claim_imported(
            sorted({int(row["run_id"]) for row in adopted.values()}),
            spec.suite_kind,
            spec.suite_path,
        )
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
            earlier=earlier,
            prompt=spec.prompt_name,
        )
        for evaluation in reused:
            done += 1
            yield self._finished(run_id, evaluation, done, total)
        async for event in self._ask_all(run_id, pending, done, total):
            yield event

    async def _summary(self, run_id: int, wall: float) -> RunSummary:
        try:
            rows = await self.store.run_results(run_id, with_text=False)
        except Exception as exc:  # every result is already stored: report, do not fail
            rows = []
            summary_error: str | None = f"could not read the results back: {exc}"
        else:
            summary_error = None
        originals = originals_only(rows)
        # the summary's fields, by name; a run's figures are its originals', never blended
        # with its variants' (--rewrites), which have their own
        figures: dict[str, object] = {**summarize(originals), **run_figures(originals)}
        rewrites = self.spec.settings.rewrites
        if len(originals) != len(rows) or rewrites is not None:
            figures.update(usage_stats(rows))  # what the variants cost counts
            rewrites = rewrites or RewritesRecord()
            from secbench_tui.core.results.robustness import robustness  # --rewrites only

            figures["robustness"] = robustness(
                rows, rewrites.dropped, rewrites.kinds, self.spec.repeats
            )
        vdb_rows = [r for r in rows if r["suite_kind"] == SuiteKind.VULDETECTBENCH.value]
        if vdb_rows:
            from secbench_tui.core.vuldetectbench.task_scores import (
                aggregate_rows,
                summary_counts,
                summary_metrics,
            )

            aggregate = aggregate_rows(vdb_rows, self.spec.vdb_scoring)
            figures["vuldetectbench"] = summary_metrics(aggregate)
            figures["vuldetectbench_counts"] = summary_counts(aggregate)
            figures["vdb_scoring"] = self.spec.vdb_scoring
        return RunSummary.from_figures(
            {
                **figures,
                "no_answer": no_answer(rows),
                "summary_error": summary_error,
                "wall_seconds": wall,
                "run_id": run_id,
                "model": self.spec.model,
                "prompt": self.spec.prompt_name,
            }
        )

    async def _ask_all(
        self, run_id: int, pending: list[_Work], done: int, total: int
    ) -> AsyncIterator[Event]:
        """Hand the cases out as slots free up; yield each CaseFinished as its case ends."""
        self._todo = deque(pending)
        cases: set[asyncio.Task[None]] = set()
        dispatcher = asyncio.create_task(self._dispatch(run_id, cases))
        dispatched = False
        ended = 0
        try:
            while not dispatched or ended < self._started:
                item = await self._queue.get()
                if isinstance(item, BaseException):
                    raise item
                if isinstance(item, _Dispatched):
                    dispatched = True
                elif isinstance(item, _Done):
                    ended += 1
                    if item.evaluation is not None:
                        done += 1
                        self._answered += 1
                        yield self._finished(run_id, item.evaluation, done, total)
                else:
                    yield item
        finally:
            if self._grace is not None:
                self._grace.cancel()
            dispatcher.cancel()
            for task in list(cases):
                task.cancel()
            await asyncio.gather(dispatcher, *cases, return_exceptions=True)
            await self._writes_ended()  # every answer in: the summary is taken from the rows

    def _finished(self, run_id: int, evaluation: Evaluation, done: int, total: int) -> CaseFinished:
        position = evaluation.index * self.spec.repeats + evaluation.repeat
        return CaseFinished(run_id, evaluation, done, total, position)

    async def _next(self, run_id: int) -> _Work | None:
        """The run's next case to ask, counted and announced as started (here, so that cases
        are announced in the order they are handed out, which the headless lines keep);
        None once every case has been handed out or a stop came. Handing out the last one
        lets the model's next run start (`AdaptiveLimit.withdraw`)."""
        if not self._todo or self.stopping:
            return None
        self._started += 1
        work = self._todo.popleft()
        self._queue.put_nowait(CaseStarted(run_id, work.case, work.index, work.repeat))
        if not self._todo:
            await self.limit.withdraw(self.rank)
        return work

    async def _dispatch(self, run_id: int, cases: set[asyncio.Task[None]]) -> None:
        """Start a case whenever a slot is free and no case's own task went on to it
        (`_worker`). Cases waiting to retry hold no slot, so at most four times the
        concurrency are open at once, which bounds the tasks held in memory."""
        room = asyncio.Semaphore(4 * self.limit.maximum)
        try:
            while self._todo and not self.stopping:
                await room.acquire()
                await self.limit.acquire(rank=self.rank)
                work = await self._next(run_id)
                if work is None:
                    await self.limit.release(False)
                    room.release()
                    break
                if self._first_sent is None:
                    await self._first_request(run_id)
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

    async def _first_request(self, run_id: int) -> None:
        """The run starts now: its first case has a slot. A resumed run keeps its start."""
        self._first_sent = time.perf_counter()
        if not self._resumed:
            await self.store.mark_started(run_id)

    async def _worker(self, run_id: int, work: _Work, room: asyncio.Semaphore) -> None:
        """Cases one after another on one slot, as the floor's loop asks them: when a case
        ends and its slot may go straight on (`AdaptiveLimit.pass_on`), this task asks the
        run's next case itself, so no case waits for the dispatcher to wake and start a task
        of its own. It ends when the slot must go elsewhere (a retry waiting for one, a
        lowered limit), was given back on the way, or no case is left."""
        slot = _Slot(self.limit)
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

    async def _case(self, run_id: int, work: _Work, slot: _Slot) -> bool:
        """One case from its slot to its record; puts exactly one `_Done` (or the fault).
        True when it got a usable answer. The slot stays held, unless a retry's wait gave it
        back or a fault ended the case (then the worker ends)."""
        try:
            try:
                evaluation = await self._ask(run_id, work, slot)
            except _Abandoned:
                self._queue.put_nowait(_Done(work.seq, None))
                return False
            if evaluation.completion.cost:
                self._cost += evaluation.completion.cost
                self._check_budget()
            await asyncio.shield(self._recorded(work, evaluation))
            return evaluation.scored.outcome is not Outcome.ERROR
        except BaseException as exc:  # noqa: B036 - handed to the consumer, which re-raises
            if not isinstance(exc, asyncio.CancelledError):
                await self._writes_ended()  # the cases stored meanwhile are reported first
                self._queue.put_nowait(exc)
                await slot.give_back()
                return False
            raise

    def _recorded(self, work: _Work, evaluation: Evaluation) -> asyncio.Task[None]:
        """The case's result committed, then the case reported (once it is stored), in a task
        of its own: a case cancelled meanwhile (the run ends) still keeps its answer, which
        was paid for, and the run's summary waits for it (`_writes_ended`)."""

        async def record() -> None:
            messages = self._messages.get(work.case.case_id)
            await self.store.record(evaluation, work.request_hash, messages=messages)
            self._queue.put_nowait(_Done(work.seq, evaluation))

        task = asyncio.create_task(record())
        self._recording.add(task)
        task.add_done_callback(self._recording.discard)
        return task

    async def _writes_ended(self) -> None:
        """Wait until every result handed to the store is written (or failed)."""
        while self._recording:
            await asyncio.wait(list(self._recording))

    async def _request(self, ask: Awaitable[Completion]) -> Completion:
        """One request to the provider, cancelled (as `_Abandoned`) when a stop's grace ends.

        The request runs in its case's own task (a task of its own would cost every case
        another trip through the event loop): `_halt` cancels the tasks waiting here, and a
        cancellation that came from `_halt` alone becomes `_Abandoned`.
        """
        if self._halted:
            raise _Abandoned
        task = asyncio.current_task()
        assert task is not None, "a request is always awaited inside a task"
        self._requests.add(task)
        try:
            return await ask
        except asyncio.CancelledError:
            if task in self._halting:
                self._halting.discard(task)
                if task.uncancel() == 0:  # nobody else asked this task to stop
                    raise _Abandoned from None
            raise
        finally:
            self._requests.discard(task)

    async def _complete(self, run_id: int, case: Case, slot: _Slot) -> Completion:
        """The provider's answer, its retries driven here so a waiting case holds no slot."""
        provider = self._attempter
        if provider is None:  # retries (if any) happen inside `complete`
            return await self._request(self.provider.complete(case, self._on_retry(run_id)))
        hooks = _EngineHooks(self, run_id, slot, provider.endpoint, case.case_id)
        try:
            return await run_attempts(
                hooks.timed(lambda: self._request(provider.attempt(case))),
                provider.policy,
                case.case_id,
                hooks,
            )
        except Unreachable as exc:
            raise RunAborted(
                unreachable_message(
                    provider.endpoint, exc.failure, max(exc.attempts, self.breaker.consecutive)
                )
            ) from None

    def _on_retry(self, run_id: int) -> RetryCallback:
        """For providers that retry inside `complete`: report, adapt, drop the case on a stop."""

        async def on_retry(notice: RetryNotice) -> None:
            if self.stopping:
                raise _Abandoned
            if notice.rate_limited:
                self.limit.rate_limited(notice.retry_after)
            await self._queue.put(Retrying(run_id, notice, self.limit.limit))

        return on_retry

    async def _ask(self, run_id: int, work: _Work, slot: _Slot) -> Evaluation:
        """Ask one case: its evaluation (`_Abandoned` when a stop drops it unanswered)."""
        case = work.case
        try:
            completion = await self._complete(run_id, case, slot)
            scored = score_completion(case, completion, self.spec.vdb_scoring)
        except (RunAborted, _Abandoned):
            raise
        except Exception as exc:  # a failing case is data, not an exception
            completion = Completion(error=one_line(f"{type(exc).__name__}: {exc}"))
            scored = score_completion(case, completion, self.spec.vdb_scoring)
        return Evaluation(
            run_id=run_id,
            case=case,
            repeat=work.repeat,
            index=work.index,
            completion=completion,
            scored=scored,
            timestamp=now_iso(),
        )


def request_body(spec: RunSpec, provider: object, case: Case) -> ChatRequest | None:
    """The body that would be sent for `case`: the provider's own, or (where no provider is
    built, as in a dry run) the original evaluator's, which needs none; None when unknown."""
    if isinstance(provider, SendsBodies):
        return provider.payload(case)
    if spec.settings.request_style == security_bench.STYLE and case.messages:
        return security_bench.request_body(spec.model, case.prompt_messages())
    return None


async def legacy_names(spec: RunSpec, store: Store) -> list[str]:
    """The names this prompt's text was recorded under by versions that keyed reuse and resume
    on a prompt's name as well (schema 3 to 8): their keys are found under those names."""
    if not spec.prompt_hash:
        return []
    return [n for n in await store.names_of_prompt(spec.prompt_hash) if n != CONTENT_KEYED]


async def latest_run(spec: RunSpec, store: Store, unfinished: bool = True) -> int | None:
    """The newest run of this spec (only unfinished ones if asked), whatever name its prompt
    was recorded under."""
    names = await legacy_names(spec, store)
    prints = [spec.fingerprint, *(spec.fingerprint_named(n) for n in names)]
    return await store.latest_run(prints, unfinished=unfinished)


async def paid_answers(
    spec: RunSpec, store: Store, work: Sequence[Any]
) -> dict[tuple[str, int], ResultRow]:
    """The latest stored answer to each request of `work` (items with `case` and
    `request_hash`), by (request hash, repeat): keyed on its content, or on a name its
    prompt's text was recorded under before (`legacy_names`)."""
    keys = {item.request_hash: item.request_hash for item in work}
    for name in await legacy_names(spec, store):
        for item in {id(item.case): item for item in work}.values():
            keys.setdefault(spec.request_hash(item.case, name), item.request_hash)
    paid: dict[tuple[str, int], ResultRow] = {}
    for (key, repeat), row in (await store.reusable(list(keys))).items():
        found = (keys[key], repeat)
        if found not in paid or row["id"] > paid[found]["id"]:
            paid[found] = row
    return paid


async def adopted_answers(
    spec: RunSpec, provider: object, store: Store, work: Sequence[Any]
) -> dict[tuple[str, int], ResultRow]:
    """Answers the original evaluator recorded (in a database it wrote, adopted) for exactly
    the requests `work` would send, by (case id, repeat)."""
    if not work or not store.adopted_requests:
        return {}
    bodies: dict[str, ChatRequest] = {}
    for item in work:
        body = request_body(spec, provider, item.case)
        if body is not None:
            bodies[item.case.case_id] = body
    return await store.adopted_answers(spec.model, bodies)


def no_answer(rows: Sequence[ResultRow]) -> str | None:
    """When no case of a run got an answer, why: its commonest error and how many it ended."""
    if not rows or any(row["outcome"] != Outcome.ERROR.value for row in rows):
        return None
    reasons = Counter(str(row.get("error") or "no reply") for row in rows)
    reason, count = reasons.most_common(1)[0]
    return f"no case got an answer: {count} of {len(rows)} cases ended with {reason}"


class _EngineHooks(RetryHooks):
    """The engine's side of the retry loop: the breaker, rate limits and slot-free waits."""

    def __init__(
        self, engine: Engine, run_id: int, slot: _Slot, endpoint: str, case_id: str
    ) -> None:
        self.engine = engine
        self.case_id = case_id
        self.run_id = run_id
        self.slot = slot
        self.endpoint = endpoint
        self.sent_at = 0.0

    def timed(self, attempt: Callable[[], Awaitable[Completion]]) -> Callable[[], Any]:
        async def timed_attempt() -> Completion:
            self.sent_at = time.monotonic()
            return await attempt()

        return timed_attempt

    async def attempted(self, failure: Failure | None) -> None:
        breaker = self.engine.breaker
        if breaker.record(failure, self.case_id):
            raise RunAborted(breaker.message(self.endpoint))

    async def wait(self, notice: RetryNotice) -> None:
        engine = self.engine
        if engine.stopping:
            raise _Abandoned
        if notice.rate_limited:
            engine.limit.rate_limited(notice.retry_after, self.sent_at)
        engine._queue.put_nowait(Retrying(self.run_id, notice, engine.limit.limit))
        await self.slot.give_back()
        if notice.wait_seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(engine._stopping.wait(), notice.wait_seconds)
        if engine.stopping:
            raise _Abandoned
        await self.slot.take()
