"""`--task fix`: the fixed code a reply gives, and the fix figures of a run's stored rows.

A fix reply is verdict schema 4 (`core.suites.fix_reply`): the verdict, then `fixed_code`.
`fixed_code_of` reads the code as it reads a verdict (`parsing.reply_objects`: the JSON
objects of the reply, keys in any case) and never guesses: a reply whose objects give two
different codes gives none, and so does an empty one. A code the model wrapped in a fenced
block whole is read without its fences.

The figures are made from the rows (`Store.run_results`, which joins each result's verified
fix): one answer per bad case (its first), outcomes as verifying stored them
(`core.fixes.models.FixOutcome`), rates over the cases whose scenario can judge a fix.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from secbench_tui.core.fixes.models import FixOutcome
from secbench_tui.core.results.fix_figures import FixSummary, FixTally
from secbench_tui.core.results.metrics import wilson_interval
from secbench_tui.core.results.parsing import reply_objects
from secbench_tui.core.results.reasons import stored_gold
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.suites.fix_reply import FIXED_CODE, PROPOSED_CODE
from secbench_tui.core.suites.markdown import extract_code


def fixed_code_of(reply: str | None) -> str | None:
    """The corrected code a fix reply gives, or None when it gives none (or two that differ)."""
    return _code_of(reply, FIXED_CODE)


def proposed_code_of(reply: str | None) -> str | None:
    """The code a case proposal (`secbench-tui fix`) gives, read as `fixed_code_of` reads."""
    return _code_of(reply, PROPOSED_CODE)


def _code_of(reply: str | None, name: str) -> str | None:
    found: set[str] = set()
    for obj in reply_objects(reply):
        for key, value in obj.items():
            if str(key).lower() == name and isinstance(value, str) and value.strip():
                found.add(_unfenced(value))
    return found.pop() if len(found) == 1 else None


def _unfenced(code: str) -> str:
    """`code`, or the body of the one fenced block that is the whole of it."""
    stripped = code.strip()
    if stripped.startswith(("```", "~~~")) and stripped.endswith(("```", "~~~")):
        body = extract_code(stripped)
        if body is not None and body.strip():
            return body
    return code


def _first_bad_answers(rows: Iterable[ResultRow]) -> list[ResultRow]:
    """The first answer to each bad markdown case (repeat 0), originals only."""
    return [
        row
        for row in rows
        if row.get("suite_kind", "markdown") == "markdown"
        and not row.get("repeat")
        and row.get("variant") is None
        and str(row.get("expected_result") or "").strip().lower() == "bad"
    ]


def _outcome(row: ResultRow) -> FixOutcome | None:
    """The stored outcome of the row's fix; None when it has none (not verified yet)."""
    value = row.get("fix_outcome")
    try:
        return FixOutcome(value) if value is not None else None
    except ValueError:  # written by a later version: counted as not verified by this one
        return None


def _tally(rows: Sequence[ResultRow]) -> FixTally:
    counts: dict[FixOutcome, int] = {}
    unverified = 0
    for row in rows:
        outcome = _outcome(row)
        if outcome is None:
            unverified += 1
        else:
            counts[outcome] = counts.get(outcome, 0) + 1
    judged = len(rows) - counts.get(FixOutcome.NOT_VERIFIABLE, 0)

    def rate(outcome: FixOutcome) -> float | None:
        return counts.get(outcome, 0) / judged if judged else None

    proven = counts.get(FixOutcome.PROVEN, 0)
    return FixTally(
        bad_cases=len(rows),
        judged=judged,
        proven=proven,
        secure_broken=counts.get(FixOutcome.SECURE_BROKEN, 0),
        functional_insecure=counts.get(FixOutcome.FUNCTIONAL_INSECURE, 0),
        insecure=counts.get(FixOutcome.INSECURE, 0),
        refused=counts.get(FixOutcome.REFUSED, 0),
        not_run=counts.get(FixOutcome.NOT_RUN, 0),
        did_not_parse=counts.get(FixOutcome.UNPARSED, 0),
        no_answer=counts.get(FixOutcome.NO_ANSWER, 0),
        not_verifiable=counts.get(FixOutcome.NOT_VERIFIABLE, 0),
        unverified=unverified,
        proven_rate=rate(FixOutcome.PROVEN),
        proven_rate_ci=wilson_interval(proven, judged) if judged else None,
        secure_broken_rate=rate(FixOutcome.SECURE_BROKEN),
        functional_insecure_rate=rate(FixOutcome.FUNCTIONAL_INSECURE),
        did_not_parse_rate=rate(FixOutcome.UNPARSED),
    )


def _median(values: Sequence[int]) -> float | None:
    return float(statistics.median(values)) if values else None


def _rule(row: ResultRow) -> str:
    rules = stored_gold(row.get("gold"))
    return str(rules[0]) if rules else "none"


def fix_summary(rows: Iterable[ResultRow]) -> FixSummary | None:
    """The fix figures of a run's rows; None when it holds no answer to a bad case."""
    answers = _first_bad_answers(rows)
    if not answers:
        return None
    changes = [n for r in answers if (n := r.get("fix_change_lines")) is not None]
    proven = [
        n
        for r in answers
        if (n := r.get("fix_change_lines")) is not None and _outcome(r) is FixOutcome.PROVEN
    ]
    by_app: dict[str, list[ResultRow]] = {}
    by_rule: dict[str, list[ResultRow]] = {}
    for row in answers:
        by_app.setdefault(str(row.get("app") or ""), []).append(row)
        by_rule.setdefault(_rule(row), []).append(row)
    return FixSummary(
        **_tally(answers).model_dump(),
        median_change_lines=_median(changes),
        median_change_lines_proven=_median(proven),
        apps={app: _tally(group) for app, group in sorted(by_app.items())},
        rules={
            rule: _tally(group)
            for rule, group in sorted(by_rule.items(), key=lambda kv: _rule_order(kv[0]))
        },
    )


def _rule_order(rule: str) -> tuple[int, str]:
    return (int(rule), "") if rule.isdigit() else (10**9, rule)


def fix_text(row: ResultRow) -> list[str]:
    """A result's verified fix in words, line by line (what the app's result detail shows
    above the diffs): the outcome, why, the change size, and the parameter set that shows a
    fix is not proven, with its rows. Empty for a result without one. Foreign text (reasons,
    rows) is left as it is: the front end neutralises it."""
    outcome = row.get("fix_outcome")
    if outcome is None:
        return []
    words = {True: "yes", False: "no", None: "not known"}
    lines = [
        f"{outcome}: secure {words[row.get('fix_secure')]},"
        f" functional {words[row.get('fix_functional')]}"
    ]
    if row.get("fix_reason"):
        lines.append(str(row.get("fix_reason")))
    if row.get("fix_change_lines") is not None:
        lines.append(f"changes {row.get('fix_change_lines')} lines of the bad case")
    if row.get("fix_twin"):
        lines.append(f"compared with its nearest compliant twin {row.get('fix_twin')}")
    lines += _failing_lines(row.get("fix_detail"))
    return lines


def _failing_lines(detail: str | None) -> list[str]:
    import json

    try:
        data = json.loads(detail or "{}")
    except (ValueError, RecursionError):
        return []
    if not isinstance(data, dict):
        return []
    lines: list[str] = []
    for key, title in (("insecure", "insecure on"), ("broken", "differs from the twin on")):
        failing = data.get(key)
        if not isinstance(failing, dict):
            continue
        params = json.dumps(failing.get("params"), sort_keys=True, ensure_ascii=False)
        lines.append(f"{title} parameter set {failing.get('set')} {params}: {failing.get('why')}")
        for name, label in (
            ("violations", "  rule broken"),
            ("rows", "  the fix returned"),
            ("twin_rows", "  the twin returned"),
        ):
            rows = failing.get(name)
            if isinstance(rows, list) and rows:
                for shown in rows[:SHOWN_ROWS]:
                    lines.append(
                        f"{label}: {json.dumps(shown, sort_keys=True, ensure_ascii=False)}"
                    )
                if len(rows) > SHOWN_ROWS:
                    lines.append(f"{label}: ... and {len(rows) - SHOWN_ROWS} more")
    notes = data.get("notes")
    if isinstance(notes, list):
        lines += [f"note: {note}" for note in notes]
    return lines


SHOWN_ROWS = 5  # rows of each kind shown per failing parameter set (the database keeps 20)
