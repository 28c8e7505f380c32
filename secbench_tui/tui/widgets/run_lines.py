"""Two lines of the run screen about requests not answered yet: the latest retry with its
wait counting down, and the cases in flight (`tui.inflight`). Each hides itself when idle.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.widgets import Static

from secbench_tui.core.run.events import Retrying
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui.inflight import InFlight
from secbench_tui.tui.widgets.live_line import LiveLine


class RetryLine(Static):
    """`retrying in 12s (attempt 2): ...`, shown until a second after the wait is over."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.display = False
        self._until: float | None = None  # when the wait ends (time.monotonic)
        self._last: Retrying | None = None

    @property
    def waiting(self) -> bool:
        return self._until is not None

    def retrying(self, event: Retrying) -> None:
        self._until = time.monotonic() + event.notice.wait_seconds
        self._draw(event)

    def tick(self) -> None:
        """The wait counts down; a second after it is over the line goes."""
        if self._until is None:
            return
        if time.monotonic() > self._until + 1:
            self.hide()
        elif self._last is not None:
            self._draw(self._last)

    def hide(self) -> None:
        self._until = None
        self.display = False

    def _draw(self, event: Retrying) -> None:
        n = event.notice
        left = max(0.0, (self._until or 0) - time.monotonic())
        # the wait first: a narrow terminal cuts the end of the line, where the case id is
        if n.rate_limited:
            text = Text.assemble(
                ("waiting on rate limit", "bold yellow"),
                f": retry in {left:.0f}s (attempt {n.attempt}), concurrency now {event.limit}",
                (f" · {inert_line(n.case_id)}", "dim"),
            )
        else:
            text = Text.assemble(
                ("retrying", "bold yellow"),
                f" in {left:.0f}s (attempt {n.attempt}): {inert_line(n.reason[:120])}",
                (f" · {inert_line(n.case_id)}", "dim"),
            )
        self.update(text)
        self.display = True
        self._last = event


class InFlightLine(LiveLine):
    """The followed run's cases asked and not finished, retrying ones with their wait: two
    lines at most, wrapped between words."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.display = False

    def show(self, flights: InFlight | None) -> None:
        """None (or nothing in flight): the line goes."""
        # the slack is what a wrap may leave
        width = 2 * max(20, (self.size.width or self.screen.size.width) - 2) - 12
        text = flights.line(width) if flights is not None else None
        if text is not None:
            self.redraw(text)
        self.display = text is not None
