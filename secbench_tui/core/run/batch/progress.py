"""A run's batches as text: the one renderer of `BatchProgress`, for every front end.

Each batch is one line: the provider's id and status, its requests by where they stand
(validating, in progress, completed, failed), how long since it was sent and when it is
polled next, then a line that says what the run is waiting on: the provider, not this tool.
Provider ids and statuses are the server's text: they pass through `inert_line`.
"""

from __future__ import annotations

from secbench_tui.core.run.events import BatchProgress, BatchView
from secbench_tui.core.untrusted import inert_line

VALIDATING = frozenset({"validating", "submitting"})


def duration(seconds: float) -> str:
    """`45s`, `12m 3s`, `5h 2m`."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def counts_text(view: BatchView) -> str:
    """The requests of a batch by where they stand."""
    left = max(0, view.requests - view.completed - view.failed)
    waiting = "validating" if view.status in VALIDATING else "in progress"
    return (
        f"{view.requests} requests: {left} {waiting}, {view.completed} completed, "
        f"{view.failed} failed"
    )


def batch_line(view: BatchView) -> str:
    name = inert_line(view.provider_id) if view.provider_id else f"#{view.batch_id}"
    line = f"batch {name} {inert_line(view.status)}, {counts_text(view)}"
    line += f", sent {duration(view.elapsed)} ago"
    if view.read:
        return line + ", results stored"
    if view.next_poll is not None:
        line += f", next poll in {duration(view.next_poll)}"
    if view.note:
        line += f" (last poll: {inert_line(view.note)})"
    return line


def waiting_line(progress: BatchProgress) -> str:
    """What the run waits on."""
    open_ = [view for view in progress.batches if not view.read]
    if not open_:
        return "every batch is read and stored"
    requests = sum(view.requests for view in open_)
    return (
        f"waiting on the provider: {len(open_)} batch(es), {requests} requests; a batch may "
        "take up to 24 hours (stop at any time: --resume, or the same command again, "
        "collects them)"
    )


def progress_lines(progress: BatchProgress) -> list[str]:
    return [*(batch_line(view) for view in progress.batches), waiting_line(progress)]
