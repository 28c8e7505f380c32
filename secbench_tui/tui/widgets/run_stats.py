"""The running tally of a run: progress, ETA, accuracy, tokens and cost so far."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import ProgressBar, Static

from secbench_tui.core.events import CaseFinished, RunStarted
from secbench_tui.core.models import Outcome
from secbench_tui.tui import format as fmt


@dataclass
class RunTally:
    """Counts over the cases finished while this screen watched (reused ones are not asked)."""

    clock: Callable[[], float] = time.monotonic
    total: int = 0
    done: int = 0
    pending: int = 0
    reused: int = 0
    asked: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {o.value: 0 for o in Outcome})
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    started: float | None = None
    ended: float | None = None

    def start(self, event: RunStarted) -> None:
        self.total, self.pending, self.reused = event.total, event.pending, event.reused
        self.done = event.total - event.pending
        self.started = self.clock()

    def add(self, event: CaseFinished) -> None:
        ev = event.evaluation
        self.done = event.done
        self.asked += 1
        self.counts[ev.scored.outcome.value] += 1
        self.prompt_tokens += ev.completion.prompt_tokens or 0
        self.completion_tokens += ev.completion.completion_tokens or 0
        if ev.completion.cost is not None:
            self.cost = (self.cost or 0.0) + ev.completion.cost

    @property
    def graded(self) -> int:
        return sum(self.counts.values())

    @property
    def accuracy(self) -> float | None:
        return self.counts["correct"] / self.graded if self.graded else None

    @property
    def elapsed(self) -> float | None:
        if self.started is None:
            return None
        return (self.ended or self.clock()) - self.started

    @property
    def eta(self) -> float | None:
        """Seconds left at the pace so far; None before the first answer."""
        elapsed = self.elapsed
        if elapsed is None or not self.asked or self.ended is not None:
            return None
        return elapsed / self.asked * max(0, self.total - self.done)


class RunStats(Vertical):
    """Progress bar with counts and ETA, then accuracy, outcomes, tokens and cost."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="progress-row"):
            yield ProgressBar(show_eta=False, id="progress")
            yield Static(id="progress-text")
        yield Static(id="tally")

    def show(self, tally: RunTally, state: str) -> None:
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=max(1, tally.total), progress=tally.done)
        eta = "done" if tally.ended is not None else f"ETA {fmt.duration(tally.eta)}"
        self.query_one("#progress-text", Static).update(
            Text.assemble(
                (f" {tally.done}/{tally.total}", "bold"),
                f"  {eta}  elapsed {fmt.duration(tally.elapsed)}  ",
                (state, "bold yellow" if state != "running" else "bold green"),
            )
        )
        c = tally.counts
        line = Text.assemble(
            ("accuracy ", "dim"),
            (fmt.pct(tally.accuracy), "bold"),
            (f" of {tally.graded}", "dim"),
            ("   correct ", "dim"),
            (str(c["correct"]), fmt.OUTCOME_STYLES["correct"]),
            ("  wrong ", "dim"),
            (str(c["wrong"]), fmt.OUTCOME_STYLES["wrong"]),
            ("  unparsed ", "dim"),
            (str(c["unparsed"]), fmt.OUTCOME_STYLES["unparsed"]),
            ("  errors ", "dim"),
            (str(c["error"]), fmt.OUTCOME_STYLES["error"]),
            ("   tokens ", "dim"),
            f"{fmt.count(tally.prompt_tokens)} in / {fmt.count(tally.completion_tokens)} out",
            ("   cost ", "dim"),
            fmt.money(tally.cost),
        )
        if tally.reused:
            line.append(f"   reused {tally.reused}", style="dim")
        self.query_one("#tally", Static).update(line)
