"""Work on PostgreSQL after a headless run: its fixes verified (`--task fix`) or its findings
proven (`--prove-findings`), each run's summary then given the figures that work found.

One path for both: the store opened again, the work done on the finished runs, what it did said
on stderr, and a failure said with the way to finish later (the results stay stored)."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Protocol

from secbench_tui.core.models import RunStatus
from secbench_tui.core.run.events import RunFinished
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.location import StoreLocation
from secbench_tui.errors import say_error
from secbench_tui.results_db import DatabaseError, open_results


class Checked(Protocol):
    """What the work reports: each run's new figures, and an error that ended it."""

    @property
    def summaries(self) -> Mapping[int, object]: ...

    @property
    def error(self) -> str | None: ...

    def line(self) -> str: ...


async def check_finished(
    db: StoreLocation,
    finished: list[RunFinished],
    *,
    doing: str,
    later: str,
    figure: str,
    work: Callable[[Store, list[int]], Awaitable[Checked]],
) -> tuple[list[RunFinished], bool]:
    """`work` on the runs of `finished` that were not aborted; the runs with their summaries'
    `figure` set from it, and whether it failed (said on stderr with `later`, the way to do
    it later). `doing`: what it does, as the first line says it."""
    run_ids = [done.run_id for done in finished if done.status is not RunStatus.ABORTED]
    print(f"{doing} of {len(run_ids)} run(s) on PostgreSQL", file=sys.stderr)
    try:
        store = await open_results(db, create=False)
    except DatabaseError as exc:
        say_error(exc)
        return finished, True
    try:
        checked = await work(store, run_ids)
    finally:
        await store.close()
    if checked.error is not None:
        say_error(f"{checked.line()}; the results are stored in {db}: {later}")
    else:
        print(checked.line(), file=sys.stderr, flush=True)
    shown = [
        replace(done, summary=done.summary.model_copy(update={figure: found}))
        if (found := checked.summaries.get(done.run_id)) is not None
        else done
        for done in finished
    ]
    return shown, checked.error is not None
