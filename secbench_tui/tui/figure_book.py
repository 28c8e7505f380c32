"""The figures the app shows for stored runs, each run's computed once for the results it has.

Every figure the app shows of a stored run (the runs table's accuracy, P-C and right reason,
the comparison grid's pass rate and case count) comes from the one computation every front end
reads (`core.results.figures.run_figures_of`), without the intervals and chance levels those
tables do not show. The app keeps one book for the session: a run's figures are computed again
only when it has more results than when they were taken.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from secbench_tui.core.results.figures import run_figures_of
from secbench_tui.core.results.summary import RunSummary
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.runs import RunRecord


class RunAnswers(Protocol):
    """What the book reads: a run's stored answers."""

    async def run_results(self, run_id: int, with_text: bool = True) -> list[ResultRow]: ...


class FigureBook:
    """Each stored run's figures, by run id, with the count of results they were taken from."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[int, RunSummary]] = {}

    def get(self, run: RunRecord) -> RunSummary | None:
        """The run's figures for the results it has now; None until they are computed."""
        known = self._known.get(run.id)
        return known[1] if known is not None and known[0] == run.finished else None

    def missing(self, runs: Sequence[RunRecord]) -> list[RunRecord]:
        return [run for run in runs if self.get(run) is None]

    async def read(self, store: RunAnswers, runs: Sequence[RunRecord]) -> None:
        """Compute the figures of those of `runs` whose results changed since (in a thread:
        the screen keeps drawing meanwhile)."""
        for run in self.missing(runs):
            rows = await store.run_results(run.id, with_text=False)
            figures = await asyncio.to_thread(run_figures_of, rows, run.settings, intervals=False)
            self._known[run.id] = (run.finished, figures)
