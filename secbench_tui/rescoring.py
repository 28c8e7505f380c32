"""`secbench-tui --rescore`: score the stored replies again after a change to scoring.

No request is sent and no key is read: every figure is recomputed from the raw replies in the
database (`core/results/regrading.py`), then the counts of what changed are printed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from secbench_tui.core.results.regrading import rescore
from secbench_tui.core.store.connection import StoreError
from secbench_tui.core.store.database import Store
from secbench_tui.errors import say_error
from secbench_tui.exit_codes import EXIT_FAILED, EXIT_OK


async def _rescore_main(db: Path, runs: Sequence[int]) -> int:
    try:
        store = await Store.open_existing(db, "give the file a run recorded its results in")
    except StoreError as exc:
        say_error(exc)
        return EXIT_FAILED
    try:
        report = await rescore(store, runs)
    finally:
        await store.close()
    print(report.text())
    return EXIT_OK


def rescore_main(db: Path, runs: Sequence[int] | None) -> int:
    """Entry point of `--rescore`: 0 when done, 1 when the database cannot be used."""
    return asyncio.run(_rescore_main(db, runs or ()))
