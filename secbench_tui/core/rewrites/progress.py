"""How far the rewrites gate's proving is: variants decided of those to prove, rate and time
left, told to a front end at most once a second (`Proving.line` is the one way it is said)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Proving", "Tally"]


@dataclass(frozen=True)
class Proving:
    """How far the proving is: variants decided of those to prove, and since when."""

    done: int
    total: int
    seconds: float

    @property
    def rate(self) -> float | None:
        """Variants decided per second (None before the first)."""
        return self.done / self.seconds if self.done and self.seconds > 0 else None

    @property
    def eta(self) -> float | None:
        """Seconds left at the rate so far."""
        rate = self.rate
        return (self.total - self.done) / rate if rate else None

    def line(self) -> str:
        """`proving rewrites: 120/1232 variants, 1.9/s, about 9m45s left`."""
        text = f"proving rewrites: {self.done}/{self.total} variants"
        if self.rate is not None and self.eta is not None:
            left = round(self.eta)
            text += f", {self.rate:.1f}/s, about {left // 60}m{left % 60:02d}s left"
        return text


class Tally:
    """Counts decisions and tells `progress` (at most once a second, and at the end)."""

    def __init__(self, total: int, progress: Callable[[Proving], None] | None) -> None:
        self.total, self.progress = total, progress
        self.done = 0
        self.started = self.last = time.monotonic()

    def tick(self) -> None:
        self.done += 1
        now = time.monotonic()
        if self.progress is not None and (now - self.last >= 1.0 or self.done == self.total):
            self.last = now
            self.progress(Proving(self.done, self.total, now - self.started))
