"""A reply read against its case: the one place that knows which scorer a case needs."""

from __future__ import annotations

from secbench_tui.core.models import Case, Completion, Outcome, Scored, SuiteKind
from secbench_tui.core.results.parsing import parse_verdict
from secbench_tui.core.vuldetectbench import DEFAULT_SCORING


def score_markdown(case: Case, reply: str | None) -> Scored:
    verdict = parse_verdict(reply)
    if verdict.assessment is None:
        return Scored(actual=None, outcome=Outcome.UNPARSED, explanation=None)
    outcome = Outcome.CORRECT if verdict.assessment == case.expected else Outcome.WRONG
    return Scored(actual=verdict.assessment, outcome=outcome, explanation=verdict.explanation)


def score_completion(
    case: Case, completion: Completion, vdb_scoring: str = DEFAULT_SCORING
) -> Scored:
    """Errors stay errors (never a verdict); a reply that could not be read is unparsed (no
    verdict is guessed from its raw text); anything else is scored by the case's suite.

    A VulDetectBench error still goes through its scorer, which records what the
    aggregate metrics need of a sample that scored nothing (task 1's gold class).
    """
    if case.kind is SuiteKind.VULDETECTBENCH:
        from secbench_tui.core.vuldetectbench.scoring import score_vuldetectbench

        reply = None if completion.error is not None else completion.text or ""
        if completion.unreadable is not None:
            reply = ""  # it arrived, but nothing in it can be read as an answer
        return score_vuldetectbench(case, reply, vdb_scoring)
    if completion.error is not None:
        return Scored(actual=None, outcome=Outcome.ERROR, explanation=None)
    if completion.unreadable is not None:
        return Scored(actual=None, outcome=Outcome.UNPARSED, explanation=None)
    return score_markdown(case, completion.text)
