"""How often a batch is polled: soon after it is sent, then less and less often.

A batch takes minutes to hours; polling it every few seconds for a day would be thousands of
requests for nothing. The first poll comes `first` seconds after the batch is sent (or at once
when a run takes up a batch sent earlier: it may have ended meanwhile), each later one `factor`
times longer after the last, up to `cap`. A poll that fails (a dropped connection, 429, 5xx)
counts the same, and a server's `Retry-After` is waited for when it asks for longer, up to
`RETRY_AFTER_MAX`: polling goes on through a network failure or a closed laptop, and a run
started again hours later polls at once.
"""

from __future__ import annotations

from dataclasses import dataclass

CAP = 600.0  # seconds: a batch that takes a day is polled about 150 times
FACTOR = 1.5
RETRY_AFTER_MAX = 3600.0


@dataclass(frozen=True)
class PollTimer:
    first: float = 30.0
    factor: float = FACTOR
    cap: float = CAP

    def wait(self, polls: int, retry_after: float | None = None) -> float:
        """Seconds before the next poll of a batch polled `polls` times so far."""
        wait = min(self.cap, self.first * self.factor ** min(polls, 60))
        if retry_after is not None:
            wait = max(wait, min(retry_after, RETRY_AFTER_MAX))
        return wait
