"""Per-task metrics over a run's scored samples, under the benchmark's documented definitions.

Errors and unparsed replies stay in every denominator with a score of 0: they lower
accuracy, SE/ME, MAR, URS/ORS; in task 1's F1 a missed YES is a false negative and a missed
NO no prediction. Task 3 leaves samples whose gold lists no token out of MAR (`no_gold`
counts them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from secbench_tui.core.models import Outcome, Scored


def sample_counts(rows: list[Scored], scoring: str) -> dict[str, int]:
    """`n` samples, `errors` (no reply), `unparsed`, and `crashes` under library scoring."""
    counts = {
        "n": len(rows),
        "errors": sum(r.outcome is Outcome.ERROR for r in rows),
        "unparsed": sum(r.outcome is Outcome.UNPARSED for r in rows),
    }
    if scoring == "library":
        counts["crashes"] = sum(r.scores.get("crashed", 0.0) > 0 for r in rows)
    return counts


def score_of(row: Scored, key: str) -> float:
    """One per-sample number of a scored reply; 0 when it was not recorded."""
    return float(row.scores.get(key, 0.0))


def task1_counts(rows: list[Scored]) -> tuple[int, int, int, int]:
    """Task 1's confusion counts over `rows`: tp, fp, tn, fn."""
    totals = Counter[str]()
    for row in rows:
        if {"tp", "fp", "tn", "fn"} & row.scores.keys():
            totals.update({key: int(score_of(row, key)) for key in ("tp", "fp", "tn", "fn")})
        else:
            totals["fn"] += 1  # an error scored without its gold class
    return totals["tp"], totals["fp"], totals["tn"], totals["fn"]


def _agg_task1(rows: list[Scored]) -> dict[str, float]:
    answered = [r for r in rows if r.outcome in (Outcome.CORRECT, Outcome.WRONG)]
    tp, fp, tn, fn = task1_counts(answered)
    # A missing answer (unparsed, error) is a miss: a false negative on a gold YES, no
    # prediction on a gold NO. Read from the outcome, so results recorded before this
    # convention (which counted a false positive there) read the same way.
    fn += sum(
        score_of(r, "gold_yes") > 0 or "gold_yes" not in r.scores
        for r in rows
        if r.outcome not in (Outcome.CORRECT, Outcome.WRONG)
    )
    f1_den = 2 * tp + fp + fn
    return {
        "accuracy": (tp + tn) / len(rows) if rows else 0.0,
        "f1": 2 * tp / f1_den if f1_den else 0.0,
    }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _agg_task2(rows: list[Scored]) -> dict[str, float]:
    return {
        "se": _mean([score_of(r, "se") for r in rows]),
        "me": _mean([score_of(r, "me") for r in rows]),
    }


def _agg_task3(rows: list[Scored]) -> dict[str, float]:
    with_gold = [r for r in rows if score_of(r, "gold") > 0 or "gold" not in r.scores]
    gold = sum(score_of(r, "gold") for r in rows)
    return {
        "mar": _mean([score_of(r, "recall") for r in with_gold]),
        "mir": sum(score_of(r, "tp") for r in rows) / gold if gold else 0.0,
        "no_gold": len(rows) - len(with_gold),
    }


def _agg_task45(rows: list[Scored]) -> dict[str, float]:
    return {
        "urs": _mean([score_of(r, "urs") for r in rows]),
        "ors": _mean([score_of(r, "ors") for r in rows]),
    }


AGGREGATES: dict[int, Callable[[list[Scored]], dict[str, float]]] = {
    1: _agg_task1,
    2: _agg_task2,
    3: _agg_task3,
    4: _agg_task45,
    5: _agg_task45,
}
