"""Request bodies as httpx's `json=` writes them, with a run's long shared text escaped once.

Every request of a markdown suite's app starts with the same text (its SPEC prompt, about
13 KB in the bundled suite) followed by the case's code. Escaping that text for JSON again
for every request cost as much as the rest of building the request. JSON escapes a string
character by character, so the escaped text of `prefix + rest` is the escaped `prefix`
followed by the escaped `rest`: `SharedPrefixes` keeps each prefix's escaped form, and
`BodyEncoder` writes with it the same bytes httpx would (compact separators, UTF-8, no NaN),
checked against httpx by the tests. The request hashes (`RunSpec.request_hash`) use the same
kept forms for the JSON of the messages they hash.
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


class SharedPrefixes:
    """JSON strings of texts that start with a long prefix, each prefix escaped once.

    `ensure_ascii` as `json.dumps` takes it (True for the request hashes, which were made
    with json.dumps' defaults; False for bodies, as httpx writes them)."""

    def __init__(self, ensure_ascii: bool) -> None:
        self.ensure_ascii = ensure_ascii
        self._escaped: dict[str, str] = {}  # prefix -> its JSON string, closing quote cut

    def string(self, text: str, prefix: str) -> str:
        """`json.dumps(text)` (with this `ensure_ascii`)."""
        if len(prefix) < SHARED_AT_LEAST or not text.startswith(prefix):
            return json.dumps(text, ensure_ascii=self.ensure_ascii)
        return self.head(prefix) + self.rest(text, prefix)

    def head(self, prefix: str) -> str:
        """`json.dumps(prefix)` without its closing quote, escaped once and kept."""
        head = self._escaped.get(prefix)
        if head is None:
            head = self._escaped[prefix] = json.dumps(prefix, ensure_ascii=self.ensure_ascii)[:-1]
        return head

    def rest(self, text: str, prefix: str) -> str:
        """What follows `head(prefix)` in `json.dumps(text)`, for a text that starts with it."""
        return json.dumps(text[len(prefix) :], ensure_ascii=self.ensure_ascii)[1:]


class BodyEncoder:
    """Bodies whose message starts with a known long prefix, the prefix escaped and encoded
    once: a body is the small rest of it, encoded, around the prefix's bytes."""

    def __init__(self) -> None:
        self._strings = SharedPrefixes(ensure_ascii=False)  # as httpx writes bodies
        self._heads: dict[str, bytes] = {}  # prefix -> `_strings.head(prefix)` as UTF-8
        self._mark = encode_json(_MARK)

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
        mark = self._mark
        at = out.find(mark)
        if at < 0 or out.find(mark, at + 1) >= 0:  # the mark's text was in the body already
            return encode_json(body).encode("utf-8")
        head = self._heads.get(prefix)
        if head is None:
            head = self._heads[prefix] = self._strings.head(prefix).encode("utf-8")
        rest = self._strings.rest(text, prefix).encode("utf-8")
        return b"".join((out[:at].encode("utf-8"), head, rest, out[at + len(mark) :].encode()))
