"""`secbench-tui --rescore`: score the stored replies again after a change to scoring.

No request is sent and no key is read: every figure is recomputed from the raw replies in the
database (`core/results/regrading.py`), then the counts of what changed are printed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from secbench_tui.core.results.regrading import rescore
from secbench_tui.errors import say_error
from secbench_tui.exit_codes import EXIT_OK
from secbench_tui.results_db import DatabaseError, open_results


async def _rescore_main(db: Path, runs: Sequence[int]) -> int:
    try:
        store = await open_results(db, create=False, runs=runs)
    except DatabaseError as exc:
        say_error(exc)
        return exc.exit_code
    try:
        report = await rescore(store, runs)
    finally:
        await store.close()
    print(report.text())
    return EXIT_OK


def rescore_main(db: Path, runs: Sequence[int] | None) -> int:
    """Entry point of `--rescore`: 0 when done; 2 when --db names no database or --runs a run
    it does not hold, 3 when it cannot be used (as for every command: `results_db`)."""
    return asyncio.run(_rescore_main(db, runs or ()))
