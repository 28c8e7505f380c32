"""Request bodies written with a shared prefix escaped once are httpx's own bytes."""

from __future__ import annotations

import json

import httpx
import pytest

from secbench_tui.core.models import Case, SuiteKind
from secbench_tui.core.run.providers.json_body import (
    _MARK,
    SHARED_AT_LEAST,
    BodyEncoder,
    SharedPrefixes,
)
from secbench_tui.core.run.spec import CONTENT_KEYED, RunSpec
from secbench_tui.core.store.values import prompt_keyed, text_hash

HOSTILE = [
    'plain "quoted" \\ back\\slash',
    "line\nbreak\r\n\ttab \x00 nul \x1b[31m escape \x7f del",
    "non-ASCII é 中文 \u2028 \u2029 emoji 😀 \U0001f4a9",
    "ends with a backslash \\",
    _MARK,  # the encoder's own stand-in, in the text itself
]


def httpx_bytes(body: object) -> bytes:
    return httpx.Request("POST", "http://127.0.0.1/v1/chat/completions", json=body).content


def body(model: str, *contents: str) -> dict[str, object]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": c} for c in contents],
        "max_tokens": 1024,
        "response_format": {"type": "json_schema", "json_schema": {"name": "v", "strict": True}},
    }


@pytest.mark.parametrize("prefix_text", HOSTILE)
@pytest.mark.parametrize("rest", HOSTILE)
def test_the_bytes_are_httpxs_whatever_the_texts(prefix_text: str, rest: str) -> None:
    prefix = (prefix_text * (SHARED_AT_LEAST // len(prefix_text) + 1))[: SHARED_AT_LEAST + 7]
    encoder = BodyEncoder()
    for code in (rest, rest[::-1], ""):  # the prefix's escaped form is kept between bodies
        sent = body("openai/gpt-4o-mini", prefix + "\n\n" + code)
        assert encoder.encode(sent, prefix) == httpx_bytes(sent)  # type: ignore[arg-type]


def test_a_second_message_a_short_prefix_and_a_model_named_like_the_mark() -> None:
    prefix = "SPEC " * 400
    encoder = BodyEncoder()
    for sent, shared in (
        (body("m", "system words", prefix + "code"), prefix),  # the second message has it
        (body(_MARK, prefix + "code"), prefix),  # the mark appears elsewhere: the long way
        (body("m", "short prefix, then code"), "short prefix"),  # below SHARED_AT_LEAST
        (body("m", "no such prefix"), prefix),
    ):
        assert encoder.encode(sent, shared) == httpx_bytes(sent)  # type: ignore[arg-type]


def test_the_prefix_is_escaped_once_and_kept() -> None:
    """The short way is taken (the tests above would pass the long way too): what the
    encoder kept of the prefix is what it writes for the next body."""
    prefix = "x" * SHARED_AT_LEAST
    encoder = BodyEncoder()
    encoder.encode(body("m", prefix + "a"), prefix)  # type: ignore[arg-type]
    encoder._heads[prefix] = b'"' + b"y" * SHARED_AT_LEAST  # what it kept, it writes
    assert b"y" * SHARED_AT_LEAST in encoder.encode(body("m", prefix + "b"), prefix)  # type: ignore[arg-type]


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("text", HOSTILE)
def test_a_kept_prefix_gives_json_dumps_own_string(text: str, ensure_ascii: bool) -> None:
    strings = SharedPrefixes(ensure_ascii)
    prefix = (text * (SHARED_AT_LEAST // len(text) + 1))[:SHARED_AT_LEAST]
    for rest in HOSTILE:
        whole = prefix + rest
        assert strings.string(whole, prefix) == json.dumps(whole, ensure_ascii=ensure_ascii)


@pytest.mark.parametrize("text", HOSTILE)
def test_request_hashes_are_the_ones_stored_results_were_keyed_by(text: str) -> None:
    """Reuse and resume find stored answers by these hashes: they must stay what they were
    (json.dumps of the messages, whole)."""
    prefix = (text * (SHARED_AT_LEAST // len(text) + 1))[: SHARED_AT_LEAST + 3]
    cases = [
        Case(
            kind=SuiteKind.MARKDOWN,
            app="a",
            case_id=f"a/{i}.md",
            test_file=f"/s/a/{i}.md",
            expected="bad",
            code=code,
            prompt_prefix=prefix,
        )
        for i, code in enumerate(HOSTILE)
    ]
    spec = RunSpec(model="m", cases=cases, suite_kind="markdown", suite_path="/s")
    request = json.dumps(spec._request_settings(), sort_keys=True)
    for case in cases:
        messages = json.dumps([[m.role, m.content] for m in case.prompt_messages()])
        base = text_hash("m", case.case_id, messages, str(case.structured), request)
        assert spec.request_hash(case) == prompt_keyed(base, CONTENT_KEYED)
        assert spec.request_hash(case, "old name") == prompt_keyed(base, "old name")
