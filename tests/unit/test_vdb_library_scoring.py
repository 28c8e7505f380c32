"""`--vdb-scoring library` against what vuldetectbench 0.0.5 itself reported.

tests/fixtures/vdb/library_results.json was written by scripts/vdb_reference.py, which ran
the real library (`VulDetectBench_Engine.run()`) on the replies in outputs.json: once on
the replies it survives ("clean"), once on all of them with each crashing metric call
scored 0 ("wrapped"). Every per-sample score, extracted answer and reported number must
match.
"""

from __future__ import annotations

from typing import Any

import pytest
from vdb_fixtures import case_for, library_results, outputs

from secbench_tui.core.models import Outcome, Scored
from secbench_tui.core.vuldetectbench.task_scores import (
    aggregate_vuldetectbench,
    score_vuldetectbench,
)

TASKS = [1, 2, 3, 4, 5]
REPORT_KEYS = {
    1: {"Accuracy": "accuracy", "F1-Score": "f1"},
    2: {"Avg Moderate Evaluation Score": "me", "Avg Strict Evaluation Score": "se"},
    3: {"Macro Token Recall": "mar", "Micro Token Recall": "mir"},
    4: {"Avg Union Line Recall": "urs", "Avg Line Recall": "ors"},
    5: {"Avg Union Line Recall": "urs", "Avg Line Recall": "ors"},
}
SAMPLE_KEYS = {
    "hit": "hit",
    "Moderate Evaluation Score": "me",
    "Strict Evaluation Score": "se",
    "Token Recall": "recall",
    "Union Line Recall": "urs",
    "Line Recall": "ors",
}


def _entries(numbers: list[int]) -> list[dict[str, Any]]:
    by_number = {e["n"]: e for e in outputs()}
    return [by_number[n] for n in numbers]


def _score(entry: dict[str, Any]) -> Scored:
    return score_vuldetectbench(case_for(entry), entry["output"], "library")


def _reported(report: dict[str, Any], task: int) -> dict[str, float]:
    found: dict[str, float] = {}
    for item in report["overall metrics"]:
        for name, value in item.items():
            found[REPORT_KEYS[task][name]] = value
    return found


@pytest.mark.parametrize("run", ["clean", "wrapped"])
@pytest.mark.parametrize("task", TASKS)
def test_per_sample_scores_match_the_library(task: int, run: str) -> None:
    recorded = library_results()["tasks"][str(task)][run]
    entries = _entries(recorded["entries"])
    assert len(entries) == len(recorded["report"]["verbose"]) > 0
    for entry, sample in zip(entries, recorded["report"]["verbose"], strict=True):
        scored = _score(entry)
        for metric in sample["metrics"]:
            key = SAMPLE_KEYS[metric["single metric"]]
            where = f"reply #{entry['n']} ({entry['kind']}), {metric['single metric']}"
            assert scored.scores[key] == pytest.approx(metric["score"], abs=1e-12), where
        if task in (1, 3, 4, 5):
            assert (scored.actual or "") == sample["metrics"][0]["extracted answer"], entry["n"]


@pytest.mark.parametrize("run", ["clean", "wrapped"])
@pytest.mark.parametrize("task", TASKS)
def test_reported_numbers_match_the_library(task: int, run: str) -> None:
    recorded = library_results()["tasks"][str(task)][run]
    samples = [(task, _score(e)) for e in _entries(recorded["entries"])]
    ours = aggregate_vuldetectbench(samples, "library")[f"task{task}"]
    for key, value in _reported(recorded["report"], task).items():
        assert ours[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key


@pytest.mark.parametrize("task", TASKS)
def test_crashes_are_the_replies_the_library_crashes_on(task: int) -> None:
    crashes = library_results()["tasks"][str(task)]["crashes"]
    mine = [e for e in outputs() if e["task"] == task]
    flagged = {str(e["n"]) for e in mine if _score(e).scores["crashed"]}
    assert flagged == set(crashes)
    summary = aggregate_vuldetectbench([(task, _score(e)) for e in mine], "library")
    assert summary[f"task{task}"]["crashes"] == len(crashes)


def test_the_recorded_replies_exercise_the_bugs() -> None:
    """The fixture is only worth something if it shows where the library goes wrong."""
    tasks = library_results()["tasks"]
    assert len(tasks["4"]["crashes"]) > 0 and len(tasks["5"]["crashes"]) > 0
    assert tasks["4"]["wrapped"]["report"] != tasks["4"]["clean"]["report"]
    pooled = _reported(tasks["2"]["wrapped"]["report"], 2)
    assert pooled["se"] == pooled["me"]  # one shared list for both metrics
    recalls = [m["score"] for s in tasks["3"]["wrapped"]["report"]["verbose"] for m in s["metrics"]]
    assert max(recalls) > 1  # repeated tokens count again


def test_an_error_scores_zero_and_is_not_a_crash() -> None:
    """No reply never reached the library's scorer: counted in `errors`, not `crashes`."""
    entry = next(e for e in outputs() if e["task"] == 4 and not _score(e).scores["crashed"])
    scored = score_vuldetectbench(case_for(entry), None, "library")
    assert scored.outcome is Outcome.ERROR
    assert scored.scores == {"crashed": 0.0}
    summary = aggregate_vuldetectbench([(4, scored), (4, _score(entry))], "library")["task4"]
    assert (summary["errors"], summary["crashes"]) == (1, 0)
    assert summary["urs"] == pytest.approx(_score(entry).scores["urs"] / 2)


@pytest.mark.parametrize(
    ("reply", "outcome", "actual"),
    [
        ("B.", Outcome.CORRECT, "B"),
        ("C.", Outcome.WRONG, "C"),
        ("D.", Outcome.WRONG, None),  # named, but not a gold option: wrong, not unparsed
        ("It is a buffer overflow.", Outcome.UNPARSED, None),
    ],
)
def test_library_task2_outcomes(reply: str, outcome: Outcome, actual: str | None) -> None:
    selection = "A.No Vulnerabilities\nB.CWE-121:Stack\nC.CWE-476:NULL\nD.CWE-15:External"
    entry = {"task": 2, "pos": 0, "idx": "0", "selection": selection}
    entry["gold"] = "B.CWE-121:Stack|C.CWE-476:NULL"
    scored = score_vuldetectbench(case_for(entry), reply, "library")
    assert (scored.outcome, scored.actual) == (outcome, actual)
