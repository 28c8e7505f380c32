"""The verdict reply's JSON schema (`core.suites.verdict`): made from the pydantic model, sent
as made, in the shape strict structured outputs require, and the bytes every earlier version
sent (so a request for a case is the same request it was)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from secbench_tui.core.models import Case, Message, SuiteKind
from secbench_tui.core.run.providers.openai_compat import ClientSettings, OpenAICompatibleProvider
from secbench_tui.core.suites.verdict import (
    StructuredOutputSchema,
    VerdictReply,
    verdict_schema,
)

CASE = Case(
    kind=SuiteKind.MARKDOWN,
    app="shop",
    case_id="shop/a.md",
    test_file="a.md",
    expected="bad",
    code="SELECT 1;",
    messages=(Message(role="user", content="P"),),
)
REPLY = {"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}]}
# What every version before the model sent, as its source wrote it: the request's bytes for
# a case must stay the same, so that a server sees the same question.
SENT_BEFORE = (
    '{"type":"object","properties":{"explanation":{"type":"string"},"assessment":{"type":'
    '"string","enum":["good","bad"]},"violations":{"type":"array","items":{"type":"object",'
    '"properties":{"rule":{"type":"integer"},"quote":{"type":"string"}},"required":["rule",'
    '"quote"],"additionalProperties":false}}},"required":["explanation","assessment",'
    '"violations"],"additionalProperties":false}'
)


async def _sent_body() -> bytes:
    """The body the client sends for one case, as bytes on the wire."""
    sent: list[bytes] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(200, json=REPLY)

    settings = ClientSettings(
        base_url="http://127.0.0.1:9/v1", model="m/x", max_retries=0, timeout=5.0
    )
    client = httpx.AsyncClient(transport=httpx.MockTransport(handle))
    provider = OpenAICompatibleProvider(settings, client=client)
    await provider.complete(CASE)
    await provider.aclose()
    return sent[0]


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def test_the_schema_sent_is_the_models() -> None:
    body = json.loads(await _sent_body())
    sent = body["response_format"]["json_schema"]["schema"]
    made = VerdictReply.model_json_schema(schema_generator=StructuredOutputSchema)
    assert _compact(sent) == _compact(made)  # the same keys in the same order
    assert sent == verdict_schema()


async def test_the_request_bytes_are_the_ones_sent_before_the_model() -> None:
    raw = (await _sent_body()).decode("utf-8")
    assert f'"schema":{SENT_BEFORE}}}' in raw
    assert _compact(verdict_schema()) == SENT_BEFORE


def _objects(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            yield schema
        for value in schema.values():
            yield from _objects(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _objects(value)


def test_the_schema_keeps_the_rules_of_strict_structured_outputs() -> None:
    schema = verdict_schema()
    objects = list(_objects(schema))
    assert len(objects) == 2  # the verdict and a violation, written in place
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text and "title" not in text
    assert list(schema["properties"]) == ["explanation", "assessment", "violations"]


def test_the_model_takes_what_the_schema_allows_and_nothing_else() -> None:
    good = {"explanation": "x", "assessment": "bad", "violations": [{"rule": 2, "quote": "q"}]}
    assert VerdictReply.model_validate(good).violations[0].rule == 2
    for wrong in (
        {**good, "extra": 1},  # additionalProperties: false
        {k: v for k, v in good.items() if k != "violations"},  # every property required
        {**good, "assessment": "maybe"},  # the enum
        {**good, "violations": [{"rule": 2, "quote": "q", "line": 3}]},
    ):
        with pytest.raises(ValidationError):
            VerdictReply.model_validate(wrong)
