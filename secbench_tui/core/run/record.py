"""A run's record in the store: opened (or reopened to resume), what it kept from before, its
summary at the end.

A run is found again by its fingerprint (`RunSpec.fingerprint`), or by the one it was written
under when its prompt's name was part of the key (`legacy_names`). The store is seen through
`RunBook`, the few methods this needs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from secbench_tui import __version__
from secbench_tui.core.models import (
    RecordedSettings,
    RunStatus,
)
from secbench_tui.core.results.figures import run_figures_of
from secbench_tui.core.results.metrics import usage_stats
from secbench_tui.core.results.summary import BatchFigures, RunSummary
from secbench_tui.core.run.events import Earlier
from secbench_tui.core.run.spec import CONTENT_KEYED, RunSpec
from secbench_tui.core.store.rows import ResultRow


class PromptNames(Protocol):
    async def names_of_prompt(self, prompt_hash: str) -> list[str]: ...


class RunBook(PromptNames, Protocol):
    """What a run's record needs of the store."""

    async def create_run(
        self,
        *,
        model: str,
        suite_kind: str,
        suite_path: str,
        suite_hash: str,
        prompt_hash: str,
        settings: RecordedSettings,
        fingerprint: str,
        tool_version: str,
        total_cases: int,
        prompt_name: str | None = None,
    ) -> int: ...

    async def reopen_run(self, run_id: int, total_cases: int) -> None: ...

    async def mark_started(self, run_id: int) -> None: ...

    async def finish_run(
        self, run_id: int, status: RunStatus, message: str | None = None
    ) -> None: ...

    async def latest_run(
        self, fingerprint: str | Sequence[str], unfinished: bool = True
    ) -> int | None: ...

    async def finished_keys(
        self, run_id: int, include_errors: bool = True
    ) -> set[tuple[str, int]]: ...

    async def spent(self, run_id: int) -> float: ...

    async def run_results(self, run_id: int, with_text: bool = True) -> list[ResultRow]: ...


async def legacy_names(spec: RunSpec, store: PromptNames) -> list[str]:
    """The names this prompt's text was recorded under by versions that keyed reuse and resume
    on a prompt's name as well (schema 3 to 8): their keys are found under those names."""
    if not spec.prompt_hash:
        return []
    return [n for n in await store.names_of_prompt(spec.prompt_hash) if n != CONTENT_KEYED]


async def latest_run(spec: RunSpec, store: RunBook, unfinished: bool = True) -> int | None:
    """The newest run of this spec (only unfinished ones if asked), whatever name its prompt
    was recorded under."""
    names = await legacy_names(spec, store)
    prints = [spec.fingerprint, *(spec.fingerprint_named(n) for n in names)]
    return await store.latest_run(prints, unfinished=unfinished)


def recorded_settings(spec: RunSpec) -> RecordedSettings:
    """The settings the run records (`runs.settings`): the spec's, with what the engine adds."""
    return spec.settings.model_copy(
        update={
            "repeats": spec.repeats,
            "concurrency": spec.concurrency,
            "vdb_scoring": spec.vdb_scoring,
            **({"batch": spec.batch} if spec.batch else {}),
        }
    )


async def open_run(spec: RunSpec, store: RunBook) -> tuple[int, bool]:
    """The run's id, and True when it is an earlier run reopened (`--resume`,
    `--retry-errors`); otherwise a new run is recorded."""
    if spec.resume or spec.retry_errors:
        run_id = await latest_run(spec, store, unfinished=not spec.retry_errors)
        if run_id is not None:
            await store.reopen_run(run_id, len(spec.cases) * spec.repeats)
            return run_id, True
    run_id = await store.create_run(
        model=spec.model,
        suite_kind=spec.suite_kind,
        suite_path=spec.suite_path,
        suite_hash=spec.suite_hash,
        prompt_hash=spec.prompt_hash,
        settings=recorded_settings(spec),
        fingerprint=spec.fingerprint,
        tool_version=__version__,
        total_cases=len(spec.cases) * spec.repeats,
        prompt_name=spec.prompt_name,
    )
    return run_id, False


@dataclass(frozen=True)
class KeptBefore:
    """What a reopened run already holds: the cases not to ask again, by (case id, repeat),
    what its own requests cost, and the figures of what it kept."""

    done: set[tuple[str, int]] = field(default_factory=set)
    spent: float = 0.0
    earlier: Earlier | None = None


async def kept_before(spec: RunSpec, store: RunBook, run_id: int) -> KeptBefore:
    """What the reopened run `run_id` keeps; errors are asked again with `--retry-errors`."""
    done = await store.finished_keys(run_id, include_errors=not spec.retry_errors)
    kept = [
        row
        for row in await store.run_results(run_id, with_text=False)
        if (row["case_id"], row["repeat"]) in done
    ]
    earlier: Earlier = {
        "counts": dict(Counter(row["outcome"] for row in kept)),
        **usage_stats(kept),
    }
    return KeptBefore(done, await store.spent(run_id), earlier)


async def run_summary(spec: RunSpec, store: RunBook, run_id: int, wall: float) -> RunSummary:
    """The run's summary: its figures from its stored rows, by the one computation every
    front end reads (`figures.run_figures_of`); `wall`: seconds from its first request."""
    try:
        rows = await store.run_results(run_id, with_text=False)
    except Exception as exc:  # every result is already stored: report, do not fail
        rows = []
        summary_error: str | None = f"could not read the results back: {exc}"
    else:
        summary_error = None
    return run_figures_of(rows, recorded_settings(spec)).model_copy(
        update={
            "summary_error": summary_error,
            "wall_seconds": wall,
            "run_id": run_id,
            "model": spec.model,
            "prompt": spec.prompt_name,
            # the prices are the plan's, not the rows': what the run's tokens would cost
            **({"batch": batch_figures(spec, rows)} if spec.batch else {}),
        }
    )


def batch_figures(spec: RunSpec, rows: Sequence[ResultRow]) -> BatchFigures:
    """`--batch`: the tokens the run used, at the live price and at the batch price."""
    tokens_in = sum(int(row["prompt_tokens"] or 0) for row in rows)
    tokens_out = sum(int(row["completion_tokens"] or 0) for row in rows)

    def at(price: tuple[float, float] | None) -> float | None:
        if price is None:
            return None
        return (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000

    return BatchFigures(
        protocol=spec.batch or "", live_price=at(spec.live_price), batch_price=at(spec.batch_price)
    )
