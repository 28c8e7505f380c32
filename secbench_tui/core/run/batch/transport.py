"""The batch protocols' HTTP: one client, and one reading of what a failure means.

A batch API is asked a few times an hour, not thousands of times a minute, so this keeps to
plain httpx calls. What it classifies, every protocol shares: a bad key or no credits end the
run (`RunAborted`); a refusal when submitting is the batch's (`BatchRefused`, with the
provider's words); a batch or a results file the provider no longer has is `BatchLost`; and a
dropped connection, 408, 429 or a 5xx is `PollFailed`, asked again later (`Retry-After`
honoured). A submission whose connection dropped after it was sent may have been accepted:
`PollFailed.maybe_accepted` says so, and the runner does not send it again on its own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from secbench_tui.core.run.batch.protocol import BatchLost, BatchRefused, PollFailed
from secbench_tui.core.run.http import async_client
from secbench_tui.core.run.providers.base import RunAborted
from secbench_tui.core.run.providers.openai_compat import api_url
from secbench_tui.core.run.providers.retry import RETRYABLE_STATUS, one_line, parse_retry_after
from secbench_tui.core.untrusted import redact_url


@dataclass(frozen=True)
class Reply:
    """A 2xx answer: its status and its body, parsed (None when it is not JSON)."""

    status: int
    data: Any
    text: str


def error_text(data: Any, text: str) -> str:
    """The provider's own words for an error: `error.message` (or `error` as text), else the
    body's first characters."""
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        message = error.get("message") or error.get("type") or error
        inner = error.get("error")  # Anthropic: {"type": "error", "error": {...}}
        if isinstance(inner, dict) and inner.get("message"):
            message = inner["message"]
        return one_line(str(message), 300)
    if isinstance(error, str) and error:
        return one_line(error, 300)
    return one_line(text[:300] or "no message", 300)


class BatchHttp:
    """Calls to one endpoint's batch API with the run's headers (its key among them)."""

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str],
        timeout: float,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url
        self.headers = dict(headers)
        self._client = client or async_client(httpx.Timeout(timeout, connect=min(timeout, 15.0)))

    def url(self, *parts: str) -> str:
        """The API root with `parts` as path segments; each is quoted whole, so an id the
        server gave (`../x`, `a?b`) stays one segment of the path."""
        return api_url(self.base_url, "/".join(quote(part, safe="") for part in parts))

    async def aclose(self) -> None:
        await self._client.aclose()

    async def call(
        self,
        method: str,
        url: str,
        *,
        doing: str,
        submitting: bool = False,
        **send: Any,
    ) -> Reply:
        """One request; its 2xx reply, or the failure classified (see the module's words)."""
        headers = dict(self.headers)
        if "files" in send:  # httpx writes the multipart Content-Type with its boundary
            headers.pop("Content-Type", None)
        try:
            response = await self._client.request(method, url, headers=headers, **send)
        except httpx.TransportError as exc:
            raise self._transport_failure(exc, doing, submitting) from None
        text = response.text
        try:
            data: Any = json.loads(text) if text else None
        except ValueError:
            data = None
        if response.is_success:
            return Reply(response.status_code, data, text)
        self._raise_for(response, data, text, doing, submitting)
        raise AssertionError("unreachable")  # pragma: no cover - _raise_for always raises

    async def lines(self, url: str, *, doing: str) -> AsyncIterator[str]:
        """The lines of a JSONL body, as they arrive (a results file may be large)."""
        try:
            async with self._client.stream("GET", url, headers=self.headers) as response:
                if not response.is_success:
                    text = (await response.aread()).decode("utf-8", "replace")
                    try:
                        data = json.loads(text) if text else None
                    except ValueError:
                        data = None
                    self._raise_for(response, data, text, doing, False)
                async for line in response.aiter_lines():
                    if line.strip():
                        yield line
        except httpx.TransportError as exc:
            raise self._transport_failure(exc, doing, False) from None

    def _transport_failure(
        self, exc: httpx.TransportError, doing: str, submitting: bool
    ) -> PollFailed | RunAborted:
        if isinstance(exc, httpx.UnsupportedProtocol):
            return RunAborted(f"--base-url {redact_url(self.base_url)}: not an http(s) URL ({exc})")
        failure = PollFailed(
            f"{doing}: could not reach {redact_url(self.base_url)} ({type(exc).__name__}: {exc})"
        )
        # the request went out and the answer did not come back: a submission may have landed
        failure.maybe_accepted = submitting and not isinstance(
            exc, httpx.ConnectError | httpx.ConnectTimeout
        )
        return failure

    def _raise_for(
        self, response: httpx.Response, data: Any, text: str, doing: str, submitting: bool
    ) -> None:
        status = response.status_code
        message = error_text(data, text)
        where = redact_url(self.base_url)
        if status == 401:
            raise RunAborted(
                f"{doing}: authentication failed (401: {message}); check the key "
                f"(OPENROUTER_API_KEY) the batch API at {where} expects",
                status,
            )
        if status == 402:
            raise RunAborted(f"{doing}: payment required (402: {message}); add credits", status)
        if status in RETRYABLE_STATUS:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            raise PollFailed(f"{doing}: HTTP {status}: {message}", retry_after)
        if submitting:
            raise BatchRefused(f"HTTP {status}: {message}", status)
        if status == 404:
            raise BatchLost(f"{doing}: HTTP 404: {message}")
        raise RunAborted(f"{doing}: HTTP {status} from {where}: {message}", status)
