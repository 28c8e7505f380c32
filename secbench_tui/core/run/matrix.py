"""Many runs at once: every model given, times every evaluation prompt (and VulDetectBench method).

An `Engine` is one run; a `Matrix` runs several. Rate limits belong to a model at its provider,
so each model gets one `AdaptiveLimit` (its `--concurrency`), shared by all of that model's runs,
and the runs of different models proceed at the same time. The runs' event streams are merged
into one, each event tagged with the run's place in the plan (`slot`), for the front ends.

A fault that belongs to one model (an unknown model, a 404, a bad key for it) aborts that run;
the model's other runs are then stopped too, since they would meet the same fault, and the
other models' runs go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from secbench_tui import __version__
from secbench_tui.core.models import RunStatus
from secbench_tui.core.run.batch.runner import Batching
from secbench_tui.core.run.engine import STOP_GRACE, Engine
from secbench_tui.core.run.events import Event, RunFinished
from secbench_tui.core.run.limits import AdaptiveLimit
from secbench_tui.core.run.providers.base import Provider
from secbench_tui.core.run.record import latest_run
from secbench_tui.core.run.sharing import SharedPace, Sharing
from secbench_tui.core.run.spec import OPTIONAL_REQUEST_SETTINGS, REQUEST_SETTINGS, RunSpec
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.runs import RunRecord


@dataclass(frozen=True)
class PlannedRun:
    """One cell of the matrix: a model with one prompt (one method), and who answers it."""

    spec: RunSpec
    provider: Provider
    batching: Batching | None = None  # --batch: through the model's batch API

    @property
    def model(self) -> str:
        return self.spec.model

    @property
    def prompt(self) -> str:
        return self.spec.prompt_name

    @property
    def label(self) -> str:
        return f"{self.spec.model} \u00b7 {self.spec.prompt_name}"


async def resumable(runs: Sequence[PlannedRun], store: Store) -> list[PlannedRun]:
    """With `--resume`: the cells that have an unfinished run to continue. A cell whose runs
    are all complete is left as it is, not run again from reused results."""
    return [run for run in runs if await latest_run(run.spec, store) is not None]


UNFINISHED = (RunStatus.STOPPED, RunStatus.ABORTED, RunStatus.INTERRUPTED)


async def unmatched_unfinished(spec: RunSpec, store: Store, shown: int = 3) -> list[str]:
    """`--resume` found nothing to continue for `spec`: the unfinished runs of the same model
    and prompt (by name or text) that exist all the same, newest first, each with what makes
    it another run (an older version's, another prompt text, other settings or cases)."""
    found = [
        run
        for run in await store.runs(models=[spec.model])
        if run.status in UNFINISHED
        and run.suite_kind == spec.suite_kind
        and (run.prompt_name == spec.prompt_name or run.prompt_hash == spec.prompt_hash)
    ]
    return [
        f"run {run.id} ({run.status}, {run.finished} of {run.total_cases} stored) is "
        f"unfinished but not this run: {'; '.join(_differences(spec, run))}"
        for run in reversed(found[-shown:])
    ]


def _differences(spec: RunSpec, run: RunRecord) -> list[str]:
    """What differs between the run `spec` describes and a stored run (a `RunRecord`)."""
    out = []
    if run.tool_version != __version__:
        out.append(f"recorded by version {run.tool_version or 'unknown'} (this is {__version__})")
    if run.prompt_hash != spec.prompt_hash:
        out.append(
            f"the text of prompt {spec.prompt_name!r} has changed since"
            if run.prompt_name == spec.prompt_name
            else f"another prompt text (recorded as {run.prompt_name!r})"
        )
    if run.suite_path != spec.suite_path:
        out.append(f"another suite folder ({run.suite_path})")
    elif run.suite_hash != spec.suite_hash:
        out.append("other cases (the suite changed since, or --apps, --limit or --filter differ)")
    then, now = run.settings.as_dict(), spec.settings.as_dict()
    for key in (*REQUEST_SETTINGS, *OPTIONAL_REQUEST_SETTINGS):
        if key != "base_url" and then.get(key) != now.get(key):
            out.append(f"{key} {then.get(key)!r} then, {now.get(key)!r} now")
    if then.get("repeats", 1) != spec.repeats:
        out.append(f"repeats {then.get('repeats', 1)!r} then, {spec.repeats} now")
    if str(then.get("base_url") or "").rstrip("/") != str(now.get("base_url") or "").rstrip("/"):
        out.append("another endpoint (--base-url)")
    return out or ["recorded with settings this version keys differently (an older version)"]


@dataclass(frozen=True)
class MatrixEvent:
    """An event of the run in the plan's `slot` (the run id arrives with its `RunStarted`)."""

    slot: int
    event: Event


@dataclass(frozen=True)
class _Failed:
    slot: int
    error: BaseException


class Matrix:
    """The runs of a plan. Iterate `events()` once; `stop()` stops every run cleanly, giving
    the requests in flight `stop_grace` seconds before cancelling them."""

    def __init__(
        self,
        runs: Sequence[PlannedRun],
        store: Store,
        stop_grace: float = STOP_GRACE,
        sharing: Sharing | None = None,
    ) -> None:
        self.runs = list(runs)
        limits: dict[str, AdaptiveLimit] = {}
        paces: dict[str, SharedPace] = {}  # workers: each model's rate, in the database
        for run in self.runs:
            limits.setdefault(run.model, AdaptiveLimit(run.spec.concurrency))
            if sharing is not None:
                paces.setdefault(run.model, SharedPace(store, run.model))
        self.limits = limits
        self.stop_grace = stop_grace
        self.engines = [
            Engine(
                run.spec,
                run.provider,
                store,
                limit=limits[run.model],
                stop_grace=stop_grace,
                rank=slot,
                batching=run.batching,
                sharing=sharing,
                pace=paces.get(run.model),
            )
            for slot, run in enumerate(self.runs)
        ]
        for slot, run in enumerate(self.runs):  # a model's runs take turns, in plan order
            limits[run.model].enroll(slot)
        self.finished: dict[int, RunFinished] = {}  # by slot

    def stop(self, message: str | None = None, summary: bool = True) -> None:
        """Every run stops (`Engine.stop`); `summary=False`: without their figures."""
        for engine in self.engines:
            engine.stop(message, summary=summary)

    @property
    def stopping(self) -> bool:
        return any(engine.stopping for engine in self.engines)

    def _stop_model(self, slot: int, finished: RunFinished) -> None:
        """One run of a model aborted: its other runs would meet the same fault."""
        model = self.runs[slot].model
        for other, engine in enumerate(self.engines):
            if other != slot and self.runs[other].model == model:
                engine.stop(f"{model}: run {finished.run_id} aborted ({finished.message})")

    async def _drive(self, slot: int, queue: asyncio.Queue[MatrixEvent | _Failed | None]) -> None:
        try:
            async for event in self.engines[slot].events():
                if isinstance(event, RunFinished):
                    self.finished[slot] = event
                    if event.status is RunStatus.ABORTED:
                        self._stop_model(slot, event)
                await queue.put(MatrixEvent(slot, event))
        except Exception as exc:  # the run could not start (the database, most likely)
            await queue.put(_Failed(slot, exc))
        finally:
            # ended without handing out its cases (failed, stopped, all reused): the model's
            # next run must not wait for it
            await self.engines[slot].limit.withdraw(slot)
            await queue.put(None)

    async def events(self) -> AsyncIterator[MatrixEvent]:
        """Every run's events as they come; raises the first run that could not start."""
        if len(self.engines) == 1:  # one run: its events as they are, no queue between
            async for event in self.engines[0].events():
                if isinstance(event, RunFinished):
                    self.finished[0] = event
                yield MatrixEvent(0, event)
            return
        queue: asyncio.Queue[MatrixEvent | _Failed | None] = asyncio.Queue()
        tasks = [
            asyncio.create_task(self._drive(slot, queue), name=f"run-{slot}")
            for slot in range(len(self.engines))
        ]
        remaining, failure = len(tasks), None
        try:
            while remaining:
                item = await queue.get()
                if item is None:
                    remaining -= 1
                elif isinstance(item, _Failed):
                    failure = failure or item.error
                    self.stop(f"another run could not start: {item.error}")
                else:
                    yield item
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if failure is not None:
            raise failure
