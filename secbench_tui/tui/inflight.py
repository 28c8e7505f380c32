"""The cases of a run that have started and not finished: asked now, or waiting to retry.

The engine reports a case when it is stored, in whatever order that happens, so the run
screen shows finished cases at once; this keeps the ones still out of sight visible: how long
each has been asked, and for a retrying one its attempt, the reason and the time to the next
try (a long `Retry-After` reads as a wait, not a hang). Plain data; the run screen draws it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.text import Text

from secbench_tui.core.run.events import CaseFinished, CaseStarted, Retrying
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui.format import case_id

SHOWN = 3  # cases named on the line; the rest are counted


@dataclass
class Flight:
    case_id: str
    since: float
    attempt: int = 1  # the attempt that failed, once it has retried
    reason: str = ""
    retry_at: float | None = None
    rate_limited: bool = False


@dataclass
class InFlight:
    clock: Callable[[], float] = time.monotonic
    cases: dict[tuple[str, int], Flight] = field(default_factory=dict)

    def start(self, event: CaseStarted) -> None:
        self.cases[(event.case.case_id, event.repeat)] = Flight(event.case.case_id, self.clock())

    def finish(self, event: CaseFinished) -> None:
        ev = event.evaluation
        self.cases.pop((ev.case.case_id, ev.repeat), None)

    def retry(self, event: Retrying) -> None:
        n = event.notice
        for flight in self.cases.values():
            if flight.case_id == n.case_id:
                flight.attempt, flight.reason = n.attempt, n.reason
                flight.retry_at = self.clock() + n.wait_seconds
                flight.rate_limited = n.rate_limited

    def clear(self) -> None:
        self.cases.clear()

    def waiting(self) -> list[Flight]:
        now = self.clock()
        return [f for f in self.cases.values() if f.retry_at is not None and f.retry_at > now]

    def line(self, width: int = 10_000) -> Text | None:
        """`in flight 3 · retrying 1: c003 next try in 12s (attempt 2: 503) · c007 asked 9s`:
        the retrying cases first (soonest try first), then the longest asked; None if idle.

        `in flight` counts the cases holding a concurrency slot (asked now); a case waiting
        to retry has given its slot back, so it is counted apart. The line fits `width`:
        cases that do not fit whole are counted in `and N more`, never cut mid-word."""
        if not self.cases:
            return None
        now = self.clock()
        waiting = sorted(self.waiting(), key=lambda f: f.retry_at or 0.0)
        asked = sorted((f for f in self.cases.values() if f not in waiting), key=lambda f: f.since)
        text = Text.assemble(("in flight ", "bold"), str(len(asked)))
        if waiting:
            text.append_text(Text.assemble(" · ", ("retrying ", "bold yellow"), str(len(waiting))))
        text.append(":")
        flights = waiting + asked
        shown = 0
        for n, flight in enumerate(flights[:SHOWN]):
            part = Text(" · " if n else " ")
            part.append(case_id(inert_line(flight.case_id), 40), style="bold")
            if flight in waiting:
                left = max(0.0, (flight.retry_at or now) - now)
                why = "rate limited" if flight.rate_limited else inert_line(flight.reason)[:60]
                part.append(f" next try in {left:.0f}s (attempt {flight.attempt}: {why})")
            else:
                again = f", attempt {flight.attempt + 1}" if flight.reason else ""
                part.append(f" asked {now - flight.since:.0f}s{again}", style="dim")
            rest = len(flights) - n - 1
            more = len(f" · and {rest} more") if rest else 0
            if text.cell_len + part.cell_len + more > width:
                break
            text.append_text(part)
            shown += 1
        more = len(flights) - shown
        if more > 0:
            text.append(f" · and {more} more" if shown else f" {more} cases", style="dim")
        return text
