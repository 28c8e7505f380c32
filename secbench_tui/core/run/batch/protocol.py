"""What every batch protocol shares: its limits, what it was sent and what it says back.

A protocol (`openrouter`, `openai`, `anthropic`) knows one provider's wire format: how a batch
is submitted, polled and its results read. The runner (`batch.runner`) knows none of them; it
hands a protocol `Line`s (a request's id and the exact body a live run sends) and reads back a
`Polled` state and `Result`s, each a chat completion body as a live run would have got it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from secbench_tui.core.models import JSONObject

BatchApi = Literal["auto", "openrouter", "openai", "anthropic"]
ProtocolName = Literal["openrouter", "openai", "anthropic"]


@dataclass(frozen=True)
class Limits:
    """The most one batch may hold, as the provider documents it: requests, and bytes of the
    requests as sent (an inline body, a JSONL file)."""

    requests: int
    bytes: int


@dataclass(frozen=True)
class Line:
    """One request of a batch: its id (which maps back to the case, `batch.ids`) and the
    body a live run would send for it."""

    custom_id: str
    body: JSONObject


@dataclass(frozen=True)
class Counts:
    """A batch's requests by where they stand, as the provider counts them."""

    total: int = 0
    completed: int = 0
    failed: int = 0

    @property
    def pending(self) -> int:
        return max(0, self.total - self.completed - self.failed)

    def as_dict(self) -> dict[str, int]:
        return {"total": self.total, "completed": self.completed, "failed": self.failed}


def counts_of(data: Any) -> Counts:
    """OpenAI's `request_counts` ({total, completed, failed}, which OpenRouter's copies),
    whatever the body holds."""
    raw = data.get("request_counts") if isinstance(data, dict) else None
    if not isinstance(raw, dict):
        return Counts()

    def whole(name: str) -> int:
        value = raw.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    return Counts(whole("total"), whole("completed"), whole("failed"))


@dataclass(frozen=True)
class Submitted:
    """A batch the provider accepted: its id, its first status, and what polling needs."""

    provider_id: str
    status: str
    details: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Polled:
    """A batch as one poll found it. `ended`: its results can be read (completed, failed,
    expired, cancelled: whatever did not finish has no result). `status` is the provider's
    own word; `message` why a batch failed, if it says."""

    status: str
    ended: bool
    counts: Counts = Counts()
    message: str | None = None
    details: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Result:
    """One request's result: a chat completion body (`data`, with the HTTP status the
    provider gives it), or the provider's error for it."""

    custom_id: str
    data: JSONObject | None = None
    status: int | None = None
    error: str | None = None


class BatchRefused(Exception):
    """The provider would not take a batch (a model without a batch API, structured outputs it
    rejects in batch, a batch too large); the message says why, in the provider's words."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class PollFailed(Exception):
    """A poll or a read that may work later (a dropped connection, 429, 5xx): `retry_after`
    is what the server asked for, when it did. `maybe_accepted`: a submission that went out
    and got no answer (it may have been accepted; it is not sent again unasked)."""

    def __init__(
        self, message: str, retry_after: float | None = None, maybe_accepted: bool = False
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.maybe_accepted = maybe_accepted


class BatchLost(Exception):
    """The provider no longer knows the batch, or its results (deleted, or past the days
    it keeps them): its requests have no result to read."""


class BatchProtocol(Protocol):
    """One provider's batch API."""

    name: ProtocolName
    limits: Limits

    def line_bytes(self, line: Line) -> int:
        """What `line` adds to a batch's size, as sent."""
        ...

    async def submit(self, lines: Sequence[Line]) -> Submitted:
        """Create a batch of `lines`; `BatchRefused` when the provider will not."""
        ...

    async def poll(self, provider_id: str) -> Polled:
        """The batch as it stands now; `PollFailed` to try again later."""
        ...

    def results(self, provider_id: str, polled: Polled) -> AsyncIterator[Result]:
        """The ended batch's results, as they are read."""
        ...

    async def aclose(self) -> None: ...


def protocol_for(base_url: str, api: BatchApi) -> ProtocolName:
    """The batch protocol for an endpoint: the one asked for, or by its host: OpenRouter's for
    openrouter.ai, Anthropic's for api.anthropic.com, else OpenAI's (`/files` and `/batches`,
    which other OpenAI-compatible servers copy)."""
    if api != "auto":
        return api
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "openrouter.ai" or host.endswith(".openrouter.ai"):
        return "openrouter"
    if host == "api.anthropic.com":
        return "anthropic"
    return "openai"
