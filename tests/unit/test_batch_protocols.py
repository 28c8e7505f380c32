"""The batch protocols' pure parts: which protocol an endpoint speaks, how requests are cut
into batches, how each provider's results and Anthropic's requests read, and the progress
lines (whose provider text is neutralised)."""

from __future__ import annotations

import json

import pytest

from secbench_tui.core.run.batch import anthropic, openai, openrouter
from secbench_tui.core.run.batch.progress import batch_line, progress_lines
from secbench_tui.core.run.batch.protocol import BatchRefused, Limits, Line, protocol_for
from secbench_tui.core.run.batch.split import ENVELOPE, custom_id, split
from secbench_tui.core.run.events import BatchProgress, BatchView


@pytest.mark.parametrize(
    ("url", "api", "expected"),
    [
        ("https://openrouter.ai/api/v1", "auto", "openrouter"),
        ("https://eu.openrouter.ai/api/v1", "auto", "openrouter"),
        ("https://api.anthropic.com/v1", "auto", "anthropic"),
        ("https://api.openai.com/v1", "auto", "openai"),
        ("http://127.0.0.1:8000/v1", "auto", "openai"),
        ("https://notopenrouter.ai.example/v1", "auto", "openai"),
        ("http://127.0.0.1:8000/v1", "anthropic", "anthropic"),
    ],
)
def test_the_protocol_follows_the_host_unless_asked(url: str, api: str, expected: str) -> None:
    assert protocol_for(url, api) == expected  # type: ignore[arg-type]


def lines(n: int, size: int = 10) -> list[Line]:
    return [Line(custom_id(f"{i:064x}", 0), {"x": "y" * size}) for i in range(n)]


@pytest.mark.parametrize(
    ("limits", "sizes"),
    [
        (openrouter.OpenRouterBatches.limits, [5_000, 5_000]),
        (openai.OpenAIBatches.limits, [10_000]),
        (anthropic.AnthropicBatches.limits, [10_000]),
        (Limits(requests=100_000, bytes=ENVELOPE + 30 * 4_000), [4_000, 4_000, 2_000]),
    ],
)
def test_ten_thousand_requests_split_within_the_limits(limits: Limits, sizes: list[int]) -> None:
    many = lines(10_000)
    batches, oversize = split(many, limits, lambda line: 30)
    assert oversize == [] and [len(b) for b in batches] == sizes
    assert [line for b in batches for line in b] == many  # every request once, in order


def test_requests_are_split_by_bytes_and_one_too_large_goes_in_none() -> None:
    limits = Limits(requests=100, bytes=ENVELOPE + 250)
    sizes = {line.custom_id: 100 for line in lines(5)}
    big = Line("rbig-0", {})
    sizes[big.custom_id] = 251
    batches, oversize = split(
        [*lines(5)[:3], big, *lines(5)[3:]], limits, lambda one: sizes[one.custom_id]
    )
    assert [len(b) for b in batches] == [2, 2, 1] and oversize == [big]
    assert all(sum(sizes[x.custom_id] for x in b) <= limits.bytes - ENVELOPE for b in batches)


def test_request_ids_fit_every_providers_rule() -> None:
    made = custom_id("f" * 64, 12_345)
    assert len(made) <= 64 and all(c.isalnum() or c in "-_" for c in made)
    assert custom_id("a" * 64, 0) != custom_id("a" * 64, 1)


def test_openai_result_lines_read_as_bodies_or_errors() -> None:
    ok = {"custom_id": "r1", "response": {"status_code": 200, "body": {"choices": []}}}
    refused = {
        "custom_id": "r2",
        "response": {"status_code": 400, "body": {"error": {"message": "bad"}}},
    }
    expired = {
        "custom_id": "r3",
        "response": None,
        "error": {"code": "batch_expired", "message": "late"},
    }
    read = [openai.result_of(json.dumps(x)) for x in (ok, refused, expired)]
    assert read[0] is not None and read[0].data == {"choices": []} and read[0].error is None
    assert read[1] is not None and read[1].error == "HTTP 400: bad"
    assert read[2] is not None and read[2].error == "late (batch_expired)"
    assert openai.result_of("not json") is None and openai.result_of('{"no": "id"}') is None


def test_openrouter_results_read_as_bodies_or_errors() -> None:
    ok = openrouter.result_of(
        {"custom_id": "a", "response": {"status_code": 200, "body": {"id": 1}}}
    )
    failed = openrouter.result_of({"custom_id": "b", "error": {"message": "rate limited"}})
    assert ok is not None and ok.data == {"id": 1} and ok.status == 200
    assert failed is not None and failed.error == "rate limited" and failed.data is None
    assert openrouter.result_of(["not", "a", "dict"]) is None


def test_anthropic_requests_carry_the_live_body_as_its_openai_endpoint_reads_it() -> None:
    body = {
        "model": "claude-x",
        "messages": [
            {"role": "system", "content": "rules one"},
            {"role": "system", "content": "rules two"},
            {"role": "user", "content": "code"},
        ],
        "max_tokens": 900,
        "temperature": 1.7,
        "seed": 3,
    }
    params = anthropic.params_of(body)
    assert params == {
        "model": "claude-x",
        "max_tokens": 900,
        "system": "rules one\nrules two",
        "messages": [{"role": "user", "content": "code"}],
        "temperature": 1.0,
    }
    with pytest.raises(BatchRefused):
        anthropic.params_of({**body, "response_format": {"type": "json_schema"}})


def test_anthropic_messages_read_as_the_chat_completion_its_openai_endpoint_answers() -> None:
    line = {
        "custom_id": "r1",
        "result": {
            "type": "succeeded",
            "message": {
                "id": "msg_1",
                "model": "claude-x",
                "content": [
                    {"type": "text", "text": '{"assessment":'},
                    {"type": "text", "text": ' "bad"}'},
                ],
                "stop_reason": "max_tokens",
                "usage": {"input_tokens": 12, "output_tokens": 5},
            },
        },
    }
    read = anthropic.result_of(json.dumps(line))
    assert read is not None and read.data is not None
    choice = read.data["choices"][0]  # type: ignore[index]
    assert choice["message"]["content"] == '{"assessment": "bad"}'
    assert choice["finish_reason"] == "length"
    assert read.data["usage"] == {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    expired = anthropic.result_of(json.dumps({"custom_id": "r2", "result": {"type": "expired"}}))
    assert expired is not None and "expired" in str(expired.error)


def test_progress_lines_say_what_the_run_waits_on_with_provider_text_neutralised() -> None:
    hostile = "batch_\x1b]0;pwned\x07\x1b[2J"
    view = BatchView(
        1, hostile, "in_progress\x1b[31m", 10, completed=4, failed=1, elapsed=725, next_poll=45
    )
    line = batch_line(view)
    assert "\x1b" not in line and "\x07" not in line
    assert "10 requests: 5 in progress, 4 completed, 1 failed" in line
    assert "sent 12m 5s ago" in line and "next poll in 45s" in line
    waiting = progress_lines(BatchProgress(1, (view,)))[-1]
    assert waiting.startswith("waiting on the provider: 1 batch(es), 10 requests")
    validating = BatchView(2, None, "validating", 3)
    assert "3 requests: 3 validating" in batch_line(validating)


async def test_an_id_the_server_gave_stays_one_segment_of_the_path() -> None:
    from secbench_tui.core.run.batch.transport import BatchHttp

    http = BatchHttp("http://127.0.0.1:9/api/v1?api-version=2", {}, 1.0)
    try:
        url = http.url("batches", "../../admin?x=1#y")
    finally:
        await http.aclose()
    assert url == "http://127.0.0.1:9/api/v1/batches/..%2F..%2Fadmin%3Fx%3D1%23y?api-version=2"
