"""What a screen may ask of the app: the session's store, where caches go, whether a run is
on, and starting a run. Screens reach the app through this protocol, never by importing
`tui.app` (which imports every screen): the dependency points one way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

from secbench_tui.config import Settings
from secbench_tui.core.store.database import Store


@runtime_checkable
class Host(Protocol):
    cache_dir: Path | None  # None: $XDG_CACHE_HOME/secbench-tui
    offline_catalog: bool  # True: never ask GET /models (snapshots)
    clock: Callable[[], float]  # what run screens time with (the snapshots freeze it)

    async def store(self) -> Store:
        """The session's database, opened on first use (raises StoreError with the fix)."""
        ...

    @property
    def run_active(self) -> bool: ...

    def start_run(self, settings: Settings) -> None: ...

    def action_compare(self) -> None:
        """Open the case x run grid of the runs marked (or the latest of each model)."""
        ...

    def action_diff(self) -> None:
        """Open the cases that flipped between two runs."""
        ...
