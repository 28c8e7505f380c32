"""Numbers computed from recorded results: accuracy, per-class recall, intervals, costs.

Every function takes plain result rows (dicts as the store returns them), so reports, the
headless summary and the terminal app compute the same figures the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Row = Mapping[str, Any]


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """95% Wilson score interval for a proportion; (0, 1) when there is no data."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def verdict_stats(rows: Iterable[Row]) -> dict[str, Any]:
    """Accuracy and friends for good/bad verdicts, `bad` being the positive class.

    Accuracy counts every case asked (unparsed and errors are never correct), so a model
    cannot raise its score by refusing to answer. Per-class recall and balanced accuracy
    use the expected label of every case, for suites whose classes are unbalanced.
    """
    n = correct = unparsed = errors = 0
    tp = fp = tn = fn = 0
    per_class = {"good": [0, 0], "bad": [0, 0]}  # [correct, total]
    for row in rows:
        n += 1
        outcome, expected, actual = row["outcome"], row["expected_result"], row["actual_result"]
        if expected in per_class:
            per_class[expected][1] += 1
        if outcome == "correct":
            correct += 1
            if expected in per_class:
                per_class[expected][0] += 1
        elif outcome == "unparsed":
            unparsed += 1
        elif outcome == "error":
            errors += 1
        if actual == "bad":
            tp, fp = (tp + 1, fp) if expected == "bad" else (tp, fp + 1)
        elif actual == "good":
            tn, fn = (tn + 1, fn) if expected == "good" else (tn, fn + 1)
        elif expected == "bad":
            fn += 1
    recall_bad = _ratio(per_class["bad"][0], per_class["bad"][1])
    recall_good = _ratio(per_class["good"][0], per_class["good"][1])
    recalls = [r for r in (recall_bad, recall_good) if r is not None]
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, tp + fn)
    f1 = (
        2 * precision * recall / (precision + recall)
        if precision is not None and recall is not None and precision + recall > 0
        else None
    )
    low, high = wilson_interval(correct, n)
    return {
        "cases": n,
        "correct": correct,
        "wrong": n - correct - unparsed - errors,
        "unparsed": unparsed,
        "errors": errors,
        "accuracy": _ratio(correct, n),
        "accuracy_ci": (low, high) if n else None,
        "recall_bad": recall_bad,
        "recall_good": recall_good,
        "balanced_accuracy": sum(recalls) / len(recalls) if recalls else None,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "confusion": {"tp": tp, "fp": fp, "tn": tn, "fn": fn},
    }


def usage_stats(rows: Iterable[Row]) -> dict[str, Any]:
    prompt = completion = 0
    cost = 0.0
    cost_known = False
    latencies: list[float] = []
    for row in rows:
        prompt += row.get("prompt_tokens") or 0
        completion += row.get("completion_tokens") or 0
        if row.get("cost") is not None:
            cost += row["cost"]
            cost_known = True
        if row.get("latency_ms") is not None and not row.get("reused_from"):
            latencies.append(float(row["latency_ms"]))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cost": cost if cost_known else None,
        "latency_p50_ms": percentile(latencies, 50),
        "latency_p95_ms": percentile(latencies, 95),
    }


def summarize(rows: Sequence[Row]) -> dict[str, Any]:
    """The summary of one run: overall, per app, usage."""
    by_app: dict[str, list[Row]] = {}
    for row in rows:
        by_app.setdefault(row["app"], []).append(row)
    verdict_rows = [r for r in rows if r.get("suite_kind", "markdown") == "markdown"]
    summary: dict[str, Any] = {
        **verdict_stats(verdict_rows),
        "reused": sum(1 for r in rows if r.get("reused_from")),
        "apps": {
            app: verdict_stats(app_rows)
            for app, app_rows in sorted(by_app.items())
            if app_rows[0].get("suite_kind", "markdown") == "markdown"
        },
        **usage_stats(rows),
    }
    summary["cases"] = len(rows)
    return summary
