"""Right for the right reason: the rules a reply cites, and where it says the flaw is.

A bad case carries its gold rule (and rules also acceptable) and its gold lines; a reply in
verdict schema 2 lists `violations`, each a rule and a quote of the offending line.

- The rules: a bad case answered `bad` has the right reason when it cites an acceptable rule
  (the gold rule or one also acceptable) and at most `ALLOWED_EXTRA_RULES` rule that is not
  one: citing every rule of the SPEC earns nothing. Rule recall (an acceptable rule cited,
  whatever else) and rule precision stay as secondary figures.
- The quote: found in the case's code by a match that ignores whitespace (models miscount
  lines, so line numbers are never asked for). It points at lines only when it is a
  meaningful span (at least `MIN_QUOTE_CHARS` characters other than whitespace, or whole
  lines) that occurs exactly once; otherwise it is "not located", and the citation says why.
  "Rule and line" needs the located quotes of the cited acceptable rules to lie within the
  gold lines, `LINE_SLACK` lines either side allowed: every one of them, so quoting each
  line of the code under the same rule points at nothing.

Everything here is a pure function over typed values, so the summary, the report, the app and
other figures (the rewrites' "rule cited kept the same") compute reasons the same way.
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from secbench_tui.core.case_names import scenario_of
from secbench_tui.core.models import Case, Citation, ReasonScore
from secbench_tui.core.results.parsing import Verdict, Violation
from secbench_tui.core.store.rows import ResultRow

LINE_SLACK = 1  # a quote one line off the gold lines still lies within them
MIN_QUOTE_CHARS = 12  # non-whitespace characters a quote needs to point at a line (or whole lines)
ALLOWED_EXTRA_RULES = 1  # rules cited beside an acceptable one that still leave the reason right


def _squeezed(text: str) -> tuple[str, list[int]]:
    """`text` without whitespace, and the (0-based) line of each character kept."""
    chars: list[str] = []
    lines: list[int] = []
    line = 0
    for char in text:
        if char == "\n":
            line += 1
        elif not char.isspace():
            chars.append(char)
            lines.append(line)
    return "".join(chars), lines


@dataclass(frozen=True)
class Location:
    """Where a quote points: the lines (1-based) of its one match, or why it points nowhere."""

    lines: tuple[int, ...] = ()
    note: str | None = None


def _occurrences(hay: str, needle: str) -> list[int]:
    found = []
    start = hay.find(needle)
    while start != -1:
        found.append(start)
        start = hay.find(needle, start + 1)
    return found


def _whole_lines(start: int, end: int, line_of: Sequence[int]) -> bool:
    """Whether the squeezed span [start, end] begins a line's text and ends one's."""
    first = bisect.bisect_left(line_of, line_of[start])
    last = bisect.bisect_right(line_of, line_of[end]) - 1
    return start == first and end == last


def locate(quote: str, code: str) -> Location:
    """Where `quote` points in `code`, matched ignoring all whitespace: the lines its match
    spans when it is meaningful and occurs once, else none and the reason."""
    needle, _ = _squeezed(quote.replace("\r", ""))
    if not needle:
        return Location(note="empty quote")
    hay, line_of = _squeezed(code)
    starts = _occurrences(hay, needle)
    if not starts:
        return Location(note="not in the code")
    spans = [(start, start + len(needle) - 1) for start in starts]
    if len(needle) < MIN_QUOTE_CHARS and not any(_whole_lines(a, b, line_of) for a, b in spans):
        return Location(
            note=f"too short to point at a line ({len(needle)} characters; at least"
            f" {MIN_QUOTE_CHARS}, or a whole line)"
        )
    if len(spans) > 1:
        return Location(note=f"found {len(spans)} times in the code: it points at no one place")
    start, end = spans[0]
    return Location(lines=tuple(range(line_of[start] + 1, line_of[end] + 2)))


def within(lines: Iterable[int], gold: Sequence[int], slack: int = LINE_SLACK) -> bool:
    """Whether every one of `lines` (at least one) is within `slack` lines of a gold line."""
    ordered = sorted(gold)
    shown = list(lines)
    if not shown or not ordered:
        return False
    for line in shown:
        i = bisect.bisect_left(ordered, line - slack)
        if i == len(ordered) or ordered[i] > line + slack:
            return False
    return True


def acceptable_rules(case: Case) -> frozenset[int]:
    """The rules that count as the right reason for a bad case: its gold rule and the rules
    also acceptable; empty when the case names none."""
    if case.rule is None:
        return frozenset()
    return frozenset((case.rule, *case.also_rules))


def precise(cited: Iterable[int], gold: frozenset[int]) -> bool:
    """The right reason by its rules: an acceptable rule cited, and at most
    `ALLOWED_EXTRA_RULES` rules cited that are not acceptable."""
    rules = set(cited)
    return bool(rules & gold) and len(rules - gold) <= ALLOWED_EXTRA_RULES


def cite(violation: Violation, code: str) -> Citation:
    where = locate(violation.quote, code)
    return Citation(rule=violation.rule, quote=violation.quote, lines=where.lines, note=where.note)


def judge(case: Case, verdict: Verdict) -> ReasonScore:
    """The reason of one parsed reply, against the case's gold reason."""
    if verdict.problem is not None:
        return ReasonScore(problem=verdict.problem)
    citations = tuple(cite(v, case.code) for v in verdict.violations or ())
    gold = acceptable_rules(case)
    if case.expected != "bad" or not gold:
        return ReasonScore(given=verdict.violations is not None, citations=citations)
    right = verdict.assessment == "bad" and precise((c.rule for c in citations), gold)
    # every located quote of an acceptable rule on the gold lines: one quote per line of the
    # code, each citing the same rule, would otherwise find the flaw without looking for it
    pointed = [c.lines for c in citations if c.rule in gold and c.lines]
    on_the_lines = bool(pointed) and all(within(lines, case.gold_lines) for lines in pointed)
    return ReasonScore(
        given=verdict.violations is not None,
        citations=citations,
        right_rule=right,
        right_line=right and on_the_lines,
    )


# --- figures over answers ------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One case as a model answered it: what the figures of reasons and pairs are made of.

    `verdict` is good, bad, or None (unparsed, error). `gold` is the bad case's right rules
    (empty for a good case, or when the suite names none); `spec` the numbers of its SPEC's
    rules (what "cite every rule" cites: the chance levels need them)."""

    case_id: str
    expected: str
    verdict: str | None
    gold_rule: int | None = None
    gold: frozenset[int] = frozenset()
    cited: tuple[int, ...] = ()
    right_rule: bool = False
    right_line: bool = False
    app: str = ""
    spec: tuple[int, ...] = ()

    @property
    def scenario(self) -> str | None:
        return scenario_of(self.case_id)

    @property
    def cites_gold(self) -> bool:
        """Answered bad citing an acceptable rule, whatever else it cites (rule recall)."""
        return self.verdict == "bad" and bool(self.gold.intersection(self.cited))

    @property
    def correct(self) -> bool:
        return self.verdict is not None and self.verdict == self.expected


def answer_of(row: ResultRow) -> Answer:
    """An `Answer` from a stored result row (`Store.run_results`), its reason read back."""
    reason = stored_reason(row.get("reasons"))
    gold, spec = stored_gold(row.get("gold")), stored_spec(row.get("gold"))
    verdict = row.get("actual_result")
    outcome = row.get("outcome")
    said = str(verdict).strip().lower() if outcome in ("correct", "wrong") and verdict else None
    return Answer(
        case_id=str(row.get("case_id") or ""),
        expected=str(row.get("expected_result") or "").strip().lower(),
        verdict=said,
        gold_rule=gold[0] if gold else None,
        gold=frozenset(gold),
        cited=reason.rules if reason else (),
        right_rule=bool(reason and reason.right_rule),
        right_line=bool(reason and reason.right_line),
        app=str(row.get("app") or ""),
        spec=spec,
    )


def stored_reason(text: Any) -> ReasonScore | None:
    """A stored `reasons` value read back; None when absent or unreadable (hostile file)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return ReasonScore.from_json(text)
    except ValueError:
        return None


def _stored_numbers(text: Any, key: str) -> tuple[int, ...]:
    if not isinstance(text, str) or not text:
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        return ()
    numbers = value.get(key) if isinstance(value, dict) else None
    if not isinstance(numbers, list):
        return ()
    return tuple(n for n in numbers if isinstance(n, int) and not isinstance(n, bool))


def stored_gold(text: Any) -> tuple[int, ...]:
    """The stored gold rules of a bad case: the gold rule first, then those also acceptable."""
    return _stored_numbers(text, "rules")


def stored_spec(text: Any) -> tuple[int, ...]:
    """The numbers of the SPEC's rules stored beside a bad case's gold (none: recorded by a
    version that did not keep them)."""
    return _stored_numbers(text, "spec")


@dataclass(frozen=True)
class ReasonFigures:
    """Reason figures over one run's answers (first answers of markdown cases).

    `bad_cases` counts bad cases that name a gold rule; with none, every rate is None (the
    suite names no rules: not available). Each of them is one of: right (the right reason),
    imprecise (an acceptable rule cited among too many others), wrong rule, wrong verdict."""

    bad_cases: int = 0
    right_rule: int = 0
    right_rule_and_line: int = 0
    imprecise: int = 0  # answered bad citing an acceptable rule, but too many others with it
    wrong_rule: int = 0  # answered bad citing no acceptable rule: the guessing signal
    wrong_verdict: int = 0  # answered good, or no verdict
    cited_on_bad: int = 0  # rules cited on bad cases (each rule once per answer)
    cited_right: int = 0  # of those, gold or acceptable
    per_rule: dict[int, RuleRow] = field(default_factory=dict)

    @property
    def available(self) -> bool:
        return self.bad_cases > 0

    def rate(self, count: int) -> float | None:
        return count / self.bad_cases if self.bad_cases else None

    @property
    def right_rule_rate(self) -> float | None:
        return self.rate(self.right_rule)

    @property
    def right_rule_and_line_rate(self) -> float | None:
        return self.rate(self.right_rule_and_line)

    @property
    def rule_hit(self) -> int:
        """Bad cases answered bad citing an acceptable rule, whatever else they cite."""
        return self.right_rule + self.imprecise

    @property
    def rule_recall(self) -> float | None:
        return self.rate(self.rule_hit)

    @property
    def rule_precision(self) -> float | None:
        return self.cited_right / self.cited_on_bad if self.cited_on_bad else None


@dataclass
class RuleRow:
    """One SPEC rule: its bad cases, how many were answered for it, how often it was cited
    (rightly or not), and the good cases it was cited on (false alarms)."""

    rule: int
    bad_cases: int = 0
    right: int = 0  # its bad cases answered bad with the right reason
    cited: int = 0  # answers citing it, on any case
    cited_right: int = 0  # of those, on a bad case it is gold or acceptable for
    false_alarms: int = 0  # good cases it was cited on


def reason_figures(answers: Iterable[Answer]) -> ReasonFigures:
    """Right-reason rate, its stricter form with the line, the verdict-by-reason split, rule
    recall and precision, and the per-rule table, over answers to markdown cases."""
    counts: Counter[str] = Counter()
    rows: dict[int, RuleRow] = {}

    def row(rule: int) -> RuleRow:
        return rows.setdefault(rule, RuleRow(rule))

    for answer in answers:
        for rule in answer.cited:
            row(rule).cited += 1
        if answer.expected == "good":
            if answer.verdict == "bad":
                for rule in answer.cited:
                    row(rule).false_alarms += 1
            continue
        if answer.expected != "bad" or not answer.gold:
            continue
        counts["bad"] += 1
        if answer.gold_rule is not None:
            row(answer.gold_rule).bad_cases += 1
        for rule in answer.cited:
            counts["cited"] += 1
            if rule in answer.gold:
                counts["cited_right"] += 1
                row(rule).cited_right += 1
        if answer.verdict != "bad":
            counts["wrong_verdict"] += 1
        elif answer.right_rule:
            counts["right"] += 1
            counts["right_line"] += answer.right_line
            if answer.gold_rule is not None:
                row(answer.gold_rule).right += 1
        elif answer.cites_gold:
            counts["imprecise"] += 1
        else:
            counts["wrong_rule"] += 1
    return ReasonFigures(
        bad_cases=counts["bad"],
        right_rule=counts["right"],
        right_rule_and_line=counts["right_line"],
        imprecise=counts["imprecise"],
        wrong_rule=counts["wrong_rule"],
        wrong_verdict=counts["wrong_verdict"],
        cited_on_bad=counts["cited"],
        cited_right=counts["cited_right"],
        per_rule=dict(sorted(rows.items())),
    )


def first_answers(rows: Iterable[ResultRow]) -> list[Answer]:
    """The first answer (repeat 0) to each markdown case of a run's rows."""
    return [
        answer_of(row)
        for row in rows
        if row.get("suite_kind", "markdown") == "markdown" and not row.get("repeat")
    ]


def rule_text(reason: ReasonScore | None, width: int = 10) -> str:
    """The rules a reply cited, marked right (✓) or wrong (✗) when the case has a gold rule:
    `4 ✓`, `2,7 ✗`; `-` for none. One renderer for every front end."""
    if reason is None or not reason.citations:
        return "-" if reason is None or reason.right_rule is None else "- ✗"
    rules = ",".join(map(str, reason.rules))
    if len(rules) > width - 2:
        rules = rules[: width - 3] + "…"
    if reason.right_rule is None:
        return rules
    return f"{rules} {'✓' if reason.right_rule else '✗'}"


def reason_summary_text(reason: ReasonScore | None, gold: Sequence[int]) -> list[str]:
    """A result's reason in words, line by line: the gold rule, each rule cited with its quote
    and where the quote points (or why nowhere), and whether the rule and the line are right."""
    lines = []
    if gold:
        also = f" (also acceptable: {', '.join(map(str, gold[1:]))})" if gold[1:] else ""
        lines.append(f"breaks rule {gold[0]}{also}")
    if reason is None:
        return lines
    if reason.problem:
        lines.append(f"breaks verdict schema 2: {reason.problem}")
    if not reason.given and not reason.problem:
        lines.append("no violations listed (a verdict without its reason: schema 1)")
    for c in reason.citations:
        where = (
            f"lines {', '.join(map(str, c.lines))}" if c.lines else f"quote not located: {c.note}"
        )
        mark = "" if not gold else (" (right rule)" if c.rule in gold else " (not this case's)")
        lines.append(f"cites rule {c.rule}{mark}: {c.quote!r} ({where})")
    if reason.right_rule is not None:
        lines.append(_reason_verdict(reason, frozenset(gold)))
    return lines


def _reason_verdict(reason: ReasonScore, gold: frozenset[int]) -> str:
    if reason.right_rule:
        return "right rule" + ("; quote on the flawed lines" if reason.right_line else "")
    others = len(set(reason.rules) - gold)
    if gold.intersection(reason.rules) and others > ALLOWED_EXTRA_RULES:
        return (
            f"not the right reason: a right rule among {others} others"
            f" (at most {ALLOWED_EXTRA_RULES} allowed)"
        )
    if not reason.citations:  # a good verdict lists none; a bad one should have
        return "not the right reason: no rule cited"
    wanted = " or ".join(map(str, sorted(gold)))
    return f"not the right reason: a wrong rule (the case breaks rule {wanted})"
