"""One run lifecycle for every front end: resolve, plan, open the store, run the matrix, end.

`--no-ui` and the app's run screen both go through `MatrixRun`, so a run started from either is
the same run: what each model's catalog entry decides (`planner.resolve_matrix_defaults`), one
run per model x prompt (`planner.plan_matrix`), the store opened (or the app's own, kept open),
the runs of the matrix driven together (`core.run.matrix.Matrix`), and every run's end, in plan
order. The front ends only watch the events and decide what to show and how to exit.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from secbench_tui.config import Settings
from secbench_tui.core.run.events import RunFinished
from secbench_tui.core.run.matrix import Matrix, MatrixEvent, PlannedRun
from secbench_tui.core.store.database import Store
from secbench_tui.planner import Plan, context_refusals, plan_matrix, resolve_matrix_defaults
from secbench_tui.results_db import open_results

if TYPE_CHECKING:
    from secbench_tui.core.run.context import Overflow

GIL_SWITCH = 0.0005  # seconds: sys.setswitchinterval while runs go on (see MatrixRun.events)


class MatrixRun:
    """The runs one `Settings` asks for, from plan to end. Use it once:

        run = MatrixRun(settings)
        plan = await run.plan()      # UsageError: a flag or file is wrong
        await run.refusals()         # requests larger than a model's context: not sent
        await run.open_store()       # DatabaseError: --db is unusable
        async for tagged in run.events(): ...
        run.finished                 # every run's end, in plan order

    `stop()` may come at any time, even before the runs exist; `events()` closes the
    providers (and the store, unless it is the caller's `shared_store`) however it ends.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        shared_store: Callable[[], Awaitable[Store]] | None = None,
        cache_dir: Path | None = None,
        fetch_catalog: bool = True,
    ) -> None:
        self.settings = settings
        self.store: Store | None = None
        self._shared_store = shared_store  # the caller's (the app's), left open at the end
        self.cache_dir = cache_dir
        self.fetch_catalog = fetch_catalog
        self.matrix: Matrix | None = None
        self._plan: Plan | None = None
        self._stop: tuple[str | None] | None = None  # a stop asked before the runs existed
        self._closed = False

    @property
    def runs(self) -> list[PlannedRun]:
        return self._plan.runs if self._plan else []

    async def plan(self) -> Plan:
        """What each model's catalog entry decides, then one planned run per cell."""
        if self._plan is None:
            resolved = await resolve_matrix_defaults(
                self.settings, self.cache_dir, fetch=self.fetch_catalog
            )
            plan = await asyncio.to_thread(plan_matrix, self.settings, True, resolved)
            self._plan = plan
            return plan
        return self._plan

    async def refusals(self) -> list[Overflow]:
        """Runs whose largest request is more than the model's context, by its catalog entry:
        refused before anything is sent (none with `--force`)."""
        if self.settings.force:
            return []
        plan = await self.plan()
        return await context_refusals(self.settings, plan, self.cache_dir, fetch=self.fetch_catalog)

    async def open_store(self) -> Store:
        if self.store is None:
            try:
                if self._shared_store is not None:
                    self.store = await self._shared_store()
                else:
                    self.store = await open_results(self.settings.db, create=True)
            except BaseException:
                await self.aclose()
                raise
        return self.store

    async def events(self) -> AsyncIterator[MatrixEvent]:
        """Every run's events as they come (see `Matrix.events`), then everything closed.

        While the runs go on, the interpreter hands the GIL to a waiting thread after
        `GIL_SWITCH` seconds instead of 5 ms: SQLite works in aiosqlite's thread, and the
        event loop's thread (parsing replies; in the app, drawing too) would otherwise keep
        each committed row waiting up to 5 ms before the loop hears of it."""
        switch = sys.getswitchinterval()
        sys.setswitchinterval(min(switch, GIL_SWITCH))
        try:
            plan = await self.plan()
            store = await self.open_store()
            self.matrix = Matrix(plan.runs, store, stop_grace=self.settings.stop_grace)
            if self._stop is not None:
                self.matrix.stop(self._stop[0])
            async for tagged in self.matrix.events():
                yield tagged
        finally:
            sys.setswitchinterval(switch)
            await self.aclose()

    def stop(self, message: str | None = None) -> None:
        """Start no new case; the cases in flight get their grace (the engine's)."""
        if self.matrix is not None:
            self.matrix.stop(message)
        elif self._stop is None:
            self._stop = (message,)

    @property
    def finished(self) -> list[RunFinished]:
        """How each run ended, in plan order (a run that never started is left out)."""
        done = self.matrix.finished if self.matrix else {}
        return [done[slot] for slot in sorted(done)]

    async def aclose(self) -> None:
        """Close the providers, and the store when this run opened it; once."""
        if self._closed:
            return
        self._closed = True
        if self._plan is not None:
            await self._plan.aclose()
        if self._shared_store is None and self.store is not None:
            await self.store.close()
