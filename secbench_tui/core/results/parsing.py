"""Model reply -> verdict, without guessing.

A reply counts only when it holds a JSON object whose `assessment` is good or bad (in any
case): plain JSON, JSON in a fenced block, or JSON before or after prose. Anything else is
`unparsed`, and the raw reply is kept by the caller. A reply holding two objects that disagree
is unparsed too: picking one would be a guess.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_FENCED = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Verdict:
    assessment: str | None  # "good", "bad", or None when unparsed
    explanation: str | None

    @property
    def parsed(self) -> bool:
        return self.assessment is not None


def _objects_in(text: str) -> list[dict[str, Any]]:
    """Every JSON object that decodes cleanly at some `{` of the text, outermost first."""
    found: list[dict[str, Any]] = []
    pos = text.find("{")
    while pos != -1:
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
            pos = text.find("{", end)
        else:
            pos = text.find("{", pos + 1)
    return found


def _assessment_of(obj: dict[str, Any]) -> tuple[str, str | None] | None:
    lowered = {str(k).lower(): v for k, v in obj.items()}
    value = lowered.get("assessment")
    if not isinstance(value, str):
        return None
    assessment = value.strip().strip(".").lower()
    if assessment not in ("good", "bad"):
        return None
    explanation = lowered.get("explanation")
    if explanation is not None and not isinstance(explanation, str):
        explanation = json.dumps(explanation)
    return assessment, explanation


def parse_verdict(reply: str | None) -> Verdict:
    if not reply or not reply.strip():
        return Verdict(None, None)
    candidates: list[dict[str, Any]] = []
    for block in _FENCED.findall(reply):
        candidates.extend(_objects_in(block))
    if not candidates:
        candidates = _objects_in(reply)
    verdicts = [v for v in (_assessment_of(obj) for obj in candidates) if v is not None]
    if not verdicts:
        return Verdict(None, None)
    if len({assessment for assessment, _ in verdicts}) > 1:
        return Verdict(None, None)
    assessment, explanation = verdicts[0]
    return Verdict(assessment, explanation)
