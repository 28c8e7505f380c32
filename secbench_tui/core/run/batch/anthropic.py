"""Anthropic's Message Batches: Messages API requests in, messages out.

A live run reaches Anthropic through its OpenAI-compatible endpoint (`--base-url
https://api.anthropic.com/v1`), which takes a chat completions body and answers one. Message
Batches take Messages API requests only, so each live body is carried as that endpoint reads
it: system messages hoisted into `system` (joined by line breaks), the other messages as they
are, `max_tokens`, `temperature` up to 1 (it caps larger ones), and nothing for what it
ignores (`seed`, `response_format`). Each message that comes back is read as the chat
completion that endpoint would have answered, so a batch result and a live one are read the
same way. Structured outputs (`--response-format json_schema`) are refused before any batch is
sent (`planning.batching`).

`POST {base}/messages/batches` takes `requests` of `custom_id` (1-64 of `a-zA-Z0-9_-`) and
`params`, up to 100,000 requests and 256 MB. `GET {base}/messages/batches/{id}` gives
`processing_status` (`in_progress`, `canceling`, `ended`) and `request_counts` (processing,
succeeded, errored, canceled, expired); an ended batch's `results_url` is a JSONL file of
`custom_id` and `result` (`succeeded` with its `message`, `errored`, `canceled`, `expired`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from secbench_tui.core.models import JSONObject
from secbench_tui.core.run.batch.protocol import (
    BatchRefused,
    Counts,
    Limits,
    Line,
    Polled,
    ProtocolName,
    Result,
    Submitted,
)
from secbench_tui.core.run.batch.transport import BatchHttp, error_text

VERSION = "2023-06-01"  # the anthropic-version header
STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
IGNORED = ("seed", "response_format", "usage", "provider")


def headers_for(key: str | None, user_agent: str) -> dict[str, str]:
    """Anthropic's own headers: the key in `x-api-key`, the API version."""
    headers = {
        "Content-Type": "application/json",
        "anthropic-version": VERSION,
        "User-Agent": user_agent,
    }
    if key:
        headers["x-api-key"] = key
    return headers


def params_of(body: JSONObject) -> JSONObject:
    """A chat completions body as a Messages API request (the module says how)."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        raise BatchRefused("Message Batches take no response_format of type json_schema")
    if "reasoning" in body:
        raise BatchRefused("Message Batches take no OpenAI-style reasoning setting")
    raw = body.get("messages")
    messages = [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []
    system = [str(m.get("content") or "") for m in messages if m.get("role") == "system"]
    params: JSONObject = {"model": body.get("model"), "max_tokens": body.get("max_tokens")}
    if system:
        params["system"] = "\n".join(system)
    params["messages"] = [
        {"role": m.get("role"), "content": m.get("content")}
        for m in messages
        if m.get("role") != "system"
    ]
    temperature = body.get("temperature")
    if isinstance(temperature, int | float):
        params["temperature"] = min(float(temperature), 1.0)
    return params


def chat_completion(message: Any) -> JSONObject:
    """A Messages API message as the chat completion Anthropic's OpenAI-compatible endpoint
    answers: its text blocks joined, its stop reason and usage in OpenAI's names."""
    message = message if isinstance(message, dict) else {}
    blocks = message.get("content")
    text = "".join(
        str(block.get("text") or "")
        for block in (blocks if isinstance(blocks, list) else [])
        if isinstance(block, dict) and block.get("type") == "text"
    )
    stop = message.get("stop_reason")
    usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    data: JSONObject = {
        "id": message.get("id"),
        "object": "chat.completion",
        "model": message.get("model"),
        "choices": [
            {
                "index": 0,
                "finish_reason": STOP_REASONS.get(str(stop), "stop"),
                "message": {"role": "assistant", "content": text},
            }
        ],
    }
    if isinstance(tokens_in, int) and isinstance(tokens_out, int):
        data["usage"] = {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        }
    return data


def result_of(text: str) -> Result | None:
    """One line of the results file."""
    try:
        item: Any = json.loads(text)
    except ValueError:
        return None
    if not isinstance(item, dict) or not isinstance(item.get("custom_id"), str):
        return None
    custom_id, result = item["custom_id"], item.get("result")
    kind = result.get("type") if isinstance(result, dict) else None
    if kind == "succeeded" and isinstance(result, dict):
        return Result(custom_id, data=chat_completion(result.get("message")), status=200)
    if kind == "errored" and isinstance(result, dict):
        return Result(custom_id, error=error_text(result, json.dumps(result)))
    if kind in ("canceled", "expired"):
        return Result(custom_id, error=f"the request was {kind} before it ran")
    return Result(custom_id, error=f"a result of type {kind!r}, which is not known here")


def _same_origin(one: str, other: str) -> bool:
    a, b = urlsplit(one), urlsplit(other)
    return (a.scheme, a.netloc) == (b.scheme, b.netloc)


def _counts(data: dict[str, Any]) -> Counts:
    raw = data.get("request_counts")
    raw = raw if isinstance(raw, dict) else {}

    def whole(name: str) -> int:
        value = raw.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    failed = whole("errored") + whole("canceled") + whole("expired")
    total = whole("processing") + whole("succeeded") + failed
    return Counts(total, whole("succeeded"), failed)


class AnthropicBatches:
    name: ProtocolName = "anthropic"
    limits = Limits(requests=100_000, bytes=256_000_000)

    def __init__(self, http: BatchHttp) -> None:
        self.http = http

    def _item(self, line: Line) -> JSONObject:
        return {"custom_id": line.custom_id, "params": params_of(line.body)}

    def line_bytes(self, line: Line) -> int:
        return len(json.dumps(self._item(line)).encode("utf-8")) + 1

    async def submit(self, lines: Sequence[Line]) -> Submitted:
        body = {"requests": [self._item(line) for line in lines]}
        reply = await self.http.call(
            "POST",
            self.http.url("messages", "batches"),
            doing="submitting a message batch",
            submitting=True,
            json=body,
        )
        data = reply.data if isinstance(reply.data, dict) else {}
        batch_id = data.get("id")
        if not isinstance(batch_id, str) or not batch_id:
            raise BatchRefused(f"the answer names no batch id: {reply.text[:200]!r}")
        return Submitted(batch_id, str(data.get("processing_status") or "in_progress"))

    async def poll(self, provider_id: str) -> Polled:
        reply = await self.http.call(
            "GET",
            self.http.url("messages", "batches", provider_id),
            doing=f"polling batch {provider_id}",
        )
        data = reply.data if isinstance(reply.data, dict) else {}
        status = str(data.get("processing_status") or "unknown")
        results_url = data.get("results_url")
        details = {"results_url": results_url} if isinstance(results_url, str) else {}
        return Polled(status, status == "ended", _counts(data), None, details)

    async def results(self, provider_id: str, polled: Polled) -> AsyncIterator[Result]:
        url = self.http.url("messages", "batches", provider_id, "results")
        given = polled.details.get("results_url")
        if given and _same_origin(given, url):  # the key goes to no other host
            url = given
        async for text in self.http.lines(url, doing=f"reading the results of {provider_id}"):
            if (result := result_of(text)) is not None:
                yield result

    async def aclose(self) -> None:
        await self.http.aclose()
