"""A reply read against its case: the one place that knows which scorer a case needs."""

from __future__ import annotations

from secbench_tui.core.models import Case, Completion, Outcome, Scored, SuiteKind
from secbench_tui.core.results.parsing import parse_verdict
from secbench_tui.core.results.reasons import judge
from secbench_tui.core.vuldetectbench import DEFAULT_SCORING

# Stored beside every score. Raise it whenever a change here or in parsing/reasons would score
# a stored reply differently; `--rescore` then recomputes stored results from their raw replies.
# 1: the verdict alone. 2: verdict schema 2, reasons (rule cited, quote on the gold lines).
# 3: the right reason needs precision (an acceptable rule and at most one other), and a quote
# points at lines only when it is long enough (or whole lines) and found once.
# 4: "rule and line" needs every located quote of an acceptable rule on the gold lines.
SCORING_VERSION = 4


def score_markdown(case: Case, reply: str | None) -> Scored:
    verdict = parse_verdict(reply)
    reason = judge(case, verdict)
    if verdict.assessment is None:
        return Scored(
            actual=None,
            outcome=Outcome.UNPARSED,
            explanation=verdict.explanation if verdict.problem else None,
            reason=reason if verdict.problem else None,
            scoring_version=SCORING_VERSION,
        )
    outcome = Outcome.CORRECT if verdict.assessment == case.expected else Outcome.WRONG
    return Scored(
        actual=verdict.assessment,
        outcome=outcome,
        explanation=verdict.explanation,
        reason=reason,
        scoring_version=SCORING_VERSION,
    )


def score_completion(
    case: Case, completion: Completion, vdb_scoring: str = DEFAULT_SCORING
) -> Scored:
    """Errors stay errors (never a verdict); a reply that could not be read is unparsed (no
    verdict is guessed from its raw text); anything else is scored by the case's suite.

    A VulDetectBench error still goes through its scorer, which records what the
    aggregate metrics need of a sample that scored nothing (task 1's gold class).
    """
    if case.kind is SuiteKind.VULDETECTBENCH:
        from secbench_tui.core.vuldetectbench.task_scores import score_vuldetectbench

        reply = None if completion.error is not None else completion.text or ""
        if completion.unreadable is not None:
            reply = ""  # it arrived, but nothing in it can be read as an answer
        return score_vuldetectbench(case, reply, vdb_scoring)
    if completion.error is not None:
        return Scored(
            actual=None, outcome=Outcome.ERROR, explanation=None, scoring_version=SCORING_VERSION
        )
    if completion.unreadable is not None:
        return Scored(
            actual=None,
            outcome=Outcome.UNPARSED,
            explanation=None,
            scoring_version=SCORING_VERSION,
        )
    return score_markdown(case, completion.text)
