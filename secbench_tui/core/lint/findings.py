"""Findings across a suite's cases: rules, label words in comments, and duplicate code.

A bad case names the SPEC rule it breaks, a good case none; a comment that states or hints a
verdict gives the label away; two cases with the same code (comments aside) cannot both be
right when their labels differ, and count twice when they agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from secbench_tui.core.lint.cases import LintCase
from secbench_tui.core.lint.comments import WORD, Comment, normalise
from secbench_tui.core.lint.report import Finding
from secbench_tui.core.suites.gold import MAX_ALSO_ACCEPTABLE

# Words that state or hint a verdict. "check-in" and "check_out" stay single tokens, so
# domain words are not flagged; a bare "check" is, since "-- check the tenant" is a hint.
LABEL_WORDS = frozenset(
    """
    safe safely safer safety unsafe unsafely secure securely security insecure insecurely
    vulnerable vulnerability vulnerabilities vuln vulns compliant compliance noncompliant
    non-compliant comply complies violation violations violate violates violated violating
    exploit exploits exploitable exploited leak leaks leaked leaking leakage bug bugs buggy
    fix fixes fixed fixme todo xxx hack hacky correct correctly incorrect incorrectly wrong
    wrongly bad badly good should shouldn't must mustn't ensure ensures ensured ensuring check
    checks checked checking verify verifies verified oops forgot forgotten missing
    intentional intentionally deliberate deliberately careful carefully beware danger dangerous
    risk risky attack attacker attackers injection injectable inject injected sanitize
    sanitized sanitise sanitised unsanitized idor cve cwe owasp guard guards guarded enforce
    enforces enforced prevent prevents prevented protect protects protected unauthorized
    unauthorised bypass bypasses bypassed flaw flawed flaws broken properly proper improper
    improperly
    """.split()
)
_RULE_REFERENCE = re.compile(r"\brules?\s*#?\s*\d+", re.IGNORECASE)


def rule_findings(cases: Sequence[LintCase], rules: Sequence[int]) -> list[Finding]:
    """A bad case must name the SPEC rule it breaks, by a number of the SPEC's numbered list;
    a good case breaks none. In an app where no case names a rule (a suite written before
    rules, such as the original security-bench's) the missing rules are a warning: its reason
    scores are shown as not available."""
    findings = []
    any_rule = any(c.gold.rule is not None for c in cases)
    known = ", ".join(str(n) for n in rules) or "none"
    for case in cases:
        gold = case.gold
        if case.expected == "good" and gold.present:
            message = (
                "a good case breaks no rule: remove its '# Rule', '# Also acceptable', '# Lines'"
            )
            findings.append(Finding("rule", message, case.path, case.app))
            continue
        if case.expected != "bad":
            continue
        if gold.rule is None:
            message = "bad case without '# Rule': add one naming the SPEC rule it breaks"
            if not any_rule:
                message += " (no case of this app names one: reason scores not available)"
            findings.append(Finding("rule", message, case.path, case.app, fails=any_rule))
        for number in (gold.rule, *gold.also):
            if number is not None and number not in rules:
                message = f"rule {number} is not in the SPEC's numbered list (rules: {known})"
                findings.append(Finding("rule", message, case.path, case.app))
        findings.extend(_also_findings(case))
    return findings


def _also_findings(case: LintCase) -> list[Finding]:
    """`# Also acceptable` names other rules, and few: listing many would credit a model
    that cites them all (the right-reason rate rewards the gold rule and these only)."""
    findings = []
    rule = case.gold.rule
    if rule is not None and rule in case.also_listed:
        message = f"'# Also acceptable' lists rule {rule}, the case's '# Rule': remove it there"
        findings.append(Finding("rule", message, case.path, case.app))
    others = set(case.also_listed) - {rule}
    if len(others) > MAX_ALSO_ACCEPTABLE:
        message = (
            f"'# Also acceptable' lists {len(others)} rules, more than {MAX_ALSO_ACCEPTABLE}:"
            " keep the ones a careful reviewer could cite instead of the '# Rule'"
        )
        findings.append(Finding("rule", message, case.path, case.app))
    return findings


def pair_findings(cases: Sequence[LintCase]) -> list[Finding]:
    """A warning for each case that belongs to no pair: its name does not follow the rule of
    `core.case_names`, or its scenario has no case of the other label. Such a case still
    counts for accuracy, but for none of the pair or scenario figures."""
    labels: dict[tuple[str, str], set[str]] = {}
    for case in cases:
        if case.named:
            labels.setdefault((case.app, case.scenario), set()).add(case.expected)
    findings = []
    for case in cases:
        if not case.named:
            message = "belongs to no pair: its name is not <scenario>-<number>-<good|bad>.md"
        elif len(labels[(case.app, case.scenario)]) < 2:
            other = "bad" if case.expected == "good" else "good"
            message = f"belongs to no pair: scenario {case.scenario!r} has no {other} case"
        else:
            continue
        findings.append(Finding("pair", message, case.path, case.app, fails=False))
    return findings


def comment_findings(case: LintCase, comments: Sequence[Comment]) -> list[Finding]:
    """A `comment` finding for each comment of `case` with label words or a rule number."""
    findings = []
    for comment in comments:
        words = sorted({w for w in WORD.findall(comment.text.lower()) if w in LABEL_WORDS})
        if _RULE_REFERENCE.search(comment.text):
            words.append("rule N")
        if words:
            text = normalise(comment.text)
            text = text if len(text) <= 70 else text[:67] + "..."
            message = f"comment carries label words ({', '.join(words)}): {text}"
            findings.append(Finding("comment", message, case.path, case.app, comment.line))
    return findings


def duplicate_findings(cases: Sequence[LintCase], stripped: Sequence[str]) -> list[Finding]:
    """Cases whose code, without comments (`stripped`, in the order of `cases`), is the same."""
    groups: dict[str, list[int]] = {}
    for i, code in enumerate(stripped):
        groups.setdefault(normalise(code), []).append(i)
    findings = []
    for members in groups.values():
        if len(members) < 2:
            continue
        names = ", ".join(str(cases[i].path) for i in members)
        labels = {cases[i].expected for i in members}
        exact = len({normalise(cases[i].code) for i in members}) == 1
        kind = "the same code" if exact else "the same code apart from comments"
        clash = " with different labels" if len(labels) > 1 else ""
        findings.append(Finding("duplicate", f"{kind}{clash}: {names}", app=cases[members[0]].app))
    return findings
