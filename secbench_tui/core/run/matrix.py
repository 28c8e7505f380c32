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

from secbench_tui.core.models import RunStatus
from secbench_tui.core.run.engine import STOP_GRACE, AdaptiveLimit, Engine, RunSpec, latest_run
from secbench_tui.core.run.events import Event, RunFinished
from secbench_tui.core.run.providers.base import Provider
from secbench_tui.core.store.database import Store


@dataclass(frozen=True)
class PlannedRun:
    """One cell of the matrix: a model with one prompt (one method), and who answers it."""

    spec: RunSpec
    provider: Provider

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
        self, runs: Sequence[PlannedRun], store: Store, stop_grace: float = STOP_GRACE
    ) -> None:
        self.runs = list(runs)
        limits: dict[str, AdaptiveLimit] = {}
        for run in self.runs:
            limits.setdefault(run.model, AdaptiveLimit(run.spec.concurrency))
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
            )
            for slot, run in enumerate(self.runs)
        ]
        for slot, run in enumerate(self.runs):  # a model's runs take turns, in plan order
            limits[run.model].enroll(slot)
        self.finished: dict[int, RunFinished] = {}  # by slot

    def stop(self, message: str | None = None) -> None:
        for engine in self.engines:
            engine.stop(message)

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
