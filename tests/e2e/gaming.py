"""Loopback models that game the scores: each answers by a strategy that needs no skill at the
figure it games (issue 31), for the end-to-end tests that check they land on chance level.

A strategy sees what a model sees (the prompt: the SPEC and the case's code) and, where it
isolates the figure it games, the case's label and gold rule as an oracle would: a model with
perfect verdicts that cites every rule games the right-reason rate alone. The suite is read
here by a reader of its own, not by the tool's loader.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.server import Behaviour, ReceivedRequest, reply

_SECTION = re.compile(r"^# (.+?)\s*$", re.MULTILINE)
_RULE_ITEM = re.compile(r"^(\d+)\.\s", re.MULTILINE)


@dataclass(frozen=True)
class Written:
    """A case file as this reader reads it."""

    case_id: str
    app: str
    code: str
    expected: str
    rule: int | None


def sections(text: str) -> dict[str, str]:
    """`# Heading` sections of a markdown file, outside fenced blocks (a `# comment` line
    inside a fence stays in its section)."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := _SECTION.match(line)):
            current = found.setdefault(heading.group(1).lower(), [])
            continue
        if current is not None:
            current.append(line)
    return {name: "\n".join(lines).strip() for name, lines in found.items()}


def read_suite(root: Path) -> tuple[list[Written], dict[str, list[int]]]:
    """Every case of a markdown suite, and each app's SPEC rule numbers."""
    cases: list[Written] = []
    spec: dict[str, list[int]] = {}
    for folder in sorted(p for p in root.iterdir() if (p / "SPEC.md").is_file()):
        prompt = sections((folder / "SPEC.md").read_text(encoding="utf-8"))["prompt"]
        spec[folder.name] = sorted({int(n) for n in _RULE_ITEM.findall(prompt)})
        for path in sorted(folder.glob("*-*.md")):
            parts = sections(path.read_text(encoding="utf-8"))
            if "code" not in parts:
                continue
            code = parts["code"].split("\n", 1)[1].rsplit("```", 1)[0].strip("\n")
            rule = parts.get("rule", "").split()
            cases.append(
                Written(
                    case_id=f"{folder.name}/{path.name}",
                    app=folder.name,
                    code=code,
                    expected=parts["expected"].split()[0].lower(),
                    rule=int(rule[0]) if rule else None,
                )
            )
    return cases, spec


def most_frequent_rule(cases: list[Written]) -> dict[str, int]:
    """Each app's most frequent gold rule (the lowest number of a tie)."""
    counts: dict[str, Counter[int]] = {}
    for case in cases:
        if case.rule is not None:
            counts.setdefault(case.app, Counter())[case.rule] += 1
    return {app: min(c, key=lambda r: (-c[r], r)) for app, c in counts.items()}


Play = Callable[[Written], tuple[str, list[tuple[int, str]]]]  # -> verdict, violations


def responder(cases: list[Written], play: Play) -> Callable[[ReceivedRequest], Behaviour]:
    """A loopback model that finds the case its prompt holds and answers as `play` says."""

    def respond(request: ReceivedRequest) -> Behaviour:
        # the longest code the prompt holds: a case's code may sit inside a longer one's
        case = max((c for c in cases if c.code in request.prompt), key=lambda c: len(c.code))
        verdict, violations = play(case)
        body = {
            "explanation": "Reviewed against the SPEC.",
            "assessment": verdict,
            "violations": [{"rule": r, "quote": q} for r, q in violations],
        }
        return reply(json.dumps(body))

    return respond


def first_line(code: str) -> str:
    return next(line for line in code.split("\n") if line.strip())


def every_rule(spec: dict[str, list[int]]) -> Play:
    """The right verdict, citing every rule of the SPEC."""

    def play(case: Written) -> tuple[str, list[tuple[int, str]]]:
        if case.expected == "good":
            return "good", []
        return "bad", [(rule, first_line(case.code)) for rule in spec[case.app]]

    return play


def gold_rule_quoting(quote: Callable[[Written], str]) -> Play:
    """The right verdict and the gold rule, with a quote that points at nothing."""

    def play(case: Written) -> tuple[str, list[tuple[int, str]]]:
        if case.expected == "good":
            return "good", []
        return "bad", [(case.rule or 1, quote(case))]

    return play


def always_bad_citing(rules: dict[str, int]) -> Play:
    """Every case bad, citing its app's most frequent rule: no reading at all."""

    def play(case: Written) -> tuple[str, list[tuple[int, str]]]:
        return "bad", [(rules[case.app], first_line(case.code))]

    return play


def surface_cue(cue: str) -> Play:
    """Bad when the code contains `cue`, good otherwise; cites rule 1."""

    def play(case: Written) -> tuple[str, list[tuple[int, str]]]:
        if cue in case.code:
            return "bad", [(1, first_line(case.code))]
        return "good", []

    return play


def gold_rule_every_line(case: Written) -> tuple[str, list[tuple[int, str]]]:
    """The right verdict and the gold rule, once per line of the code, each quoting its line:
    every quote is located and one of them lies on the flaw, without pointing at it."""
    if case.expected == "good":
        return "good", []
    return "bad", [(case.rule or 1, line) for line in case.code.split("\n") if line.strip()]
