"""OpenAI's Batch API, which other OpenAI-compatible servers copy: a JSONL file, then a batch.

The requests go up as a file (`POST {base}/files`, `purpose=batch`), one JSON line each:
`custom_id`, `method`, `url` and the `body` a live run sends; up to 50,000 requests and 200 MB.
`POST {base}/batches` makes a batch of the file (`endpoint`, `completion_window: 24h`). `GET
{base}/batches/{id}` gives its status (`validating`, `in_progress`, `finalizing`, then
`completed`, `failed`, `expired` or `cancelled`) with `request_counts`, and once it has ended
an `output_file_id` (the requests that ran: `response.status_code` and `response.body`) and an
`error_file_id` (those that failed, expired or were cancelled: `error.code`, `error.message`),
both read from `GET {base}/files/{id}/content` line by line.
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
from secbench_tui.core.run.providers.retry import one_line

ENDPOINT = "/v1/chat/completions"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
FILES = ("output_file_id", "error_file_id")


def jsonl_line(line: Line) -> str:
    return json.dumps(
        {"custom_id": line.custom_id, "method": "POST", "url": ENDPOINT, "body": line.body}
    )


def result_of(text: str) -> Result | None:
    """One line of an output or error file."""
    try:
        item: Any = json.loads(text)
    except ValueError:
        return None
    if not isinstance(item, dict) or not isinstance(item.get("custom_id"), str):
        return None
    custom_id = item["custom_id"]
    response = item.get("response")
    error = item.get("error")
    if isinstance(response, dict):
        status = response.get("status_code")
        status = status if isinstance(status, int) else None
        body = response.get("body")
        if status == 200 and isinstance(body, dict):
            return Result(custom_id, data=body, status=200)
        if body is not None or status is not None:
            words = error_text(body, json.dumps(body) if body is not None else "")
            return Result(custom_id, status=status, error=f"HTTP {status}: {words}")
    if isinstance(error, dict):
        code = error.get("code")
        message = one_line(str(error.get("message") or "no message"), 300)
        return Result(custom_id, error=f"{message} ({code})" if code else message)
    return Result(custom_id, error="no response and no error")


def _failure_message(data: dict[str, Any]) -> str | None:
    """Why a batch failed validation: `errors.data[].message`, with its line."""
    errors = data.get("errors")
    found = errors.get("data") if isinstance(errors, dict) else None
    if not isinstance(found, list) or not found:
        return None
    first = found[0] if isinstance(found[0], dict) else {}
    line = f" (line {first['line']})" if isinstance(first.get("line"), int) else ""
    more = f"; and {len(found) - 1} more" if len(found) > 1 else ""
    return one_line(f"{first.get('code') or 'error'}: {first.get('message')}{line}{more}", 300)


class OpenAIBatches:
    name: ProtocolName = "openai"
    limits = Limits(requests=50_000, bytes=200_000_000)

    def __init__(self, http: BatchHttp) -> None:
        self.http = http

    def line_bytes(self, line: Line) -> int:
        return len(jsonl_line(line).encode("utf-8")) + 1

    async def submit(self, lines: Sequence[Line]) -> Submitted:
        content = "".join(jsonl_line(line) + "\n" for line in lines).encode("utf-8")
        uploaded = await self.http.call(
            "POST",
            self.http.url("files"),
            doing="uploading a batch's requests",
            submitting=True,
            data={"purpose": "batch"},
            files={"file": ("secbench-batch.jsonl", content, "application/jsonl")},
        )
        file_id = uploaded.data.get("id") if isinstance(uploaded.data, dict) else None
        if not isinstance(file_id, str) or not file_id:
            raise BatchRefused(f"the upload's answer names no file id: {uploaded.text[:200]!r}")
        created = await self.http.call(
            "POST",
            self.http.url("batches"),
            doing="creating a batch",
            submitting=True,
            json={"input_file_id": file_id, "endpoint": ENDPOINT, "completion_window": "24h"},
        )
        data = created.data if isinstance(created.data, dict) else {}
        batch_id = data.get("id")
        if not isinstance(batch_id, str) or not batch_id:
            raise BatchRefused(f"the answer names no batch id: {created.text[:200]!r}")
        return Submitted(
            batch_id, str(data.get("status") or "validating"), {"input_file_id": file_id}
        )

    async def poll(self, provider_id: str) -> Polled:
        reply = await self.http.call(
            "GET", self.http.url("batches", provider_id), doing=f"polling batch {provider_id}"
        )
        data = reply.data if isinstance(reply.data, dict) else {}
        status = str(data.get("status") or "unknown")
        details = {name: data[name] for name in FILES if isinstance(data.get(name), str)}
        return Polled(status, status in TERMINAL, counts_of(data), _failure_message(data), details)

    async def results(self, provider_id: str, polled: Polled) -> AsyncIterator[Result]:
        for name in FILES:
            file_id = polled.details.get(name)
            if not file_id:
                continue
            url = self.http.url("files", file_id, "content")
            async for text in self.http.lines(url, doing=f"reading {file_id} of {provider_id}"):
                if (result := result_of(text)) is not None:
                    yield result

    async def aclose(self) -> None:
        await self.http.aclose()
