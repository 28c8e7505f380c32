"""The tally of a run as the app keeps it: progress, pace and ETA, outcomes, tokens and cost
so far; and one ETA for a whole matrix of runs. Plain data: the run screen's widgets draw it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from secbench_tui.core.models import Outcome
from secbench_tui.core.run.events import CaseFinished, Retrying, RunStarted

PACE_WINDOW = 20  # the ETA follows the pace of the last this-many answers


RunState = Literal["queued", "running", "done", "stopped", "aborted", "failed"]
ENDED_STATES: dict[str, RunState] = {
    "completed": "done",
    "stopped": "stopped",
    "aborted": "aborted",
    "interrupted": "stopped",
}


@dataclass
class RunTally:
    """The run so far: outcomes, tokens and cost count every finished case, as the summary
    does (reused ones included); the pace and the ETA count only the cases asked now.

    A run of a matrix may wait for its model's earlier runs (they share one concurrency
    limit): it is `queued` until its first case is asked (`begin`), and its elapsed time
    and pace count from then, not from when the matrix opened it."""

    clock: Callable[[], float] = time.monotonic
    total: int = 0
    done: int = 0
    pending: int = 0
    reused: int = 0
    asked: int = 0
    answered_at: deque[float] = field(default_factory=lambda: deque(maxlen=PACE_WINDOW + 1))
    counts: dict[str, int] = field(default_factory=lambda: {o.value: 0 for o in Outcome})
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    started: float | None = None
    ended: float | None = None
    concurrency: int = 1
    limit: int = 1
    retries: int = 0
    opened: bool = False  # its RunStarted came
    status: str | None = None  # how it ended (a RunStatus value), once it has

    def start(self, event: RunStarted) -> None:
        """A resumed run's earlier cases count like the rest, as the summary counts them."""
        self.opened = True
        self.total, self.pending, self.reused = event.total, event.pending, event.reused
        self.concurrency = self.limit = event.concurrency
        self.done = event.total - event.pending - event.reused  # reused ones arrive as cases
        earlier = event.earlier
        if earlier is None:  # started afresh
            return
        for outcome, count in earlier["counts"].items():
            self.counts[outcome] = self.counts.get(outcome, 0) + count
        self.prompt_tokens += earlier["prompt_tokens"]
        self.completion_tokens += earlier["completion_tokens"]
        cost = earlier["cost"]
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost

    def begin(self) -> None:
        """Its first case is asked: the run's own clock starts (once)."""
        if self.started is None:
            self.started = self.clock()
            self.answered_at.append(self.started)

    def end(self, status: str) -> None:
        self.status = status
        self.ended = self.clock()
        if self.started is None:  # nothing was asked (all reused, or stopped while queued)
            self.started = self.ended

    @property
    def state(self) -> RunState:
        if self.status is not None:
            return ENDED_STATES.get(self.status, "failed")
        return "running" if self.started is not None else "queued"

    @property
    def left(self) -> int:
        return 0 if self.status is not None else max(0, self.total - self.done)

    def add(self, event: CaseFinished) -> None:
        ev = event.evaluation
        self.done = event.done
        if not ev.reused:
            self.asked += 1
            self.answered_at.append(self.clock())
        usage = ev.completion
        self._count(
            ev.scored.outcome.value, usage.prompt_tokens, usage.completion_tokens, usage.cost
        )

    def _count(
        self, outcome: str, prompt: int | None, completion: int | None, cost: float | None
    ) -> None:
        self.counts[outcome] += 1
        self.prompt_tokens += prompt or 0
        self.completion_tokens += completion or 0
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost

    def retry(self, event: Retrying) -> None:
        """A request failed and will be asked again; a rate limit may lower the limit."""
        self.retries += 1
        self.limit = event.limit

    @property
    def graded(self) -> int:
        return sum(self.counts.values())

    @property
    def accuracy(self) -> float | None:
        """None until a case is answered: a run whose requests all failed has no accuracy."""
        answered = self.graded - self.counts.get("error", 0)
        return self.counts["correct"] / self.graded if answered else None

    @property
    def elapsed(self) -> float | None:
        if self.started is None:
            return None
        return (self.ended or self.clock()) - self.started

    @property
    def eta(self) -> float | None:
        """Seconds left at the pace of the latest answers; None before the first answer.

        A slow start (a rate limit, a cold provider) stops counting once `PACE_WINDOW`
        answers have come since. The next answer is due one interval after the last one;
        while it is late the ETA holds instead of counting down to nothing.
        """
        if not self.asked or self.ended is not None:
            return None
        return eta(self.answered_at, max(0, self.total - self.done), self.clock())


def eta(answered_at: Sequence[float], left: int, now: float) -> float | None:
    """Seconds until `left` more answers come, at the pace of the answers timed in
    `answered_at` (the first entry is when the asking began); the next answer is due one
    interval after the last one, and while it is late the figure holds."""
    if len(answered_at) < 2:
        return None
    if not left:
        return 0.0
    first, last = answered_at[0], answered_at[-1]
    per_case = (last - first) / (len(answered_at) - 1)
    next_due = max(0.0, last + per_case - now)
    return next_due + per_case * (left - 1)


@dataclass
class MatrixProgress:
    """One ETA for a whole matrix. Runs of different models go at the same time; one
    model's runs share its concurrency, so they take their turns: the matrix is done when
    the model with the most left at its own pace is. The pace of a model is that of its
    latest answers, across its runs."""

    clock: Callable[[], float] = time.monotonic
    paces: dict[str, deque[float]] = field(default_factory=dict)

    def begin(self, model: str) -> None:
        pace = self.paces.setdefault(model, deque(maxlen=PACE_WINDOW + 1))
        if not pace:
            pace.append(self.clock())

    def answered(self, model: str) -> None:
        self.begin(model)
        self.paces[model].append(self.clock())

    def eta(self, runs: Sequence[tuple[str, RunTally]]) -> float | None:
        """None until every model with cases left has answered one."""
        left: dict[str, int] = {}
        for model, tally in runs:
            left[model] = left.get(model, 0) + tally.left
        if not any(left.values()):
            return 0.0 if runs and all(t.status is not None for _, t in runs) else None
        now = self.clock()
        etas = [eta(self.paces.get(m, ()), n, now) for m, n in left.items() if n]
        return None if any(e is None for e in etas) else max(e for e in etas if e is not None)
