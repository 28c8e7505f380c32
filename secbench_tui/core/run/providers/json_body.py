"""Request bodies as httpx's `json=` writes them, with a run's long shared text escaped once.

Every request of a markdown suite's app starts with the same text (its SPEC prompt, about
13 KB in the bundled suite) followed by the case's code. Escaping that text for JSON again
for every request cost as much as the rest of building the request. JSON escapes a string
character by character, so the escaped text of `prefix + rest` is the escaped `prefix`
followed by the escaped `rest`: `BodyEncoder` keeps each prefix's escaped form and writes
the same bytes httpx would (compact separators, UTF-8, no NaN), checked against it by the
tests.
"""

from __future__ import annotations

import json
from typing import Any

from secbench_tui.core.models import ChatRequest

SHARED_AT_LEAST = 1024  # characters: shorter prefixes are escaped with the rest
_MARK = "\x00secbench-tui: the shared message\x00"  # stands in for the long message


def encode_json(body: Any) -> str:
    """`body` as httpx's `json=` encodes it (before UTF-8)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class BodyEncoder:
    """Bodies whose message starts with a known long prefix, the prefix escaped once."""

    def __init__(self) -> None:
        self._escaped: dict[str, str] = {}  # prefix -> its JSON string, closing quote cut

    def encode(self, body: ChatRequest, prefix: str = "") -> bytes:
        """The body's bytes; the first message starting with `prefix` goes the short way."""
        messages = body.get("messages")
        if len(prefix) >= SHARED_AT_LEAST and isinstance(messages, list):
            for i, message in enumerate(messages):
                text = message.get("content")
                if isinstance(text, str) and text.startswith(prefix):
                    return self._with_prefix(body, messages, i, prefix, text)
        return encode_json(body).encode("utf-8")

    def _with_prefix(
        self,
        body: ChatRequest,
        messages: list[Any],
        i: int,
        prefix: str,
        text: str,
    ) -> bytes:
        marked = [*messages[:i], {**messages[i], "content": _MARK}, *messages[i + 1 :]]
        out = encode_json({**body, "messages": marked})
        mark = encode_json(_MARK)
        if out.count(mark) != 1:  # the mark's text was in the body already: no short way
            return encode_json(body).encode("utf-8")
        head = self._escaped.get(prefix)
        if head is None:
            head = self._escaped[prefix] = encode_json(prefix)[:-1]
        return out.replace(mark, head + encode_json(text[len(prefix) :])[1:]).encode("utf-8")
