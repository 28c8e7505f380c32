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

    def line(self) -> Text | None:
        """`in flight 4 · retrying 1: c003 in 12s (attempt 2 failed: 503) · c007 asked 9s`:
        the retrying cases first (soonest try first), then the longest asked; None if idle."""
        if not self.cases:
            return None
        now = self.clock()
        waiting = sorted(self.waiting(), key=lambda f: f.retry_at or 0.0)
        asked = sorted((f for f in self.cases.values() if f not in waiting), key=lambda f: f.since)
        text = Text.assemble(("in flight ", "bold"), str(len(self.cases)))
        if waiting:
            text.append_text(Text.assemble(" · ", ("retrying ", "bold yellow"), str(len(waiting))))
        text.append(":")
        for flight in (waiting + asked)[:SHOWN]:
            text.append(" · " if flight is not (waiting + asked)[0] else " ")
            text.append(inert_line(flight.case_id)[-28:], style="bold")
            if flight in waiting:
                left = max(0.0, (flight.retry_at or now) - now)
                why = "rate limited" if flight.rate_limited else inert_line(flight.reason)[:60]
                text.append(f" next try in {left:.0f}s (attempt {flight.attempt}: {why})")
            else:
                again = f", attempt {flight.attempt + 1}" if flight.reason else ""
                text.append(f" asked {now - flight.since:.0f}s{again}", style="dim")
        more = len(self.cases) - SHOWN
        if more > 0:
            text.append(f" · and {more} more", style="dim")
        return text
