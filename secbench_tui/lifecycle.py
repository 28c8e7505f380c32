"""One run lifecycle for every front end: a plan's runs, from the store opened to every end.

`--no-ui` and the app's run screen both go through `MatrixRun`, so a run started from either is
the same run: the plan made once (`planning.plan.plan`), one provider per model, the store
opened (on the runs' event loop), the runs of the matrix driven together
(`core.run.matrix.Matrix`), and every run's end, in plan order. The front ends only watch the
events and decide what to show and how to exit.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable

from secbench_tui.config import RunSettings
from secbench_tui.core.run.batch import make_protocol
from secbench_tui.core.run.batch.polling import PollTimer
from secbench_tui.core.run.batch.runner import Batching
from secbench_tui.core.run.events import RunFinished
from secbench_tui.core.run.matrix import Matrix, MatrixEvent, PlannedRun
from secbench_tui.core.run.providers.base import Provider, RunAborted
from secbench_tui.core.run.providers.baselines import BaselineProvider, is_baseline
from secbench_tui.core.run.providers.openai_compat import ClientSettings, OpenAICompatibleProvider
from secbench_tui.core.run.sharing import Sharing
from secbench_tui.core.store.database import Store
from secbench_tui.core.suites.prompts import Reply
from secbench_tui.errors import UsageError
from secbench_tui.planning.plan import Plan
from secbench_tui.results_db import open_results

# Seconds: sys.setswitchinterval while runs go on (see MatrixRun.events). Kept because it pays
# where a user waits: the app's run of 80 cases at 100 ms latency, concurrency 4, took 4.6 s
# without it and 3.0-3.7 s with it (app / headless 1.98x against 1.37-1.55x; 2 CPUs, load
# average 14-16), and at 200 ms 4.93 s against 4.35 s (12%; load 6-7) with
# scripts/bench_app_overhead.py. Headless runs gain nothing measurable from it (bench_floor at
# 100 ms: 0.99x), and lose nothing.
GIL_SWITCH = 0.0005


class MatrixRun:
    """The runs of one plan, from the store opened to the end. Use it once:

        run = MatrixRun(plan)        # UsageError: no key for the endpoint
        await run.open_store()       # DatabaseError: --db is unusable
        async for tagged in run.events(): ...
        run.finished                 # every run's end, in plan order

    `stop()` may come at any time, even before the runs start; `events()` closes the
    providers and the store however it ends. The store is the run's own, opened on the event
    loop the runs go on (the app runs them on a loop of their own: its screens keep a store
    of their own on theirs); `on_notice` hears what opening it has to tell the user.
    """

    def __init__(self, plan: Plan, *, on_notice: Callable[[str], None] | None = None) -> None:
        self.plan = plan
        self.store: Store | None = None
        self._on_notice = on_notice
        self.matrix: Matrix | None = None
        self._stop: tuple[str | None, bool] | None = None  # a stop asked before the runs
        self._closed = False
        self._providers: dict[str, Provider] = {}
        self._batchings: dict[str, Batching | None] = {}  # --batch: each model's batch API
        # one per model; a missing key raises before any request, at the first model that
        # asks the endpoint (they share it), so no client is left open behind it
        for cell in plan.cells:
            if cell.model not in self._providers:
                self._providers[cell.model] = make_provider(cell.settings)
                self._batchings[cell.model] = make_batching(
                    cell.settings, self._providers[cell.model]
                )
        self.runs = [
            PlannedRun(c.spec, self._providers[c.model], self._batchings[c.model])
            for c in plan.cells
        ]

    def keep(self, runs: list[PlannedRun]) -> None:
        """Run only these of the plan's runs (`--resume`: the ones with a run to continue)."""
        kept = {id(run) for run in runs}
        self.runs = [run for run in self.runs if id(run) in kept]

    async def open_store(self) -> Store:
        if self.store is None:
            try:
                self.store = await open_results(
                    self.plan.settings.db, create=True, on_notice=self._on_notice
                )
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
            store = await self.open_store()
            settings = self.plan.settings
            sharing = (
                Sharing(settings.lease, settings.rate, settings.shared_concurrency)
                if settings.worker
                else None
            )
            self.matrix = Matrix(self.runs, store, stop_grace=settings.stop_grace, sharing=sharing)
            if self._stop is not None:
                self.matrix.stop(*self._stop)
            async for tagged in self.matrix.events():
                yield tagged
        finally:
            sys.setswitchinterval(switch)
            await self.aclose()

    def stop(self, message: str | None = None, summary: bool = True) -> None:
        """Start no new case; the cases in flight get their grace (the engine's).
        `summary=False`: the runs end without computing their figures (a quit)."""
        if self.matrix is not None:
            self.matrix.stop(message, summary)
        elif self._stop is None:
            self._stop = (message, summary)

    @property
    def finished(self) -> list[RunFinished]:
        """How each run ended, in plan order (a run that never started is left out)."""
        done = self.matrix.finished if self.matrix else {}
        return [done[slot] for slot in sorted(done)]

    async def aclose(self) -> None:
        """Close the providers and the store; once."""
        if self._closed:
            return
        self._closed = True
        for provider in self._providers.values():
            await provider.aclose()
        for batching in self._batchings.values():
            if batching is not None:
                await batching.protocol.aclose()
        if self.store is not None:
            await self.store.close()


def _reply(one: RunSettings) -> Reply:
    """What a run's requests ask for: the fix task's fix, verdict schema 3 for a prompt that
    asks for exploits, or else a verdict."""
    if one.task == "fix":
        return "fix"
    if one.prompt is not None and one.prompt.asks_exploits:
        return "exploit"
    return "verdict"


def make_provider(one: RunSettings, reply: Reply | None = None) -> Provider:
    """Who answers a cell's requests: an offline baseline, or the endpoint's client. `reply`:
    what the response_format asks for, when it is not the run's task's (`secbench-tui fix`
    asks for case proposals)."""
    model = one.model
    if is_baseline(model):
        return BaselineProvider(model, one.seed)
    client = ClientSettings(
        base_url=one.base_url,
        api_key=one.key,
        model=model,
        temperature=one.sent_temperature,
        max_tokens=one.sent_max_tokens,
        seed=one.seed,
        response_format=one.response_format,
        reply=reply or _reply(one),
        reasoning_effort=one.reasoning_effort,
        request_style=one.request_style,
        max_retries=one.max_retries,
        backoff_base=one.retry_backoff,
        timeout=one.attempt_timeout,
        concurrency=one.concurrency,
    )
    if client.is_openrouter and not client.api_key:
        raise UsageError(
            "no API key: set OPENROUTER_API_KEY in the environment or in .env "
            "(or use --base-url for a local server, or a baseline/* model offline)"
        )
    return OpenAICompatibleProvider(client)


def make_batching(one: RunSettings, provider: Provider) -> Batching | None:
    """`--batch`: the model's batch API, carrying the bodies its live provider would send and
    reading its results as that provider reads a reply; None when the cell is asked live (a
    baseline answers offline, with or without --batch)."""
    name = one.batch_protocol
    if name is None or not isinstance(provider, OpenAICompatibleProvider):
        return None
    try:
        headers = provider.headers()
    except RunAborted as exc:  # a key that cannot be sent in a header
        raise UsageError(str(exc)) from None
    protocol = make_protocol(
        name,
        base_url=one.base_url,
        model=one.model,
        headers=headers,
        key=one.key,
        timeout=one.attempt_timeout,
    )
    return Batching(protocol, provider, one.model, one.base_url, PollTimer(first=one.batch_poll))
