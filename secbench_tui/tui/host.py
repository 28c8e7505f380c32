"""What a screen may ask of the app: the session's store, where caches go, whether a run is
on, and starting a run. Screens reach the app through this protocol, never by importing
`tui.app` (which imports every screen): the dependency points one way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from secbench_tui.config import Settings
from secbench_tui.core.run.catalog import Catalog
from secbench_tui.core.store.database import Store
from secbench_tui.tui.figure_book import FigureBook


@dataclass(frozen=True)
class Intervals:
    """How often the screens look again, in seconds. Made once and given to `make_app`, so a
    test makes them short instead of waiting them out."""

    tick: float = 1.0  # the run screen's clock: elapsed time, ETA, in flight, a retry's wait
    # What the engine reports is drawn at this pace (`tui.engine_thread.Gathered`): drawing
    # every case as it comes (tens a second) kept the app's loop busy most of the time, when
    # the engine shared that loop every request waited for a drawing to end before its reply
    # was read (the run took 1.3x as long as headless). Cases started and finished are
    # gathered and drawn together; a run's start, a retry and a run's end are drawn at once
    # (after what was gathered).
    draw: float = 0.25
    current: float = 1.0  # the current case's code is drawn again at most this often
    follow: float = 2.0  # the results look at the database while a run is active
    search: float = 0.25  # the results search waits this long after a key for the next one


@runtime_checkable
class Host(Protocol):
    cache_dir: Path | None  # None: $XDG_CACHE_HOME/secbench-tui
    offline_catalog: bool  # True: never ask GET /models (snapshots)
    clock: Callable[[], float]  # what run screens time with (the snapshots freeze it)
    intervals: Intervals  # how often screens look again (tests make them short)
    figures: FigureBook  # each stored run's figures, as every front end computes them
    marked: set[int]  # the runs marked with space on the results screen, for the session

    async def store(self) -> Store:
        """The session's database, opened on first use (raises StoreError with the fix)."""
        ...

    @property
    def run_active(self) -> bool: ...

    def start_run(self, settings: Settings, catalog: Catalog | None = None) -> None:
        """The runs of `settings`, planned with `catalog` (the one the estimate priced;
        None: the run reads it)."""
        ...

    def action_compare(self) -> None:
        """Open the case x run grid of the runs marked (or the latest of each model)."""
        ...

    def action_diff(self) -> None:
        """Open the cases that flipped between two runs."""
        ...
