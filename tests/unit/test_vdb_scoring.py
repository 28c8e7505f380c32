"""The default, correct VulDetectBench scoring: the benchmark's documented definitions.

Where the library's per-sample numbers are right (clean replies), ours must equal them;
where the library is wrong, ours must differ in the documented way.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from vdb_fixtures import case_for, library_results, make_case, outputs

from secbench_tui.core.models import Outcome, Scored
from secbench_tui.core.vuldetectbench.replies import (
    extract_options,
    extract_yes_no,
    snippet_lines,
)
from secbench_tui.core.vuldetectbench.task_scores import (
    METRIC_KEYS,
    aggregate_vuldetectbench,
    crash_note,
    score_vuldetectbench,
    summary_counts,
    summary_metrics,
)

SELECTION = (
    "A.No Vulnerabilities\nB.CWE-707:Improper Neutralization\n"
    "C.CWE-15:External Control of System or Configuration Setting\n"
    "D.CWE-332:Insufficient Entropy in PRNG\nE.CWE-493:Critical Public Variable"
)
GOLD2 = "C.CWE-15:External Control of System or Configuration Setting|B.CWE-707:Improper"


def _library_samples(task: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(entry, library per-sample report) for the replies the library survives."""
    clean = library_results()["tasks"][str(task)]["clean"]
    by_number = {e["n"]: e for e in outputs()}
    return [
        (by_number[n], sample)
        for n, sample in zip(clean["entries"], clean["report"]["verbose"], strict=True)
    ]


def _library_score(sample: dict[str, Any], name: str) -> float:
    return float(next(m["score"] for m in sample["metrics"] if m["single metric"] == name))


def _correct(entry: dict[str, Any]) -> Scored:
    return score_vuldetectbench(case_for(entry), entry["output"])


# --- task 1 -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("YES", "YES"),
        ("no.", "NO"),
        ("**NO**", "NO"),
        ("```\nYES\n```", "YES"),
        ("Yes, the buffer is copied without a check.", "YES"),
        ("After review.\n\nAnswer: no", "NO"),
        ("There is no bounds check, so the code is vulnerable. YES", "YES"),
        ("NO. I analysed it yesterday.", "NO"),
        ("The code is vulnerable.", "YES"),
        ("It is not vulnerable", "NO"),
        ("The function isn't vulnerable.", "NO"),
        ("There are no vulnerabilities in this code.", "NO"),
        ("The code does not contain any vulnerability.", "NO"),
        ("This code contains a buffer overflow vulnerability.", "YES"),
        ("It is vulnerable, or it is not vulnerable.", None),
        ("The weather is nice today.", None),
        ("banana", None),
        ("YES or NO: it depends. NO check.", None),
        ("", None),
    ],
)
def test_task1_reads_yes_or_no_without_guessing(reply: str, expected: str | None) -> None:
    assert extract_yes_no(reply) == expected


def test_task1_hits_equal_the_library_where_it_reads_the_reply_right() -> None:
    plain = {"right", "wrong", "lower", "bold", "fenced", "answer-phrase"}
    checked = 0
    for entry, sample in _library_samples(1):
        if entry["kind"] in plain:
            assert _correct(entry).scores["hit"] == _library_score(sample, "hit"), entry["n"]
            checked += 1
    assert checked >= 60


def test_task1_substring_yes_is_not_a_yes() -> None:
    entry = next(e for e, _ in _library_samples(1) if e["kind"] == "substring-yes")
    sample = next(s for e, s in _library_samples(1) if e["n"] == entry["n"])
    assert sample["metrics"][0]["extracted answer"] == "YES"  # the library's misreading
    assert _correct(entry).actual == "NO"


def test_task1_accuracy_f1_and_misses_in_the_denominators() -> None:
    yes, no = make_case(1, "YES"), make_case(1, "NO")
    samples = [
        (1, score_vuldetectbench(yes, "YES")),  # tp
        (1, score_vuldetectbench(yes, "NO")),  # fn
        (1, score_vuldetectbench(no, "NO")),  # tn
        (1, score_vuldetectbench(no, "maybe")),  # unparsed: a miss, no prediction on NO
        (1, score_vuldetectbench(yes, None)),  # error: a miss, fn
    ]
    summary = aggregate_vuldetectbench(samples)["task1"]
    assert summary["accuracy"] == pytest.approx(2 / 5)
    assert summary["f1"] == pytest.approx(2 * 1 / (2 * 1 + 0 + 2))
    assert (summary["n"], summary["errors"], summary["unparsed"]) == (5, 1, 1)
    assert samples[3][1].outcome is Outcome.UNPARSED
    assert samples[4][1].outcome is Outcome.ERROR


# --- task 2 -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "named"),
    [
        ("C.", {"C"}),
        ("C.CWE-15:External Control", {"C"}),
        ("The answer is B", {"B"}),
        ("**B**", {"B"}),
        ("(D)", {"D"}),
        ("E", {"E"}),
        ("C. or B.", {"B", "C"}),
        ("E.g. the input is not neutralised, so C.", {"C"}),
        ("This looks like CWE-707.", {"B"}),
        ("No vulnerabilities.", {"A"}),
        ("a buffer overflow", set()),
        ("", set()),
    ],
)
def test_task2_reads_the_named_options(reply: str, named: set[str]) -> None:
    from secbench_tui.core.vuldetectbench.loader import options

    assert extract_options(reply, options(SELECTION)) == named


@pytest.mark.parametrize(
    ("reply", "se", "me", "outcome"),
    [
        ("C.", 1.0, 1.0, Outcome.CORRECT),
        ("B.", 0.5, 1.0, Outcome.WRONG),
        ("D.", 0.0, 0.0, Outcome.WRONG),
        ("C. or B.", 0.0, 1.0, Outcome.WRONG),
        ("C. or D.", 0.0, 0.0, Outcome.WRONG),
        (SELECTION, 0.0, 0.0, Outcome.WRONG),
        ("I cannot tell.", 0.0, 0.0, Outcome.UNPARSED),
    ],
)
def test_task2_se_and_me(reply: str, se: float, me: float, outcome: Outcome) -> None:
    scored = score_vuldetectbench(make_case(2, GOLD2, SELECTION), reply)
    assert (scored.scores["se"], scored.scores["me"], scored.outcome) == (se, me, outcome)


def test_task2_equals_the_library_per_sample_and_averages_separately() -> None:
    plain = {"right", "second", "wrong", "full-option", "random", "cwe-only", "both"}
    pairs = [(e, s) for e, s in _library_samples(2) if e["kind"] in plain]
    assert len(pairs) >= 60
    for entry, sample in pairs:
        scored = _correct(entry)
        assert scored.scores["se"] == _library_score(sample, "Strict Evaluation Score")
        assert scored.scores["me"] == _library_score(sample, "Moderate Evaluation Score")
    summary = aggregate_vuldetectbench([(2, _correct(e)) for e, _ in pairs])["task2"]
    n = len(pairs)
    assert summary["se"] == pytest.approx(
        sum(_library_score(s, "Strict Evaluation Score") for _, s in pairs) / n
    )
    assert summary["me"] == pytest.approx(
        sum(_library_score(s, "Moderate Evaluation Score") for _, s in pairs) / n
    )
    assert summary["se"] < summary["me"]  # not pooled into one number


# --- task 3 -----------------------------------------------------------------


def test_task3_recall_equals_the_library_without_repeated_tokens() -> None:
    plain = {"right", "plain", "half", "sentences", "wrong", "empty"}
    pairs = [(e, s) for e, s in _library_samples(3) if e["kind"] in plain and e["gold"]]
    assert len(pairs) >= 40
    for entry, sample in pairs:
        scored = _correct(entry)
        assert scored.scores["recall"] == _library_score(sample, "Token Recall"), entry["n"]
        assert (scored.actual or "") == sample["metrics"][0]["extracted answer"]
    summary = aggregate_vuldetectbench([(3, _correct(e)) for e, _ in pairs])["task3"]
    assert summary["mar"] == pytest.approx(
        sum(_library_score(s, "Token Recall") for _, s in pairs) / len(pairs)
    )


def test_task3_repeats_do_not_push_recall_past_one() -> None:
    case = make_case(3, "strncpy buffer source sizeof")
    scored = score_vuldetectbench(case, "`strncpy` `strncpy` `buffer` buffer.")
    assert (scored.scores["tp"], scored.scores["recall"]) == (2.0, 0.5)
    library = score_vuldetectbench(case, "`strncpy` `strncpy` `buffer` buffer.", "library")
    assert library.scores["recall"] == 1.0  # four hits out of four gold tokens


@pytest.mark.parametrize(
    ("reply", "found"),
    [  # tokens recorded from nltk.word_tokenize
        ("It uses buf. Then n. And s. Also 0. Done", "0 buf"),  # 'n.' 's.' stay whole
        ("It uses buf. Then n. and s. also 0. done", "buf"),  # and so does '0.' here
    ],
)
def test_task3_sentence_periods_follow_punkt(reply: str, found: str) -> None:
    scored = score_vuldetectbench(make_case(3, "n s 0 buf"), reply)
    assert scored.actual == found


def test_task1_unparsed_on_gold_no_is_not_a_false_positive() -> None:
    """The issue's figures: 0.492 when a missed NO counts as a false positive, 0.574 not."""
    yes, no = make_case(1, "YES"), make_case(1, "NO")
    samples = (
        [(1, score_vuldetectbench(yes, "YES")) for _ in range(31)]
        + [(1, score_vuldetectbench(yes, "NO")) for _ in range(46)]
        + [(1, score_vuldetectbench(no, "NO")) for _ in range(20)]
        + [(1, score_vuldetectbench(no, "hmm")) for _ in range(18)]
    )
    assert sum(s.outcome is Outcome.UNPARSED for _, s in samples) == 18
    correct = aggregate_vuldetectbench(samples)["task1"]
    # tp 31, fn 46: 0.574; counting the 18 unparsed NO as false positives gave 62/126 = 0.492
    assert correct["f1"] == pytest.approx(62 / 108)
    assert correct["accuracy"] == pytest.approx(51 / 115)  # unparsed stays wrong
    # the convention is read from the outcome, so rows scored the old way agree
    old_style = [
        (t, replace(s, **{"scores": s.scores | {"fp": 1.0}}))
        if s.outcome is Outcome.UNPARSED
        else (t, s)
        for t, s in samples
    ]
    assert aggregate_vuldetectbench(old_style)["task1"] == correct
    # the library's reading (every reply it reads as NO here, so no false positive) differs
    library = [(1, score_vuldetectbench(no, None, "library")) for _ in range(20)]
    assert aggregate_vuldetectbench(library, "library")["task1"]["f1"] == 0.0


@pytest.mark.parametrize("reply", ["`x`", "", "banana", "I found `buf` and `len`"])
def test_task3_empty_gold_is_always_correct_without_a_recall(reply: str) -> None:
    scored = score_vuldetectbench(make_case(3, ""), reply)
    assert scored.outcome is Outcome.CORRECT
    assert "recall" not in scored.scores
    assert "nothing to recall" in (scored.explanation or "")
    error = score_vuldetectbench(make_case(3, ""), None)
    assert error.outcome is Outcome.ERROR and "recall" not in error.scores


def test_task3_empty_gold_is_left_out_of_mar() -> None:
    samples = [
        (3, score_vuldetectbench(make_case(3, ""), "`x`")),
        (3, score_vuldetectbench(make_case(3, "a b"), "`a`")),
        (3, score_vuldetectbench(make_case(3, "c d e f"), "")),
    ]
    summary = aggregate_vuldetectbench(samples)["task3"]
    assert summary["no_gold"] == 1
    assert summary["mar"] == pytest.approx((0.5 + 0.0) / 2)
    assert summary["mir"] == pytest.approx(1 / 6)
    assert samples[2][1].outcome is Outcome.UNPARSED


# --- tasks 4 and 5 ----------------------------------------------------------

GOLD45 = "`for (i = 0; i < n; i++) {\n    buf[i] = src[i];`"


@pytest.mark.parametrize(
    ("reply", "urs", "ors", "outcome"),
    [
        (GOLD45, 1.0, 1.0, Outcome.CORRECT),
        ("```c\nfor (i = 0; i < n; i++) {\n  buf[i]=src[i];\n```", 1.0, 1.0, Outcome.CORRECT),
        ("```\nbuf[i] = src[i];\n```", 0.5, 0.5, Outcome.WRONG),
        ("`buf[i] = src[i];` and `free(buf);`", 1 / 3, 0.5, Outcome.WRONG),
        ("`free(buf);`", 0.0, 0.0, Outcome.WRONG),
        ("buf[i] = src[i];", 0.0, 0.0, Outcome.UNPARSED),
        ("", 0.0, 0.0, Outcome.UNPARSED),
    ],
)
def test_task45_lines_against_the_gold(
    reply: str, urs: float, ors: float, outcome: Outcome
) -> None:
    for task in (4, 5):
        scored = score_vuldetectbench(make_case(task, GOLD45), reply)
        assert scored.scores["urs"] == pytest.approx(urs)
        assert scored.scores["ors"] == pytest.approx(ors)
        assert scored.outcome is outcome


def test_task45_reads_the_gold_unlike_the_library() -> None:
    """The library scores `{` (a lone brace) 1.0 against any gold; we score it 0."""
    case = make_case(4, GOLD45)
    assert score_vuldetectbench(case, "`{`", "library").scores["urs"] == 1.0
    assert score_vuldetectbench(case, "`{`").scores["urs"] == 0.0


def test_task45_fixture_replies() -> None:
    full = {"right", "fenced-c", "fenced-bare", "prose-then-code", "cot"}
    for entry in (e for e in outputs() if e["task"] in (4, 5)):
        scored = _correct(entry)
        if entry["kind"] in full:
            assert scored.outcome is Outcome.CORRECT, entry["n"]
        elif entry["kind"] in {"no-backticks", "empty"}:
            assert scored.outcome is Outcome.UNPARSED, entry["n"]
        elif entry["kind"] == "two-snippets":
            assert scored.scores["ors"] == 1.0, entry["n"]


def test_snippet_lines_drop_language_tags_and_blank_lines() -> None:
    snippets, lines = snippet_lines("```cpp\nint x;\n\n  y = x ;\n```\nthen `z();`")
    assert snippets == ["int x;\n\n  y = x ;\n", "z();"]
    assert lines == {"intx;", "y=x;", "z();"}


def test_aggregates_errors_as_zero() -> None:
    case = make_case(4, GOLD45)
    samples = [(4, score_vuldetectbench(case, GOLD45)), (4, score_vuldetectbench(case, None))]
    summary = aggregate_vuldetectbench(samples)
    assert summary == {"task4": {"urs": 0.5, "ors": 0.5, "n": 2, "errors": 1, "unparsed": 0}}


def test_unknown_scoring_names_the_setting() -> None:
    with pytest.raises(ValueError, match="--vdb-scoring"):
        score_vuldetectbench(make_case(1, "YES"), "YES", "strict")


# --- what a run summary shows ------------------------------------------------


def _one_of_each(scoring: str) -> dict[str, Any]:
    replies = {1: "NO", 2: "C.", 3: "`a` `a` `a`", 4: "`{`", 5: "no snippet"}
    golds = {1: "YES", 2: GOLD2, 3: "a b", 4: GOLD45, 5: GOLD45}
    samples = [
        (task, score_vuldetectbench(make_case(task, golds[task], SELECTION), reply, scoring))
        for task, reply in replies.items()
    ]
    samples.append((3, score_vuldetectbench(make_case(3, ""), "`x`", scoring)))
    return aggregate_vuldetectbench(samples, scoring)


@pytest.mark.parametrize("scoring", ["correct", "library"])
def test_summary_metrics_have_exactly_the_documented_keys(scoring: str) -> None:
    metrics = summary_metrics(_one_of_each(scoring))
    assert {task: set(m) for task, m in metrics.items()} == {
        "task1": {"accuracy", "f1"},
        "task2": {"se", "me"},
        "task3": {"mar", "mir"},
        "task4": {"urs", "ors"},
        "task5": {"urs", "ors"},
    }
    assert all(isinstance(v, float) for m in metrics.values() for v in m.values())
    assert {task: tuple(sorted(keys)) for task, keys in METRIC_KEYS.items()} == {
        task: tuple(sorted(m)) for task, m in metrics.items()
    }


def test_summary_counts_and_the_crash_note() -> None:
    correct = summary_counts(_one_of_each("correct"))
    assert correct["task3"] == {"n": 2, "errors": 0, "unparsed": 0, "no_gold": 1}
    assert correct["task5"] == {"n": 1, "errors": 0, "unparsed": 1}
    assert crash_note(correct["task5"]) == ""
    library = summary_counts(_one_of_each("library"))
    assert library["task5"]["crashes"] == 1 and library["task4"]["crashes"] == 0
    note = crash_note(library["task5"])
    assert note == "vuldetectbench 0.0.5 crashes on 1 of 1 samples (scored 0)"
    assert summary_metrics(_one_of_each("library"))["task3"]["mar"] == pytest.approx(1.5 / 2)
