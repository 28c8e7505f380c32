"""Messages from the workers to the widgets that render them.

The engine can finish hundreds of cases a second (baselines, reused results); each would be a
message and a table update. `RowsArrived` therefore merges with a later one still waiting in
the queue (`can_replace`, as toolong coalesces its scan progress), so the screen adds rows in
batches at whatever rate it can draw, and no finished case is dropped.

A run screen may show several runs (models x prompts); the run messages carry the run's place
in the plan, `slot`, and merge only with messages of the same run.
"""

from __future__ import annotations

from textual.message import Message

from secbench_tui.core.run.catalog import Catalog
from secbench_tui.core.run.events import (
    BatchProgress,
    CaseFinished,
    CaseStarted,
    Retrying,
    RunFinished,
    RunStarted,
)
from secbench_tui.core.run.matrix import PlannedRun


class RunPlanned(Message):
    """The runs of the matrix are planned (from the engine's thread): one row each."""

    def __init__(self, runs: list[PlannedRun]) -> None:
        super().__init__()
        self.runs = runs


class RunBegan(Message):
    """The run has started (a resumed run's earlier cases are in `event.earlier`)."""

    def __init__(self, event: RunStarted, slot: int = 0) -> None:
        super().__init__()
        self.event = event
        self.slot = slot


class CaseBegan(Message):
    """Cases were sent; the latest one is the current case. The next `CaseBegan` right
    behind it absorbs its cases (every one counts as in flight)."""

    def __init__(self, event: CaseStarted, slot: int = 0) -> None:
        super().__init__()
        self.event = event
        self.slot = slot
        self.events = [event]

    def can_replace(self, message: Message) -> bool:
        if isinstance(message, CaseBegan) and message.slot == self.slot:
            message.events[:0] = self.events
            return True
        return False


class RowsArrived(Message):
    """Finished cases, in order. A later `RowsArrived` absorbs this one's rows."""

    def __init__(self, events: list[CaseFinished], slot: int = 0) -> None:
        super().__init__()
        self.events = events
        self.slot = slot

    def can_replace(self, message: Message) -> bool:
        if isinstance(message, RowsArrived) and message.slot == self.slot:
            message.events[:0] = self.events
            return True
        return False


class RetryWaiting(Message):
    """A request waits to be asked again. Never merged: the tally counts every retry."""

    def __init__(self, event: Retrying, slot: int = 0) -> None:
        super().__init__()
        self.event = event
        self.slot = slot


class BatchWaiting(Message):
    """A run's batches after a poll (`--batch`): the run waits on the provider."""

    def __init__(self, event: BatchProgress, slot: int = 0) -> None:
        super().__init__()
        self.event = event
        self.slot = slot


class RunEnded(Message):
    def __init__(self, event: RunFinished, slot: int = 0) -> None:
        super().__init__()
        self.event = event
        self.slot = slot


class ProvingRewrites(Message):
    """How far the proving of `--rewrites` is, before the runs start (one line; a newer one
    replaces an older one still queued)."""

    def __init__(self, line: str) -> None:
        super().__init__()
        self.line = line

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ProvingRewrites)


class RunFailed(Message):
    """The run could not start (bad settings, unusable database): say why, in words."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class CatalogLoaded(Message):
    def __init__(self, catalog: Catalog) -> None:
        super().__init__()
        self.catalog = catalog
