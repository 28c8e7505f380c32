"""The OpenAI-compatible client alone, over httpx.MockTransport: payload, retries, faults."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import replace

import httpx
import pytest

from secbench_tui.core.models import Case, Message, SuiteKind
from secbench_tui.core.run.providers.base import RetryNotice, RunAborted
from secbench_tui.core.run.providers.openai_compat import (
    ClientSettings,
    OpenAICompatibleProvider,
    backoff_delay,
    parse_retry_after,
)

CASE = Case(
    kind=SuiteKind.MARKDOWN,
    app="shop",
    case_id="shop/a.md",
    test_file="/x/shop/a.md",
    expected="bad",
    code="SELECT 1;",
    messages=(Message(role="user", content="PROMPT"),),
)
OK_BODY = {
    "id": "gen-1",
    "model": "vendor/model-a",
    "provider": "VendorCloud",
    "choices": [
        {
            "finish_reason": "stop",
            "message": {
                "role": "assistant",
                "content": '{"assessment": "bad", "explanation": "x"}',
            },
        }
    ],
    "usage": {"prompt_tokens": 120, "completion_tokens": 30, "cost": 0.00042},
}

Handler = Callable[[httpx.Request], httpx.Response]


def provider_for(
    responses: list[Handler | httpx.Response], **settings: object
) -> tuple[OpenAICompatibleProvider, list[httpx.Request], list[float]]:
    requests: list[httpx.Request] = []
    sleeps: list[float] = []
    queue = list(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        item = queue.pop(0)
        return item(request) if callable(item) else item

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    config = ClientSettings(
        base_url="https://openrouter.ai/api/v1",
        api_key="sk-secret-123",
        model="vendor/model-a",
        **({"max_retries": 5, "timeout": 120.0} | settings),  # type: ignore[arg-type]
    )
    client = httpx.AsyncClient(transport=httpx.MockTransport(handle))
    provider = OpenAICompatibleProvider(
        config, client=client, rng=random.Random(1), sleep=fake_sleep
    )
    return provider, requests, sleeps


async def test_payload_and_headers_follow_openrouter() -> None:
    provider, requests, _ = provider_for(
        [httpx.Response(200, json=OK_BODY)], max_tokens=321, temperature=0.0, seed=7
    )
    completion = await provider.complete(CASE)
    body = json.loads(requests[0].content)
    assert body["max_tokens"] == 321 and body["temperature"] == 0.0 and body["seed"] == 7
    assert body["messages"] == [{"role": "user", "content": "PROMPT"}]
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["properties"]["assessment"]["enum"] == ["good", "bad"]
    assert body["provider"] == {"require_parameters": True}
    headers = requests[0].headers
    assert headers["authorization"] == "Bearer sk-secret-123"
    assert headers["http-referer"] and headers["x-title"] == "secbench-tui"
    assert completion.text == OK_BODY["choices"][0]["message"]["content"]  # type: ignore[index]
    assert (completion.prompt_tokens, completion.completion_tokens) == (120, 30)
    assert completion.cost == pytest.approx(0.00042)
    assert (completion.served_model, completion.provider) == ("vendor/model-a", "VendorCloud")
    assert completion.attempts == 1 and completion.error is None


@pytest.mark.parametrize(
    ("kind", "expected"), [("json_object", {"type": "json_object"}), ("none", None)]
)
async def test_response_format_fallbacks(kind: str, expected: object) -> None:
    provider, requests, _ = provider_for([httpx.Response(200, json=OK_BODY)], response_format=kind)
    await provider.complete(CASE)
    body = json.loads(requests[0].content)
    assert body.get("response_format") == expected
    assert ("provider" in body) is (expected is not None)


async def test_local_server_gets_no_openrouter_fields_and_no_key() -> None:
    requests: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(200, json=OK_BODY)

    config = ClientSettings(
        base_url="http://127.0.0.1:11434/v1", model="llama3", max_retries=5, timeout=120.0
    )
    provider = OpenAICompatibleProvider(
        config, client=httpx.AsyncClient(transport=httpx.MockTransport(handle))
    )
    await provider.complete(CASE)
    body = json.loads(requests[0].content)
    assert "provider" not in body and "usage" not in body and "max_tokens" in body
    assert "authorization" not in requests[0].headers
    assert "http-referer" not in requests[0].headers and "x-title" not in requests[0].headers
    assert requests[0].headers["user-agent"].startswith("secbench-tui/")
    assert str(requests[0].url) == "http://127.0.0.1:11434/v1/chat/completions"


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 524, 529])
async def test_retryable_statuses_are_retried(status: int) -> None:
    provider, requests, sleeps = provider_for(
        [
            httpx.Response(status, json={"error": {"code": status, "message": "busy"}}),
            httpx.Response(200, json=OK_BODY),
        ]
    )
    notices: list[RetryNotice] = []
    completion = await provider.complete(CASE, notices.append)
    assert completion.error is None and completion.attempts == 2
    assert len(requests) == 2 and len(sleeps) == 1
    assert notices[0].status == status and notices[0].rate_limited is (status == 429)


async def test_retry_after_is_honoured() -> None:
    provider, _, sleeps = provider_for(
        [
            httpx.Response(429, headers={"Retry-After": "7"}, json={"error": {"code": 429}}),
            httpx.Response(200, json=OK_BODY),
        ]
    )
    await provider.complete(CASE)
    assert sleeps == [7.0]


async def test_backoff_grows_and_gives_up_after_max_retries() -> None:
    provider, requests, sleeps = provider_for(
        [httpx.Response(503, text="down")] * 4, max_retries=3, backoff_base=1.0
    )
    completion = await provider.complete(CASE)
    assert len(requests) == 4 and completion.attempts == 4
    assert completion.error is not None and "503" in completion.error
    assert completion.status == 503
    assert len(sleeps) == 3 and sleeps[0] < sleeps[2]
    assert all(0.5 * 2**i <= s <= 2**i for i, s in enumerate(sleeps))


async def test_zero_retries_asks_once() -> None:
    provider, requests, sleeps = provider_for([httpx.Response(500, text="x")], max_retries=0)
    completion = await provider.complete(CASE)
    assert len(requests) == 1 and sleeps == [] and completion.error


async def test_dropped_connection_and_timeout_are_retried() -> None:
    def drop(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("Server disconnected", request=request)

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    provider, requests, _ = provider_for([drop, slow, httpx.Response(200, json=OK_BODY)])
    completion = await provider.complete(CASE)
    assert completion.error is None and completion.attempts == 3 and len(requests) == 3


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"error": {"code": 502, "message": "upstream died"}}, "upstream died"),
        ({"choices": [{"finish_reason": "error", "message": {"content": ""}}]}, "finish_reason"),
        ({"choices": [{"finish_reason": "stop", "message": {"content": "  "}}]}, "empty"),
        ({"choices": [{"finish_reason": "stop", "message": {"content": None}}]}, "empty"),
    ],
)
async def test_failures_inside_a_200_are_retried(body: dict[str, object], fragment: str) -> None:
    provider, requests, _ = provider_for([httpx.Response(200, json=body)] * 2, max_retries=1)
    completion = await provider.complete(CASE)
    assert len(requests) == 2
    assert completion.error is not None and fragment in completion.error


async def test_truncated_reply_is_an_error_without_retry() -> None:
    body = {"choices": [{"finish_reason": "length", "message": {"content": '{"assess'}}]}
    provider, requests, _ = provider_for([httpx.Response(200, json=body)])
    completion = await provider.complete(CASE)
    assert len(requests) == 1
    assert completion.error is not None and "max-tokens" in completion.error
    assert completion.text == '{"assess'


@pytest.mark.parametrize("status", [400, 403])
async def test_client_errors_are_recorded_on_the_case(status: int) -> None:
    provider, requests, _ = provider_for(
        [httpx.Response(status, json={"error": {"code": status, "message": "moderation"}})]
    )
    completion = await provider.complete(CASE)
    assert len(requests) == 1
    assert completion.status == status and completion.error and "moderation" in completion.error


@pytest.mark.parametrize(
    ("status", "message", "hint"),
    [
        (401, "No auth credentials found", "OPENROUTER_API_KEY"),
        (402, "Insufficient credits", "credits"),
        (404, "No endpoints found", "--model"),
        (400, "foo/bar is not a valid model ID", "--model"),
    ],
)
async def test_run_level_faults_abort_without_retry(status: int, message: str, hint: str) -> None:
    provider, requests, _ = provider_for(
        [httpx.Response(status, json={"error": {"code": status, "message": message}})]
    )
    with pytest.raises(RunAborted) as info:
        await provider.complete(CASE)
    assert len(requests) == 1
    assert hint in str(info.value) and info.value.status == status
    assert "sk-secret-123" not in str(info.value)


async def test_in_body_401_aborts_too() -> None:
    provider, _, _ = provider_for(
        [httpx.Response(200, json={"error": {"code": 401, "message": "User not found."}})]
    )
    with pytest.raises(RunAborted, match="OPENROUTER_API_KEY"):
        await provider.complete(CASE)


def test_retry_after_forms() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", now=90.0) == pytest.approx(10.0)


def test_backoff_delay_is_capped_and_jittered() -> None:
    rng = random.Random(3)
    delays = [backoff_delay(n, 1.0, 8.0, rng) for n in range(1, 8)]
    assert all(d <= 8.0 for d in delays) and delays[-1] >= 4.0
    assert len(set(delays)) == len(delays)


async def test_failed_attempts_are_billed_and_counted() -> None:
    billed_empty = {
        "model": "vendor/model-a",
        "choices": [{"finish_reason": "stop", "message": {"content": ""}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 0, "cost": 0.001},
    }
    provider, _, _ = provider_for(
        [httpx.Response(200, json=billed_empty), httpx.Response(200, json=OK_BODY)]
    )
    completion = await provider.complete(CASE)
    assert completion.error is None and completion.attempts == 2
    assert completion.cost == pytest.approx(0.001 + 0.00042)
    assert completion.prompt_tokens == 220 and completion.completion_tokens == 30


async def test_a_truncated_reply_keeps_its_usage() -> None:
    body = {
        "model": "vendor/model-a",
        "provider": "VendorCloud",
        "choices": [{"finish_reason": "length", "message": {"content": "{"}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 1024, "cost": 0.05},
    }
    provider, _, _ = provider_for([httpx.Response(200, json=body)])
    completion = await provider.complete(CASE)
    assert completion.error and completion.cost == pytest.approx(0.05)
    assert (completion.completion_tokens, completion.provider) == (1024, "VendorCloud")


async def test_a_key_that_cannot_be_a_header_aborts_without_showing_it() -> None:
    config = ClientSettings(
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-or-secret\n",
        model="m",
        max_retries=5,
        timeout=120.0,
    )
    provider = OpenAICompatibleProvider(config)
    with pytest.raises(RunAborted) as info:
        await provider.complete(CASE)
    assert "OPENROUTER_API_KEY" in str(info.value)
    assert "sk-or-secret" not in str(info.value) and "sk-or-secret" not in repr(config)
    await provider.aclose()


async def test_missing_structured_output_support_points_at_the_fallback() -> None:
    message = "No endpoints found that can handle the requested parameters."
    provider, _, _ = provider_for(
        [httpx.Response(404, json={"error": {"code": 404, "message": message}})]
    )
    with pytest.raises(RunAborted, match="--response-format json_object"):
        await provider.complete(CASE)


def _with_message(message: dict[str, object], **usage: object) -> dict[str, object]:
    body = json.loads(json.dumps(OK_BODY))
    body["choices"][0]["message"] |= message
    body["usage"] |= usage
    return body


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"reasoning": "thought A"}, "thought A"),
        ({"reasoning": None, "reasoning_content": "thought B"}, "thought B"),
        (
            {
                "reasoning_details": [
                    {"type": "reasoning.text", "text": "part 1"},
                    {"type": "reasoning.encrypted", "data": "opaque"},
                    {"type": "reasoning.summary", "summary": "part 2"},
                ]
            },
            "part 1\n\npart 2",
        ),
        ({"reasoning": "", "reasoning_details": "not a list"}, None),
        ({}, None),
    ],
)
async def test_reasoning_is_read_from_every_field_servers_use(
    message: dict[str, object], expected: str | None
) -> None:
    body = _with_message(message, completion_tokens_details={"reasoning_tokens": 21})
    provider, _, _ = provider_for([httpx.Response(200, json=body)])
    completion = await provider.complete(CASE)
    assert completion.error is None
    assert completion.reasoning == expected
    assert completion.reasoning_tokens == 21


async def test_thinking_cut_off_by_max_tokens_is_an_error_that_keeps_the_thinking() -> None:
    body = _with_message({"content": "", "reasoning": "Let me see"})
    body["choices"][0]["finish_reason"] = "length"
    provider, requests, _ = provider_for([httpx.Response(200, json=body)], max_tokens=64)
    completion = await provider.complete(CASE)
    assert len(requests) == 1  # not retried: the same budget would be cut again
    assert (
        completion.error is not None and "while the model was still reasoning" in completion.error
    )
    assert "raise --max-tokens" in completion.error
    assert completion.reasoning == "Let me see"


async def test_reasoning_effort_is_sent_only_when_asked_for() -> None:
    provider, requests, _ = provider_for(
        [httpx.Response(200, json=OK_BODY)] * 2, reasoning_effort="minimal"
    )
    await provider.complete(CASE)
    assert json.loads(requests[0].content)["reasoning"] == {"effort": "minimal"}
    plain, plain_requests, _ = provider_for([httpx.Response(200, json=OK_BODY)])
    await plain.complete(CASE)
    assert "reasoning" not in json.loads(plain_requests[0].content)


async def test_security_bench_style_sends_its_body_and_nothing_else_even_to_openrouter() -> None:
    four = (
        Message(role="system", content="S"),
        Message(role="user", content="spec"),
        Message(role="user", content="prompt\r\n"),
        Message(role="user", content="code"),
    )
    provider, requests, _ = provider_for(
        [httpx.Response(200, json=OK_BODY)],
        request_style="security-bench",
        reasoning_effort="high",  # refused by the CLI; the body ignores it regardless
        seed=3,
    )
    await provider.complete(replace(CASE, **{"messages": four}))
    body = json.loads(requests[0].content)
    assert list(body) == ["model", "messages", "response_format", "temperature", "max_tokens"]
    assert [m["content"] for m in body["messages"]] == ["S", "spec", "prompt\r\n", "code"]
    assert (body["temperature"], body["max_tokens"]) == (0.1, 30000)
    assert body["response_format"]["json_schema"]["name"] == "security_assessment"
    assert (
        requests[0].content == json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    )


async def test_thinking_counted_but_not_returned_still_gets_the_reasoning_advice() -> None:
    body = _with_message({"content": ""}, completion_tokens_details={"reasoning_tokens": 64})
    body["choices"][0]["finish_reason"] = "length"
    provider, _, _ = provider_for([httpx.Response(200, json=body)], max_tokens=64)
    completion = await provider.complete(CASE)
    assert completion.error is not None and "still reasoning" in completion.error
    assert completion.reasoning is None and completion.reasoning_tokens == 64


async def test_an_error_inside_a_200_keeps_what_it_was_billed() -> None:
    billed_error = {
        "error": {"code": 502, "message": "upstream died"},
        "usage": {"prompt_tokens": 40, "completion_tokens": 3, "cost": 0.002},
    }
    provider, _, _ = provider_for([httpx.Response(200, json=billed_error)], max_retries=0)
    completion = await provider.complete(CASE)
    assert completion.error is not None and "upstream died" in completion.error
    assert (completion.prompt_tokens, completion.cost) == (40, 0.002)


async def test_whole_attempt_deadline_covers_a_body_that_trickles() -> None:
    import asyncio

    class Trickle(httpx.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[override]
            for byte in json.dumps(OK_BODY).encode():
                await asyncio.sleep(0.05)  # every read well within httpx's per-read timeout
                yield bytes([byte])

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=Trickle())

    provider, _, _ = provider_for([handle], max_retries=0, timeout=0.3)
    completion = await provider.complete(CASE)
    assert completion.error == "no complete reply within --timeout 0.3s (the reply had started)"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('{"choices": [{"message": {"content": 42}}]}', "int, not text"),
        ('{"choices": "none"}', "no choices"),
        ("<html>502</html>", "not JSON"),
    ],
)
async def test_a_reply_that_cannot_be_read_is_kept_with_a_reason(body: str, reason: str) -> None:
    provider, _, _ = provider_for([httpx.Response(200, text=body)], max_retries=0)
    completion = await provider.complete(CASE)
    assert completion.error is None and completion.text == body
    assert completion.unreadable is not None and reason in completion.unreadable


async def test_an_odd_finish_reason_is_kept_as_text() -> None:
    body = json.loads(json.dumps(OK_BODY))
    body["choices"][0]["finish_reason"] = {"why": [7]}
    provider, _, _ = provider_for([httpx.Response(200, json=body)])
    completion = await provider.complete(CASE)
    assert completion.error is None and completion.finish_reason == '{"why": [7]}'
    assert completion.cost == pytest.approx(0.00042)
