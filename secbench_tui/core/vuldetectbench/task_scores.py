"""VulDetectBench scores: per reply, and per task over a run, under either scoring.

Two scorings. "correct" (the default) follows the benchmark's documented definitions: each
task's reply is read in `replies` and the task's metrics are made in `aggregation`.
"library" reproduces the numbers `vuldetectbench` 0.0.5 reports for the same replies, bugs
included (`library_scoring`). This module is what the rest of the program calls: it picks
the scoring, scores a missing reply, and shapes the per-task result for a run's summary.

`summary_metrics` and `summary_counts` split `aggregate_vuldetectbench`'s result into the
metrics a run summary reports (exactly `METRIC_KEYS`, fractions) and the sample counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from secbench_tui.core.models import Case, Outcome, Scored
from secbench_tui.core.vuldetectbench import DEFAULT_SCORING
from secbench_tui.core.vuldetectbench.aggregation import AGGREGATES, sample_counts
from secbench_tui.core.vuldetectbench.library_scoring import (
    LIBRARY_AGGREGATES,
    LIBRARY_SCORING,
    library_yes,
)
from secbench_tui.core.vuldetectbench.replies import CORRECT_SCORING, confusion, gold_says_yes

SCORINGS: tuple[str, ...] = (DEFAULT_SCORING, "library")
METRIC_KEYS: dict[str, tuple[str, str]] = {
    "task1": ("accuracy", "f1"),
    "task2": ("se", "me"),
    "task3": ("mar", "mir"),
    "task4": ("urs", "ors"),
    "task5": ("urs", "ors"),
}


def check_scoring(scoring: str) -> str:
    """`scoring` itself when it is one of SCORINGS; a ValueError naming the choices if not."""
    if scoring not in SCORINGS:
        raise ValueError(
            f"unknown --vdb-scoring {scoring!r}: use 'correct' (the benchmark's definitions, "
            "the default) or 'library' (the numbers vuldetectbench 0.0.5 reports)"
        )
    return scoring


def score_vuldetectbench(case: Case, reply: str | None, scoring: str = DEFAULT_SCORING) -> Scored:
    """Score one reply; `reply=None` (no reply at all) gives an ERROR scored 0.

    Pass None rather than building the error yourself: task 1's F1 needs the gold
    class of a missed sample (a missed YES is a false negative, a missed NO a false
    positive), which this records in `scores`.
    """
    check_scoring(scoring)
    task = int(case.meta["task"])
    if reply is None:
        return _error(case, task, scoring)
    if scoring == "library":
        return LIBRARY_SCORING[task](case, reply)
    return CORRECT_SCORING[task](case, reply)


def _error(case: Case, task: int, scoring: str) -> Scored:
    scores: dict[str, float] = {}
    library = scoring == "library"
    if task == 1:
        gold_yes = library_yes(case.expected) if library else gold_says_yes(case.expected)
        scores = confusion(None, gold_yes, missing_is_wrong_answer=library)
    elif task == 3:
        gold = float(len(case.expected.split()))
        scores = {"tp": 0.0, "gold": gold} | ({"recall": 0.0} if gold or library else {})
    if scoring == "library":
        scores["crashed"] = 0.0  # no reply reached the library's scorer
    return Scored(actual=None, outcome=Outcome.ERROR, explanation="no reply", scores=scores)


# Per task ("task1".."task5"): its metrics (fractions) and sample counts, all numbers.
TaskMetrics = dict[str, dict[str, float]]


def aggregate_vuldetectbench(
    samples: Iterable[tuple[int, Scored]], scoring: str = DEFAULT_SCORING
) -> TaskMetrics:
    """Per-task metrics, as fractions in [0, 1], for the tasks present.

    `{"task1": {"accuracy", "f1"}, "task2": {"se", "me"}, "task3": {"mar", "mir"},
    "task4": {"urs", "ors"}, "task5": {"urs", "ors"}}`, each with counts: `n` samples,
    `errors` (no reply), `unparsed`, and `crashes` under library scoring.

    Errors and unparsed replies stay in every denominator with a score of 0: they
    lower accuracy, SE/ME, MAR, URS/ORS; in task 1's F1 a missed YES is a false
    negative and a missed NO no prediction (an error scored without its gold class
    counts as a false negative; the library's reading counts a missed NO as a false
    positive). In task 3, the correct scoring leaves samples whose
    gold lists no token out of MAR (`no_gold` counts them); the library scores them 0.
    Library scoring can report values above 1 for task 3, as the library does.
    """
    check_scoring(scoring)
    by_task: dict[int, list[Scored]] = {}
    for task, scored in samples:
        by_task.setdefault(int(task), []).append(scored)
    out: TaskMetrics = {}
    for task in sorted(by_task):
        rows = by_task[task]
        if scoring == "library":
            metrics = LIBRARY_AGGREGATES[task](rows)
        else:
            metrics = AGGREGATES[task](rows)
        metrics |= sample_counts(rows, scoring)
        out[f"task{task}"] = metrics
    return out


def summary_metrics(aggregate: TaskMetrics) -> dict[str, dict[str, float]]:
    """Only the documented metrics of each task, e.g. `{"task1": {"accuracy", "f1"}}`.

    What `--summary-json` promises under "vuldetectbench": these keys and nothing else,
    as fractions (library scoring can pass 1 in task 3, as the library does).
    """
    return {
        task: {key: float(metrics.get(key, 0.0)) for key in METRIC_KEYS[task]}
        for task, metrics in aggregate.items()
        if task in METRIC_KEYS
    }


def summary_counts(aggregate: TaskMetrics) -> dict[str, dict[str, int]]:
    """The sample counts of each task: `n`, `errors`, `unparsed`, `no_gold`, `crashes`."""
    return {
        task: {key: int(value) for key, value in metrics.items() if key not in METRIC_KEYS[task]}
        for task, metrics in aggregate.items()
        if task in METRIC_KEYS
    }


def crash_note(counts: Mapping[str, float]) -> str:
    """The crashes in words: "vuldetectbench 0.0.5 crashes on 3 of 100 samples (scored 0)".

    Empty when there were none, as always under the correct scoring.
    """
    crashes = int(counts.get("crashes") or 0)
    if not crashes:
        return ""
    return (
        f"vuldetectbench 0.0.5 crashes on {crashes} of {int(counts.get('n') or 0)} "
        "samples (scored 0)"
    )


def aggregate_rows(
    rows: Iterable[Mapping[str, Any]], scoring: str = DEFAULT_SCORING
) -> TaskMetrics:
    """`aggregate_vuldetectbench` over results as the store returns them (app = "taskN").

    A row that is not a VulDetectBench result (another app, an unknown outcome: a database
    edited by hand) is left out rather than failing the whole summary.
    """
    samples = [
        (
            int(str(row["app"]).removeprefix("task")),
            Scored(
                actual=row["actual_result"],
                outcome=Outcome(row["outcome"]),
                explanation=row["explanation"],
                scores=json.loads(row["scores"] or "{}"),
            ),
        )
        for row in rows
        if str(row["app"]) in _TASK_APPS and row["outcome"] in _OUTCOMES
    ]
    return aggregate_vuldetectbench(samples, scoring)


_TASK_APPS = frozenset(f"task{task}" for task in range(1, 6))
_OUTCOMES = frozenset(outcome.value for outcome in Outcome)
