"""`secbench-tui --rescore`: score the stored replies again after a change to scoring.

No request is sent and no key is read: every figure is recomputed from the raw replies in the
database (`core/results/regrading.py`), then the counts of what changed are printed. `--runs`
and `--models` select the runs as they do for `--report` and `--export`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from secbench_tui.core.results.regrading import RescoreReport, rescore
from secbench_tui.core.results.report.selection import unknown_models
from secbench_tui.errors import say_error
from secbench_tui.exit_codes import EXIT_OK, EXIT_USAGE
from secbench_tui.results_db import DatabaseError, open_results


async def _rescore_main(db: Path, runs: Sequence[int], models: Sequence[str]) -> int:
    try:
        store = await open_results(db, create=False, runs=runs)
    except DatabaseError as exc:
        say_error(exc)
        return exc.exit_code
    try:
        if models:  # as --report and --export take them: each must have a run there
            every = await store.runs()
            unknown = unknown_models(models, [r.model_name for r in every], db)
            if unknown:
                say_error(unknown)
                return EXIT_USAGE
            runs = [r.id for r in every if r.model_name in models and (not runs or r.id in runs)]
        # no run of the models among --runs: nothing to rescore (no runs at all means all)
        report = await rescore(store, runs) if runs or not models else RescoreReport()
    finally:
        await store.close()
    print(report.text())
    return EXIT_OK


def rescore_main(db: Path, runs: Sequence[int] | None, models: Sequence[str] | None = None) -> int:
    """Entry point of `--rescore`: 0 when done; 2 when --db names no database, --runs a run
    it does not hold or --models a model with no run there, 3 when it cannot be used (as for
    every command: `results_db`)."""
    return asyncio.run(_rescore_main(db, runs or (), models or ()))
