"""Numbers computed from recorded results: accuracy, per-class recall, intervals, costs.

Every function takes plain result rows (dicts as the store returns them), so reports, the
headless summary and the terminal app compute the same figures the same way. Comparisons of
two models (agreement, McNemar's exact test) and of repeated answers (consistency, pass^k)
live here too, so the report only arranges numbers and never computes one.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from secbench_tui.core.store.rows import ResultRow

Row = ResultRow
NO_VERDICT = "none"  # what an unreadable reply or an error said


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """95% Wilson score interval for a proportion; (0, 1) when there is no data."""
    if n <= 0:
        return 0.0, 1.0
    return proportion_interval(successes / n, n, z)


def proportion_interval(p: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson interval of an observed share `p` of `n` independent units."""
    if n <= 0:
        return 0.0, 1.0
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


def label(value: object) -> str:
    """A verdict or expected label as the figures compare it: `Bad ` and `bad` are one label
    (databases of the original tool hold them as the model wrote them)."""
    return str(value).strip().lower() if value is not None else ""


class Confusion(TypedDict):
    tp: int
    fp: int
    tn: int
    fn: int


class VerdictStats(TypedDict):
    """`verdict_stats`: accuracy and friends for good/bad verdicts (None: not defined)."""

    cases: int
    correct: int
    wrong: int
    unparsed: int
    errors: int
    accuracy: float | None
    accuracy_ci: tuple[float, float] | None
    recall_bad: float | None
    recall_good: float | None
    balanced_accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    confusion: Confusion


class UsageStats(TypedDict):
    """`usage_stats`: tokens, cost (None: unknown) and latency of a run's answers."""

    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    cost: float | None
    spent: float | None
    cost_missing: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None


class RunStats(VerdictStats, UsageStats):
    """`summarize`: one run's verdict figures and usage, and each app's verdict figures."""

    reused: int
    apps: dict[str, VerdictStats]


class RepeatStats(TypedDict):
    """`repeat_stats`: consistency and pass^N of a run that asked each case several times."""

    repeats: int
    cases: int
    incomplete: int
    pass_at_1: float | None
    pass_hat_n: float | None
    consistency: float | None
    always_same: float | None


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def verdict_stats(rows: Iterable[Row]) -> VerdictStats:
    """Accuracy and friends for good/bad verdicts, `bad` being the positive class.

    Accuracy counts every case asked (unparsed and errors are never correct), so a model
    cannot raise its score by refusing to answer. Per-class recall and balanced accuracy
    use the expected label of every case, for suites whose classes are unbalanced. In
    precision and recall a missing verdict on a bad case is a miss; an error is never a
    verdict, and a case whose label is unknown (an imported row) is neither class.
    """
    n = correct = unparsed = errors = 0
    tp = fp = tn = fn = 0
    per_class = {"good": [0, 0], "bad": [0, 0]}  # [correct, total]
    for row in rows:
        n += 1
        outcome, expected, actual = row["outcome"], label(row["expected_result"]), _verdict(row)
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
        if expected == "bad":  # a case without a known label is neither positive nor negative
            tp, fn = (tp + 1, fn) if actual == "bad" else (tp, fn + 1)
        elif expected == "good" and actual != NO_VERDICT:
            tn, fp = (tn + 1, fp) if actual == "good" else (tn, fp + 1)
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


def case_interval(rows: Iterable[Row]) -> tuple[float, float] | None:
    """Accuracy's 95% interval when a case may have been asked several times.

    Tries of one case are not independent (a model that misreads a case tends to misread it
    again), so the interval treats each case as one unit: the Wilson interval of the mean
    per-case pass share over the number of distinct cases. With one try per case it is
    exactly the plain Wilson interval.
    """
    tries: dict[str, list[int]] = {}
    for row in rows:
        tally = tries.setdefault(str(row["case_id"]), [0, 0])
        tally[0] += row["outcome"] == "correct"
        tally[1] += 1
    if not tries:
        return None
    share = sum(passed / asked for passed, asked in tries.values()) / len(tries)
    return proportion_interval(share, len(tries))


def cost_per_correct(cost: float | None, correct: int) -> float | None:
    """What one right answer cost: None when the cost is unknown or nothing was right."""
    if cost is None or correct <= 0:
        return None
    return cost / correct


def usage_stats(rows: Iterable[Row]) -> UsageStats:
    """Tokens (reasoning tokens are part of the completion tokens), cost and latency.
    `cost` is what the answers cost, reused ones included (what
    comparing models needs); `spent` leaves reused results out (what this run paid).
    `cost_missing` counts answered requests whose cost the endpoint did not report while
    others' was: then `cost` is only a lower bound (0 when no cost is known at all)."""
    prompt = completion = reasoning = 0
    cost = spent = 0.0
    cost_known = False
    unpriced = 0
    latencies: list[float] = []
    for row in rows:
        prompt += row.get("prompt_tokens") or 0
        completion += row.get("completion_tokens") or 0
        reasoning += row.get("reasoning_tokens") or 0
        row_cost = row.get("cost")
        if row_cost is not None:
            cost += row_cost
            spent += 0.0 if row.get("reused_from") else row_cost
            cost_known = True
        elif row.get("outcome") != "error":
            unpriced += 1
        latency = row.get("latency_ms")
        if latency is not None and not row.get("reused_from"):
            latencies.append(float(latency))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "reasoning_tokens": reasoning,  # part of completion_tokens, not on top of them
        "cost": cost if cost_known else None,
        "spent": spent if cost_known else None,
        "cost_missing": unpriced if cost_known else 0,
        "latency_p50_ms": percentile(latencies, 50),
        "latency_p95_ms": percentile(latencies, 95),
    }


def summarize(rows: Sequence[Row]) -> RunStats:
    """The summary of one run: overall, per app, usage.

    Outcome counts cover every row; accuracy and the verdict figures cover the markdown
    (good/bad) rows, since VulDetectBench tasks are scored by their own metrics.
    """
    by_app: dict[str, list[Row]] = {}
    for row in rows:
        by_app.setdefault(row["app"], []).append(row)
    verdict_rows = [r for r in rows if r.get("suite_kind", "markdown") == "markdown"]
    summary: RunStats = {
        **verdict_stats(verdict_rows),
        "reused": sum(1 for r in rows if r.get("reused_from")),
        "apps": {
            app: verdict_stats(app_rows)
            for app, app_rows in sorted(by_app.items())
            if app_rows[0].get("suite_kind", "markdown") == "markdown"
        },
        **usage_stats(rows),
    }
    outcomes = {o: 0 for o in ("correct", "wrong", "unparsed", "error")}
    for row in rows:
        outcomes[row["outcome"]] = outcomes.get(row["outcome"], 0) + 1
    summary["cases"] = len(rows)
    summary["correct"] = outcomes["correct"]
    summary["wrong"] = outcomes["wrong"]
    summary["unparsed"] = outcomes["unparsed"]
    summary["errors"] = outcomes["error"]
    return summary


# --- one model's verdicts in more detail -------------------------------------------------


def confusion_matrix(rows: Iterable[Row]) -> dict[str, dict[str, int]]:
    """Counts by expected label and by what the model said: `bad`, `good` or no verdict.

    A reply with no verdict (unparsed or error) gets its own column instead of being folded
    into either class, so the matrix always adds up to the number of cases asked.
    """
    matrix: dict[str, dict[str, int]] = {}
    for row in rows:
        cells = matrix.setdefault(
            label(row["expected_result"]), {"bad": 0, "good": 0, NO_VERDICT: 0}
        )
        cells[_verdict(row)] += 1
    return matrix


# --- two models on the same cases --------------------------------------------------------


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs.

    Under the null hypothesis each discordant case is equally likely to favour either model,
    so min(b, c) follows Binomial(b + c, 1/2); the p-value doubles its lower tail (capped at 1).
    With no discordant pairs there is no evidence of a difference: p = 1.
    """
    if b < 0 or c < 0:
        raise ValueError("counts must be non-negative")
    n = b + c
    if n == 0:
        return 1.0
    term = tail = 1  # C(n, 0), then C(n, k) from C(n, k - 1)
    for k in range(1, min(b, c) + 1):
        term = term * (n - k + 1) // k
        tail += term
    return min(1.0, 2 * tail / (1 << n))


@dataclass(frozen=True)
class PairComparison:
    """Two models' answers on the cases both were asked.

    `only_a` counts cases A got right and B did not, `only_b` the reverse: McNemar's test
    looks only at these. `agree` counts cases where both gave the same verdict (two missing
    verdicts agree too); `differing` lists the keys of the cases where correctness differs.
    """

    shared: int
    agree: int
    both_correct: int
    both_wrong: int
    only_a: int
    only_b: int
    p_value: float
    differing: tuple[str, ...]

    @property
    def agreement(self) -> float | None:
        return self.agree / self.shared if self.shared else None


def _verdict(row: Row) -> str:
    """What the model said: `good`, `bad`, or NO_VERDICT (unreadable reply, or an error)."""
    actual = label(row.get("actual_result"))
    if row.get("outcome") == "error" or actual not in ("good", "bad"):
        return NO_VERDICT
    return actual


def compare_pair(a: Mapping[str, Row], b: Mapping[str, Row]) -> PairComparison:
    """Compare two models given one row per case each, keyed by case."""
    shared = sorted(set(a) & set(b))
    agree = both_correct = both_wrong = only_a = only_b = 0
    differing: list[str] = []
    for key in shared:
        ra, rb = a[key], b[key]
        agree += _verdict(ra) == _verdict(rb)
        ca, cb = ra["outcome"] == "correct", rb["outcome"] == "correct"
        if ca and cb:
            both_correct += 1
        elif not ca and not cb:
            both_wrong += 1
        else:
            only_a += ca
            only_b += cb
            differing.append(key)
    return PairComparison(
        shared=len(shared),
        agree=agree,
        both_correct=both_correct,
        both_wrong=both_wrong,
        only_a=only_a,
        only_b=only_b,
        p_value=mcnemar_exact(only_a, only_b),
        differing=tuple(differing),
    )


# --- one model asked the same case several times -----------------------------------------


def pass_hat_k(n: int, correct: int, k: int) -> float:
    """Unbiased estimate of the chance that k fresh tries of a case all pass (pass^k).

    From n recorded tries with `correct` passes: C(correct, k) / C(n, k). Needs n >= k.
    """
    if not 0 < k <= n or not 0 <= correct <= n:
        raise ValueError(f"pass^k needs 0 < k <= n and 0 <= correct <= n (n={n}, k={k})")
    return math.comb(correct, k) / math.comb(n, k)


@dataclass(frozen=True)
class CaseRepeats:
    """One case's repeated answers: how many passed and how often the verdict was the same."""

    tries: int
    correct: int
    verdicts: tuple[tuple[str, int], ...]  # (verdict, count), most frequent first

    @property
    def consistency(self) -> float:
        """The share of tries that gave the most frequent verdict (1.0: always the same)."""
        return self.verdicts[0][1] / self.tries if self.tries else 1.0


def case_repeats(rows: Iterable[Row]) -> CaseRepeats:
    rows = list(rows)
    counts = Counter(_verdict(r) for r in rows)
    ordered = tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    correct = sum(1 for r in rows if r["outcome"] == "correct")
    return CaseRepeats(tries=len(rows), correct=correct, verdicts=ordered)


def repeat_stats(rows: Iterable[Row], repeats: int) -> RepeatStats | None:
    """Consistency and pass^N of a run that asked each case `repeats` times.

    None when `repeats` < 2. Cases with fewer than `repeats` recorded tries (a stopped run)
    count towards pass@1 and consistency but not towards pass^N, and are counted apart.
    """
    if repeats < 2:
        return None
    by_case: dict[str, list[Row]] = {}
    for row in rows:
        by_case.setdefault(row["case_id"], []).append(row)
    per_case = {case: case_repeats(case_rows) for case, case_rows in by_case.items()}
    complete = [c for c in per_case.values() if c.tries >= repeats]
    cases = len(per_case)
    return {
        "repeats": repeats,
        "cases": cases,
        "incomplete": cases - len(complete),
        "pass_at_1": _ratio(sum(c.correct / c.tries for c in per_case.values()), cases),
        "pass_hat_n": _ratio(
            sum(pass_hat_k(c.tries, c.correct, repeats) for c in complete), len(complete)
        ),
        "consistency": _ratio(sum(c.consistency for c in per_case.values()), cases),
        "always_same": _ratio(sum(1 for c in per_case.values() if len(c.verdicts) == 1), cases),
    }
