"""The plan: every run of the matrix, made once from the settings and the model catalog.

`plan(settings, catalog)` is the one planner. The headless runner and the app's run screen run
its cells (`lifecycle.MatrixRun`), `--dry-run` prints it and the app's setup screen shows its
estimate, so what is estimated, what is refused and what is sent cannot drift apart. The
catalog is read once per command (`catalog_for`) and passed in; nothing here asks the network
or opens the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from secbench_tui.config import RunSettings, Settings
from secbench_tui.core.lint.report import LeakCheck
from secbench_tui.core.models import SuiteKind
from secbench_tui.core.run.catalog import Catalog, Fetch, read_catalog
from secbench_tui.core.run.context import Overflow, context_overflows
from secbench_tui.core.run.engine import RunSpec
from secbench_tui.core.run.estimate import Estimate, estimate
from secbench_tui.core.run.providers.baselines import is_baseline
from secbench_tui.core.store.database import Store
from secbench_tui.core.verify.stopping import Stop
from secbench_tui.errors import UsageError
from secbench_tui.planning.batching import price_batches
from secbench_tui.planning.cells import matrix_cells, remote_models
from secbench_tui.planning.leaks import check_leaks, leak_lines
from secbench_tui.planning.rewrites import Rewrites, prepare_rewrites, with_variants
from secbench_tui.planning.suites import LoadedSuite, load_suite

if TYPE_CHECKING:
    from secbench_tui.core.rewrites.progress import Proving


@dataclass(frozen=True)
class PlannedCell:
    """One run of the matrix as planned: its settings (with what the catalog decided for its
    model) and its spec (its cases and everything the run records)."""

    settings: RunSettings
    spec: RunSpec

    @property
    def model(self) -> str:
        return self.spec.model


@dataclass(frozen=True)
class Plan:
    """The runs one `Settings` asks for, in matrix order (model, then prompt or method), and
    what is known about them before anything is sent."""

    settings: Settings
    catalog: Catalog  # what the plan was made with: the estimate prices from it
    cells: tuple[PlannedCell, ...]
    skipped: tuple[str, ...]  # the suite's files that were skipped, and why (said once)
    rewrites: Rewrites | None  # what --rewrites made, proved and dropped
    overflows: tuple[Overflow, ...]  # runs whose largest request exceeds the model's context
    leak: LeakCheck | None = None  # the suite's surface cues, found before the run

    def leak_lines(self) -> list[str]:
        """What a front end says before the run when the suite's labels leak."""
        return leak_lines(self.leak)

    @property
    def refused(self) -> tuple[Overflow, ...]:
        """What a run refuses before sending anything: every overflow, unless `--force`."""
        return () if self.settings.force else self.overflows

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(c.model for c in self.cells))

    @property
    def prompts(self) -> list[str]:
        return list(dict.fromkeys(c.spec.prompt_name for c in self.cells))

    async def estimate(self, store: Store | None) -> Estimate:
        """What the runs would ask (after reuse of what `store` holds), in tokens and cost."""
        specs = [c.spec for c in self.cells]
        return await estimate(specs, self.settings.sent_max_tokens, self.catalog, store)


def plan(
    settings: Settings,
    catalog: Catalog,
    stop: Stop | None = None,
    progress: Callable[[Proving], None] | None = None,
) -> Plan:
    """The plan of `settings`: each cell's settings and cases, the variants of `--rewrites`,
    and the requests too large for their model. Raises `UsageError` for a flag, a file or a
    suite that cannot work. Reads suite files (and proves rewrites on PostgreSQL): front ends
    on an event loop call it in a thread; `stop` ends the proving at once (Stopped);
    `progress` hears how far the proving is."""
    cells = matrix_cells(settings, catalog)
    suites = load_suites(cells)
    leak = check_leaks(suites.values(), settings.apps)
    rewrites = rewrite_suites(settings, list(suites.values()), stop, progress)
    planned = tuple(
        PlannedCell(one, build_spec(one, suites[_suite_key(one)], rewrites)) for one in cells
    )
    specs = [c.spec for c in planned]
    price_batches(specs, catalog)
    contexts = {m: _context(catalog, m) for m in remote_models([s.model for s in specs])}
    return Plan(
        settings=settings,
        catalog=catalog,
        cells=planned,
        skipped=tuple(next(iter(suites.values())).skipped),
        rewrites=rewrites,
        overflows=tuple(context_overflows(specs, contexts)),
        leak=leak,
    )


def _context(catalog: Catalog, model: str) -> int | None:
    info = catalog.find(model)
    return info.context_length if info is not None else None


def load_suites(cells: list[RunSettings]) -> dict[tuple[str | None, str | None], LoadedSuite]:
    """The suite of every prompt (or method), loaded once; every prompt folder's skipped
    files are said with whichever run starts first."""
    suites: dict[tuple[str | None, str | None], LoadedSuite] = {}
    notes = list(dict.fromkeys(note for one in cells if one.prompt for note in one.prompt.notes))
    for one in cells:
        if _suite_key(one) not in suites:
            suite = suites[_suite_key(one)] = load_suite(one)
            suite.skipped = [*notes, *(s for s in suite.skipped if s not in notes)]
    return suites


def _suite_key(one: RunSettings) -> tuple[str | None, str | None]:
    """Runs with the same prompt (or method) ask the same cases: the suite is loaded once."""
    return (one.prompt.name if one.prompt else None, one.method)


def rewrite_suites(
    settings: Settings,
    suites: list[LoadedSuite],
    stop: Stop | None = None,
    progress: Callable[[Proving], None] | None = None,
) -> Rewrites | None:
    """`--rewrites`: the variants of the first suite's cases, proven, added to every suite."""
    if not settings.rewrites:
        return None
    first = suites[0]
    if first.kind is not SuiteKind.MARKDOWN:
        raise UsageError(
            "--rewrites applies to markdown suites (SQL and Python cases); "
            f"{first.root} is a VulDetectBench folder"
        )
    rewrites = prepare_rewrites(settings, first.cases, first.root, stop, progress)
    for suite in suites:
        suite.cases = with_variants(suite.cases, rewrites)
    return rewrites


def build_spec(one: RunSettings, suite: LoadedSuite, rewrites: Rewrites | None = None) -> RunSpec:
    """What a cell's run is and records: its cases, its recorded settings, its keys."""
    baseline = is_baseline(one.model)
    recorded = one.recorded(
        vuldetectbench=suite.kind is SuiteKind.VULDETECTBENCH, baseline=baseline
    )
    if rewrites is not None:
        recorded = recorded.model_copy(update={"rewrites": rewrites.recorded()})
    if suite.leak is not None:
        recorded = recorded.model_copy(update={"leak": suite.leak})
    return RunSpec(
        model=one.model,
        cases=suite.cases,
        suite_kind=suite.kind.value,
        suite_path=str(suite.root.resolve()),
        settings=recorded,
        prompt_hash=suite.prompt_hash,
        prompt_name=suite.prompt_name,
        repeats=one.repeats,
        concurrency=one.concurrency,
        resume=one.resume,
        force=one.force,
        retry_errors=one.retry_errors,
        max_cost=one.max_cost,
        vdb_scoring=one.vdb_scoring,
        skipped=tuple(suite.skipped),
        base_url=None if baseline else one.base_url,
        batch=None if baseline else one.batch_protocol,
    )


async def catalog_for(
    settings: Settings, *, directory: Path | None = None, offline: bool = False
) -> Catalog:
    """The catalog a plan of `settings` needs, read once for the command.

    A run needs its remote models' entries (does one reason? how large is its context?):
    the cache answers when it lists them all, else one `GET /models` for the whole matrix.
    `--dry-run` prices the plan, so it asks for the list as it is now. Nothing is asked when
    nothing would be read (baselines only; `--max-tokens` or the original request style
    with `--force`), nor `offline` (the app's snapshots).
    """
    remote = remote_models(settings.models)
    decided = settings.original_request or settings.max_tokens is not None
    wanted = [] if decided and settings.force and not settings.dry_run else remote
    fetch: Fetch = "always" if settings.dry_run else "missing"
    return await read_catalog(
        settings.base_url,
        fetch="never" if offline or not wanted else fetch,
        wanted=wanted,
        directory=directory,
        timeout=min(settings.attempt_timeout, 10.0),
    )
