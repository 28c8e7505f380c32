"""Model reply -> verdict, without guessing.

A reply counts only when it holds a JSON object whose `assessment` is good or bad (in any
case): plain JSON, JSON in a fenced block, or JSON before or after prose. Anything else is
`unparsed`, and the raw reply is kept by the caller. A reply holding two objects that disagree
is unparsed too: picking one would be a guess.

Verdict schema 2 adds `violations`: `[{"rule": <int>, "quote": "<the offending line>"}]`, empty
exactly when the assessment is good. A reply without the key is read as schema 1 (a verdict
with no reason given); a reply with it that breaks the schema (a bad verdict naming no
violation, a good one naming some, a rule that is not a number, a quote that is not text) has
its `problem` said and no verdict: it is unparsed, never scored as if it had kept the schema.
Verdict schema 3 lets a violation carry an `exploit`: kept as the reply holds it, for
`--prove-findings` to check and run; what it holds never changes the verdict or its score.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from secbench_tui.core.models import JSONObject

_FENCED = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


_RULE_TEXT = re.compile(r"^\s*(?:rule\s*)?#?\s*(\d{1,4})\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Violation:
    rule: int
    quote: str
    # verdict schema 3: the exploit as the reply holds it (untrusted JSON, checked where it is
    # proven: `core.suites.exploit_verdict`); None when the violation carries none
    exploit: object = None


@dataclass(frozen=True)
class Verdict:
    assessment: str | None  # "good", "bad", or None when unparsed
    explanation: str | None
    violations: tuple[Violation, ...] | None = None  # None: the reply has no `violations`
    problem: str | None = None  # why a reply with `violations` breaks verdict schema 2

    @property
    def parsed(self) -> bool:
        return self.assessment is not None


def _rule_number(value: Any) -> int | None:
    """5, 5.0, "5", "rule 5", "#5" -> 5; anything else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if isinstance(value, str) and (match := _RULE_TEXT.match(value)):
        return int(match.group(1))
    return None


def _violations_of(value: Any, assessment: str) -> tuple[Violation, ...] | str:
    """The violations of a schema 2 reply, or what breaks the schema."""
    if not isinstance(value, list):
        return "`violations` is not a list"
    found = []
    for i, item in enumerate(value, 1):
        if not isinstance(item, dict):
            return f"violation {i} is not an object with `rule` and `quote`"
        fields = {str(k).lower(): v for k, v in item.items()}
        rule = _rule_number(fields.get("rule"))
        if rule is None:
            return f"violation {i}: `rule` is not a rule number"
        quote = fields.get("quote", "")
        if not isinstance(quote, str):
            return f"violation {i}: `quote` is not text"
        found.append(Violation(rule, quote, fields.get("exploit")))
    if assessment == "bad" and not found:
        return "assessment is bad but `violations` is empty"
    if assessment == "good" and found:
        return "assessment is good but `violations` lists some"
    return tuple(found)


def _objects_in(text: str) -> list[JSONObject]:
    """Every JSON object that decodes cleanly at some `{` of the text, outermost first."""
    found: list[JSONObject] = []
    pos = text.find("{")
    while pos != -1:
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):  # (nested past Python's limit: no object here)
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
            pos = text.find("{", end)
        else:
            pos = text.find("{", pos + 1)
    return found


def _assessment_of(obj: JSONObject) -> Verdict | None:
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
    if "violations" not in lowered:
        return Verdict(assessment, explanation)
    violations = _violations_of(lowered["violations"], assessment)
    if isinstance(violations, str):
        return Verdict(assessment, explanation, None, violations)
    return Verdict(assessment, explanation, violations)


def reply_objects(reply: str | None) -> list[JSONObject]:
    """The JSON objects a reply holds, where a verdict is looked for: those in fenced blocks
    when there are any, else those in the text, outermost first."""
    if not reply or not reply.strip():
        return []
    candidates: list[JSONObject] = []
    for block in _FENCED.findall(reply):
        candidates.extend(_objects_in(block))
    return candidates or _objects_in(reply)


def parse_verdict(reply: str | None) -> Verdict:
    candidates = reply_objects(reply)
    if not candidates:
        return Verdict(None, None)
    verdicts = [v for v in (_assessment_of(obj) for obj in candidates) if v is not None]
    if not verdicts:
        return Verdict(None, None)
    if len({v.assessment for v in verdicts}) > 1:
        return Verdict(None, None)
    verdict = verdicts[0]
    if verdict.problem is not None:  # schema 2 broken: no verdict, and why
        return Verdict(None, verdict.explanation, None, verdict.problem)
    return verdict
