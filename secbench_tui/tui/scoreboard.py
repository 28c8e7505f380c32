"""What the run screen knows of the runs of its matrix, by slot (a run's place in the plan):
the plan, each run's id, tally, end, cases in flight and latest rows, the one ETA, and which
run the screen follows. Plain data, kept from the engine's messages; the widgets draw it.

Every run is counted the same way whether or not it is followed: only what is drawn differs.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from secbench_tui.core.run.events import (
    CaseFinished,
    CaseStarted,
    Retrying,
    RunFinished,
    RunStarted,
)
from secbench_tui.core.run.matrix import PlannedRun
from secbench_tui.tui.inflight import InFlight
from secbench_tui.tui.tally import MatrixProgress, RunTally

MAX_ROWS = 1000  # the latest cases kept per run for the cases table (all are in the database)


@dataclass
class Scoreboard:
    clock: Callable[[], float] = time.monotonic  # the app's (frozen in snapshot tests)
    planned: list[PlannedRun] = field(default_factory=list)
    focus: int = 0  # the slot of the run whose cases the screen shows
    stopping: bool = False  # a stop was asked and the runs have not ended
    run_ids: dict[int, int] = field(default_factory=dict)  # once started
    tallies: dict[int, RunTally] = field(default_factory=dict)
    ended: dict[int, RunFinished] = field(default_factory=dict)  # how each ended
    flights: dict[int, InFlight] = field(default_factory=dict)  # started, not finished
    recent: dict[int, deque[CaseFinished]] = field(default_factory=dict)  # latest rows
    progress: MatrixProgress = field(init=False)

    def __post_init__(self) -> None:
        self.progress = MatrixProgress(clock=self.clock)

    @property
    def several(self) -> bool:
        """The plan has more than one run: the screen lists them."""
        return len(self.planned) > 1

    @property
    def all_ended(self) -> bool:
        return len(self.ended) >= max(1, len(self.planned))

    def tally(self, slot: int | None = None) -> RunTally:
        """A run's tally (the followed run's by default), made on first use."""
        slot = self.focus if slot is None else slot
        return self.tallies.setdefault(slot, RunTally(clock=self.clock))

    def flight(self, slot: int) -> InFlight:
        return self.flights.setdefault(slot, InFlight())

    def model(self, slot: int) -> str | None:
        return self.planned[slot].model if self.planned else None

    # --- the engine's reports -----------------------------------------------------------

    def begin(self, slot: int, event: RunStarted) -> None:
        self.run_ids[slot] = event.run_id
        self.tally(slot).start(event)

    def cases_began(self, slot: int, events: Sequence[CaseStarted]) -> bool:
        """True when these are the run's first cases: it leaves the queue."""
        flights = self.flight(slot)
        for started in events:
            flights.start(started)
        tally = self.tally(slot)
        if tally.started is not None:
            return False
        tally.begin()
        model = self.model(slot)
        if model is not None:
            self.progress.begin(model)
        return True

    def rows_arrived(self, slot: int, events: Sequence[CaseFinished]) -> None:
        self.recent.setdefault(slot, deque(maxlen=MAX_ROWS)).extend(events)
        flights, model, tally = self.flight(slot), self.model(slot), self.tally(slot)
        for event in events:
            flights.finish(event)
            if model is not None and not event.evaluation.reused:
                self.progress.answered(model)
            tally.add(event)

    def retrying(self, slot: int, event: Retrying) -> None:
        self.flight(slot).retry(event)
        self.tally(slot).retry(event)

    def end(self, slot: int, event: RunFinished) -> None:
        self.ended[slot] = event
        self.tally(slot).end(event.status.value)

    # --- what the whole matrix shows ----------------------------------------------------

    def eta(self) -> float | None:
        runs = [(r.model, self.tally(slot)) for slot, r in enumerate(self.planned)]
        return self.progress.eta(runs)

    def cases(self) -> tuple[int, int]:
        """Cases done and in all, over every run (a run not opened yet counts its plan)."""
        tallies = [self.tally(slot) for slot in range(len(self.planned))]
        done = sum(t.done for t in tallies)
        total = sum(
            t.total if t.opened else len(r.spec.cases) * r.spec.repeats
            for t, r in zip(tallies, self.planned, strict=True)
        )
        return done, total

    def elapsed(self) -> float | None:
        """From the first run's first case to the last run's end (or now)."""
        tallies = [self.tally(slot) for slot in range(len(self.planned))]
        started = [t.started for t in tallies if t.started is not None]
        if not started:
            return None
        return max((t.ended or self.clock()) for t in tallies) - min(started)
