"""Which scorer a case gets, and how errors are kept apart from verdicts."""

from secbench_tui.core.models import Case, Completion, Message, Outcome, SuiteKind
from secbench_tui.core.results.grading import score_completion


def markdown_case(expected: str = "bad") -> Case:
    return Case(
        kind=SuiteKind.MARKDOWN,
        app="a",
        case_id="a/x.md",
        test_file="/a/x.md",
        expected=expected,
        code="q",
        messages=(Message(role="user", content="p"),),
    )


def vdb_case(expected: str) -> Case:
    return Case(
        kind=SuiteKind.VULDETECTBENCH,
        app="task1",
        case_id="task1/0",
        test_file="/t/task1_code.jsonl",
        expected=expected,
        code="int x;",
        messages=(Message(role="user", content="p"),),
        structured=False,
        meta={"task": 1, "pos": 0},
    )


def test_markdown_outcomes() -> None:
    case = markdown_case("bad")
    said_bad = Completion(text='{"assessment": "bad", "explanation": "e"}')
    said_good = Completion(text='{"assessment": "good", "explanation": "e"}')
    assert score_completion(case, said_bad).outcome is Outcome.CORRECT
    assert score_completion(case, said_good).outcome is Outcome.WRONG
    assert score_completion(case, Completion(text="it is bad")).outcome is Outcome.UNPARSED


def test_an_error_is_never_a_verdict_even_with_text() -> None:
    truncated = Completion(text='{"assessment": "bad", "explanation": "e"}', error="truncated")
    scored = score_completion(markdown_case("bad"), truncated)
    assert scored.outcome is Outcome.ERROR and scored.actual is None


def test_vuldetectbench_error_keeps_the_gold_class_for_f1() -> None:
    yes = score_completion(vdb_case("YES"), Completion(error="HTTP 503"))
    no = score_completion(vdb_case("NO"), Completion(error="HTTP 503"))
    assert yes.outcome is Outcome.ERROR and no.outcome is Outcome.ERROR
    assert yes.scores and no.scores and yes.scores != no.scores
    hit = score_completion(vdb_case("YES"), Completion(text="YES"))
    assert hit.outcome is Outcome.CORRECT and hit.actual == "YES"
