"""Reading a reply body that Python's json module refuses for its depth.

`json.loads` raises RecursionError on a body nested a few thousand levels deep, and a server
can send one (by mistake or on purpose). The reply may still hold a usable answer, its token
counts and its cost, so rather than lose them the body is read again with every container
deeper than `max_depth` replaced by `null`. The scan is one linear pass over the text (strings
are skipped whole by a regular expression), so even a large hostile body costs little.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64  # far deeper than any reply this tool reads a field from

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def prune(text: str, max_depth: int = MAX_DEPTH) -> str:
    """The JSON text with each container that starts deeper than `max_depth` made `null`."""
    out: list[str] = []
    depth = 0
    kept_to = 0  # text before this index is already in `out` (or dropped)
    dropping_from: int | None = None  # depth at which the container being dropped opened
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        if token in "[{":
            depth += 1
            if dropping_from is None and depth > max_depth:
                out.append(text[kept_to : match.start()])
                out.append("null")
                dropping_from = depth
        else:
            if dropping_from is not None and depth == dropping_from:
                kept_to = match.end()
                dropping_from = None
            depth -= 1
    if dropping_from is None:
        out.append(text[kept_to:])
    return "".join(out)


def loads(text: str, max_depth: int = MAX_DEPTH) -> tuple[Any, bool]:
    """Parse JSON; too deep a body is parsed pruned. Returns (data, pruned); raises ValueError."""
    try:
        return json.loads(text), False
    except RecursionError:
        pass
    try:
        return json.loads(prune(text, max_depth)), True
    except RecursionError as exc:  # cannot happen after pruning; never let it escape
        raise ValueError("the body is nested too deeply to read") from exc
