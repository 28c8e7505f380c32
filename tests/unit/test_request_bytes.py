"""What a request is, byte for byte and by its hash.

A body is written by httpx's `json=` (compact separators, UTF-8, no NaN): the bytes
JavaScript's `JSON.stringify` writes for the same object, which `--request-style
security-bench` relies on. Reuse and resume find stored answers by the request hash, so it
must stay what stored results were keyed by: a hash of `json.dumps` of the messages, whole.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from secbench_tui.core.models import Case, Message, SuiteKind
from secbench_tui.core.run.providers.openai_compat import ClientSettings, OpenAICompatibleProvider
from secbench_tui.core.run.spec import CONTENT_KEYED, RunSpec
from secbench_tui.core.store.values import prompt_keyed, text_hash
from tests.e2e.server import LoopbackServer

HOSTILE = [
    'plain "quoted" \\ back\\slash',
    "line\nbreak\r\n\ttab \x00 nul \x1b[31m escape \x7f del",
    "non-ASCII é 中文 \u2028 \u2029 emoji 😀 \U0001f4a9",
    "ends with a backslash \\",
]
# about the size of a bundled SPEC prompt, every hostile text in it
PREFIX = 'SPEC: "quoted" \\ é 中文 \u2028 😀 \x1b[2J\n' * 60


def markdown_case(n: int, code: str, prefix: str = PREFIX) -> Case:
    return Case(
        kind=SuiteKind.MARKDOWN,
        app="a",
        case_id=f"a/case-{n:02d}-bad.md",
        test_file=f"/s/a/case-{n:02d}-bad.md",
        expected="bad",
        code=code,
        prompt_prefix=prefix,
    )


@pytest.mark.parametrize("style", ["secbench-tui", "security-bench"])
async def test_a_body_is_the_compact_utf8_json_of_the_payload(style: str) -> None:
    """Over real HTTP, hostile texts included: what arrives is the payload written as
    `JSON.stringify` writes it, and reads back to the same messages."""
    cases = [markdown_case(n, code) for n, code in enumerate(HOSTILE)]
    if style == "security-bench":  # its four messages of its own, no shared prefix
        cases = [replace(c, prompt_prefix="", messages=_four(c.code)) for c in cases]
    with LoopbackServer() as server:
        settings = ClientSettings(
            base_url=server.base_url,
            model="vendor/model",
            request_style=style,
            max_retries=0,
            timeout=30.0,
        )
        provider = OpenAICompatibleProvider(settings)
        try:
            for case in cases:
                completion = await provider.complete(case)
                assert completion.error is None, completion.error
        finally:
            await provider.aclose()
        sent = [r.raw for r in server.completions()]
    assert len(sent) == len(cases)
    for case, raw in zip(cases, sent, strict=True):
        payload = provider.payload(case)
        written = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        assert raw == written.encode("utf-8")
        messages = json.loads(raw)["messages"]
        assert messages == [{"role": m.role, "content": m.content} for m in case.prompt_messages()]


def _four(code: str) -> tuple[Message, ...]:
    return (
        Message(role="system", content="S"),
        Message(role="user", content=PREFIX),
        Message(role="user", content="Judge it.\r\n"),
        Message(role="user", content=code),
    )


@pytest.mark.parametrize("text", HOSTILE)
def test_request_hashes_are_the_json_of_the_messages_whole(text: str) -> None:
    cases = [markdown_case(n, code + text) for n, code in enumerate(HOSTILE)]
    spec = RunSpec(model="m", cases=cases, suite_kind="markdown", suite_path="/s")
    request = json.dumps(spec._request_settings(), sort_keys=True)
    for case in cases:
        messages = json.dumps([[m.role, m.content] for m in case.prompt_messages()])
        base = text_hash("m", case.case_id, messages, str(case.structured), request)
        assert spec.request_hash(case) == prompt_keyed(base, CONTENT_KEYED)
        assert spec.request_hash(case, "old name") == prompt_keyed(base, "old name")


# Computed at 1c94f2b, before bodies and hashes were written plainly (the app's prompt was
# escaped once per run then): results stored since are keyed by these, so they must not move.
STORED_KEYS = {
    "a/hostile-01-bad.md": (
        "7f60cde6348c33d29f0fd53db3d79812e75d05ce8e72a3ac87f91084fb9e40af",
        "4e625962baea22202b516b4a9a359535f74dabfcba10530e671e6ed641427367",
    ),
    "a/plain-02-good.md": (
        "e21755a43f27831d535211276e92f64803f5108837a2a712dc1837fbb0fee856",
        "0b7e9cd70d77acc8c4980eb5a084496a2b53ab00fd1723e41e62c3b0b5d490c8",
    ),
    "a/four-03-good.md": (
        "b05494ef3c7cd169fbe1242a7d46604e6408c08563935a529a2fe3ed89b1dc06",
        "e3c33e6660e89a119100955fc2f86d8b1b671d13e10d823d3187bf9d6918dc8a",
    ),
}


def test_request_hashes_are_the_ones_results_were_stored_under() -> None:
    def case(case_id: str, code: str, **kw: object) -> Case:
        expected = "bad" if case_id.endswith("bad.md") else "good"
        return Case(kind=SuiteKind.MARKDOWN, app="a", case_id=case_id, test_file=f"/s/{case_id}",
                    expected=expected, code=code, **kw)  # type: ignore[arg-type]  # fmt: skip

    cases = [
        case("a/hostile-01-bad.md", "SELECT '\\' || \"x\" -- \x00 \U0001f4a9",
             prompt_prefix=PREFIX),
        case("a/plain-02-good.md", "SELECT 1;"),
        case("a/four-03-good.md", "c", messages=(Message(role="system", content="S é"),
                                                 Message(role="user", content=PREFIX))),
    ]  # fmt: skip
    spec = RunSpec(model="vendor/model", cases=cases, suite_kind="markdown", suite_path="/s")
    found = {c.case_id: (spec.request_hash(c), spec.request_hash(c, "old.txt")) for c in cases}
    assert found == STORED_KEYS
