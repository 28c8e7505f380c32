"""What the engine needs from anything that answers cases: a model over HTTP or a baseline."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from secbench_tui.core.models import Case, ChatRequest, Completion


@dataclass(frozen=True)
class RetryNotice:
    """The client is waiting before asking again; front ends show it, the engine adapts."""

    case_id: str
    attempt: int
    wait_seconds: float
    reason: str
    status: int | None
    rate_limited: bool
    retry_after: float | None = None  # what the server asked for, when it did


RetryCallback = Callable[[RetryNotice], Awaitable[None] | None]


class RunAborted(Exception):
    """A fault that no later case can escape (bad key, no credits, unknown model).

    The message says what happened and what to do about it.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@runtime_checkable
class SendsBodies(Protocol):
    """A provider that can say the body it would send for a case (to match stored requests)."""

    def payload(self, case: Case) -> ChatRequest: ...


class Provider(Protocol):
    name: str
    reports_cost: bool  # whether completions carry the endpoint's cost (for --max-cost)

    async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
        """Answer one case. Per-case failures come back in `Completion.error`."""
        ...

    async def aclose(self) -> None: ...
