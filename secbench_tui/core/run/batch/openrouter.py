"""OpenRouter's Batch API: the requests inline, the results inline.

`POST {base}/batches` takes one endpoint, one model and a `requests` array of `custom_id` and
`body` (the body a live run sends, `model` included), up to 5,000 requests and 200 MB; it
answers `202 Accepted` with `status: "validating"`, which only means it was stored. `GET
{base}/batches/{id}` gives the status (`validating`, `in_progress`, then `completed`, `failed`,
`expired` or `cancelled`) with `request_counts`, and once the batch has ended its `results`,
each with a `response` (`status_code`, `body`) or an `error`. A completed batch may still hold
failed requests. Where a terminal batch carries no results inline, they are read from the
cursor-paginated `GET {base}/batches/{id}/results` the API reference also documents.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from secbench_tui.core.run.batch.protocol import (
    BatchRefused,
    Limits,
    Line,
    Polled,
    ProtocolName,
    Result,
    Submitted,
    counts_of,
)
from secbench_tui.core.run.batch.transport import BatchHttp, error_text

ENDPOINT = "/v1/chat/completions"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
MAX_PAGES = 10_000  # a cursor that never ends is a server's fault, not a reason to loop


def result_of(item: Any) -> Result | None:
    """One entry of `results`: a response body with its status, or an error."""
    if not isinstance(item, dict) or not isinstance(item.get("custom_id"), str):
        return None
    response = item.get("response")
    error = item.get("error")
    message = error_text({"error": error}, "") if error else None
    if isinstance(response, dict):
        body = response.get("body")
        status = response.get("status_code")
        return Result(
            item["custom_id"],
            data=body if isinstance(body, dict) else None,
            status=status if isinstance(status, int) else 200,
            error=message,
        )
    return Result(item["custom_id"], error=message or "no response and no error")


class OpenRouterBatches:
    name: ProtocolName = "openrouter"
    limits = Limits(requests=5_000, bytes=200_000_000)

    def __init__(self, http: BatchHttp, model: str) -> None:
        self.http = http
        self.model = model
        self._ended: dict[str, list[Any]] = {}  # results that came inline with the last poll

    def line_bytes(self, line: Line) -> int:
        item = {"custom_id": line.custom_id, "body": line.body}
        return len(json.dumps(item).encode("utf-8")) + 1

    async def submit(self, lines: Sequence[Line]) -> Submitted:
        body = {  # endpoint and model before the requests: the API reads it as a stream
            "endpoint": ENDPOINT,
            "model": self.model,
            "requests": [{"custom_id": line.custom_id, "body": line.body} for line in lines],
        }
        reply = await self.http.call(
            "POST", self.http.url("batches"), doing="submitting a batch", submitting=True, json=body
        )
        data = reply.data if isinstance(reply.data, dict) else {}
        batch_id = data.get("id")
        if not isinstance(batch_id, str) or not batch_id:
            raise BatchRefused(f"the answer names no batch id: {reply.text[:200]!r}")
        return Submitted(batch_id, str(data.get("status") or "validating"))

    async def poll(self, provider_id: str) -> Polled:
        reply = await self.http.call(
            "GET", self.http.url("batches", provider_id), doing=f"polling batch {provider_id}"
        )
        data = reply.data if isinstance(reply.data, dict) else {}
        status = str(data.get("status") or "unknown")
        ended = status in TERMINAL
        error = data.get("error")
        message = error_text({"error": error}, "") if error else None
        if ended and isinstance(data.get("results"), list) and data["results"]:
            self._ended[provider_id] = data["results"]
        return Polled(status, ended, counts_of(data), message)

    async def results(self, provider_id: str, polled: Polled) -> AsyncIterator[Result]:
        inline = self._ended.pop(provider_id, None)
        if inline is not None:
            for item in inline:
                if (result := result_of(item)) is not None:
                    yield result
            return
        if polled.counts.completed + polled.counts.failed == 0:
            return  # nothing ran (a batch that failed validation): no page to read
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = {"cursor": cursor} if cursor else {}
            reply = await self.http.call(
                "GET",
                self.http.url("batches", provider_id, "results"),
                doing=f"reading the results of batch {provider_id}",
                params=params,
            )
            page = reply.data if isinstance(reply.data, dict) else {}
            items = page.get("data", page.get("results"))
            for item in items if isinstance(items, list) else []:
                if (result := result_of(item)) is not None:
                    yield result
            following = page.get("next_cursor")
            if not isinstance(following, str) or not following or following == cursor:
                return
            cursor = following

    async def aclose(self) -> None:
        await self.http.aclose()
