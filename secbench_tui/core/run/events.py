"""The events a run emits. The headless runner prints them; the terminal app renders them."""

from __future__ import annotations

from dataclasses import dataclass, field

from secbench_tui.core.models import Case, Evaluation, RunStatus
from secbench_tui.core.results.metrics import UsageStats
from secbench_tui.core.results.summary import RunSummary
from secbench_tui.core.run.providers.base import RetryNotice


class Earlier(UsageStats):
    """What a resumed run keeps from before: outcome counts, and the usage of those cases
    (`results.metrics.usage_stats`)."""

    counts: dict[str, int]


@dataclass(frozen=True)
class RunStarted:
    run_id: int
    model: str
    total: int
    pending: int
    reused: int
    resumed: bool
    concurrency: int
    skipped: tuple[str, ...] = ()
    # what a resumed run keeps from before: outcome counts, tokens and cost of those cases
    earlier: Earlier | None = None  # None for a run started afresh
    prompt: str = ""  # the evaluation prompt's name


@dataclass(frozen=True)
class CaseStarted:
    run_id: int
    case: Case
    index: int
    repeat: int


@dataclass(frozen=True)
class CaseFinished:
    """A case's result, stored, yielded the moment it is: `done` counts the finished cases so
    far, `position` is the case's place in the run (case index x repeats + repeat), since cases
    finish in whatever order their answers come back."""

    run_id: int
    evaluation: Evaluation
    done: int
    total: int
    position: int = 0


@dataclass(frozen=True)
class Retrying:
    """The client waits before asking again; `limit` is the concurrency now in force."""

    run_id: int
    notice: RetryNotice
    limit: int


@dataclass(frozen=True)
class BatchView:
    """One batch of a run as the last poll found it (`--batch`): the provider's status and
    counts, how long since it was sent, and when it is polled next."""

    batch_id: int  # the store's
    provider_id: str | None  # the provider's (None until it accepted the batch)
    status: str  # the provider's own word: validating, in_progress, completed, ended...
    requests: int  # what this run waits for in it
    completed: int = 0
    failed: int = 0
    elapsed: float = 0.0  # seconds since it was sent
    next_poll: float | None = None  # seconds until it is polled again; None once it is read
    note: str | None = None  # why the last poll failed, when it did
    read: bool = False  # every result stored


@dataclass(frozen=True)
class BatchProgress:
    """The run waits on the provider: its batches, after a poll (`--batch`)."""

    run_id: int
    batches: tuple[BatchView, ...]


@dataclass(frozen=True)
class RunFinished:
    run_id: int
    status: RunStatus  # completed | stopped | aborted
    message: str | None
    summary: RunSummary = field(default_factory=RunSummary)


Event = RunStarted | CaseStarted | CaseFinished | Retrying | BatchProgress | RunFinished
