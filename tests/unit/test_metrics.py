"""Figures from result rows: intervals, confusion, McNemar's exact test, repeats."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from secbench_tui.core.results.metrics import (
    case_interval,
    case_repeats,
    compare_pair,
    confusion_matrix,
    cost_per_correct,
    mcnemar_exact,
    pass_hat_k,
    percentile,
    proportion_interval,
    repeat_stats,
    usage_stats,
    verdict_stats,
    wilson_interval,
)


def row(case: str, expected: str, actual: str | None, outcome: str | None = None, **extra):
    if outcome is None:
        outcome = "unparsed" if actual is None else ("correct" if actual == expected else "wrong")
    return {
        "case_id": case,
        "app": case.split("/")[0],
        "expected_result": expected,
        "actual_result": actual,
        "outcome": outcome,
        **extra,
    }


def brute_force_mcnemar(b: int, c: int) -> float:
    """Enumerate every assignment of the b + c discordant cases to either side."""
    n = b + c
    observed = abs(b - c)
    extreme = sum(
        1 for sides in itertools.product((0, 1), repeat=n) if abs(2 * sum(sides) - n) >= observed
    )
    return float(min(Fraction(1), Fraction(extreme, 2**n)))


@pytest.mark.parametrize("b, c", [(b, c) for b in range(0, 8) for c in range(0, 8)])
def test_mcnemar_exact_matches_enumeration(b: int, c: int) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(brute_force_mcnemar(b, c), abs=1e-12)


def test_mcnemar_exact_is_symmetric_and_handles_large_counts() -> None:
    assert mcnemar_exact(3, 12) == mcnemar_exact(12, 3)
    assert mcnemar_exact(0, 0) == 1.0
    # 0 vs 20: only the all-one-side outcomes are as extreme, 2 of 2^20.
    assert mcnemar_exact(0, 20) == pytest.approx(2 / 2**20)
    big = mcnemar_exact(3000, 3300)
    assert 0 < big < 0.001
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(5, 10)
    assert (low, high) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_percentile_interpolates() -> None:
    assert percentile([], 50) is None
    assert percentile([10.0, 20.0, 30.0, 40.0], 50) == 25.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)


def test_verdict_stats_never_counts_missing_verdicts_as_correct() -> None:
    rows = [
        row("a/1", "bad", "bad"),
        row("a/2", "bad", None),
        row("a/3", "good", "good"),
        row("a/4", "good", "bad"),
        row("a/5", "bad", None, outcome="error"),
    ]
    stats = verdict_stats(rows)
    assert stats["cases"] == 5 and stats["correct"] == 2
    assert (stats["wrong"], stats["unparsed"], stats["errors"]) == (1, 1, 1)
    assert stats["accuracy"] == pytest.approx(0.4)
    assert stats["recall_bad"] == pytest.approx(1 / 3)
    assert stats["recall_good"] == pytest.approx(0.5)
    assert stats["balanced_accuracy"] == pytest.approx((1 / 3 + 0.5) / 2)
    assert stats["precision"] == pytest.approx(0.5)  # 1 tp, 1 fp
    assert stats["recall"] == pytest.approx(1 / 3)  # missing verdicts on bad cases are misses


def test_confusion_matrix_has_a_column_for_missing_verdicts() -> None:
    rows = [
        row("a/1", "bad", "bad"),
        row("a/2", "bad", None),
        row("a/3", "good", "good"),
        row("a/4", "good", "bad"),
        row("a/5", "bad", "good", outcome="error"),  # an error never counts as a verdict
    ]
    matrix = confusion_matrix(rows)
    assert matrix == {
        "bad": {"bad": 1, "good": 0, "none": 2},
        "good": {"bad": 1, "good": 1, "none": 0},
    }
    assert sum(sum(cells.values()) for cells in matrix.values()) == len(rows)


def test_compare_pair_counts_discordant_cases() -> None:
    a = {
        "1": row("x/1", "bad", "bad"),
        "2": row("x/2", "good", "good"),
        "3": row("x/3", "bad", "good"),
        "4": row("x/4", "bad", None),
        "only-a": row("x/9", "bad", "bad"),
    }
    b = {
        "1": row("x/1", "bad", "good"),
        "2": row("x/2", "good", "good"),
        "3": row("x/3", "bad", "bad"),
        "4": row("x/4", "bad", None, outcome="error"),
        "only-b": row("x/8", "bad", "bad"),
    }
    pair = compare_pair(a, b)
    assert pair.shared == 4
    assert (pair.both_correct, pair.both_wrong, pair.only_a, pair.only_b) == (1, 1, 1, 1)
    assert pair.agree == 2  # case 2 (good/good) and case 4 (no verdict from either)
    assert pair.agreement == pytest.approx(0.5)
    assert pair.differing == ("1", "3")
    assert pair.p_value == 1.0


def test_pass_hat_k() -> None:
    assert pass_hat_k(5, 5, 5) == 1.0
    assert pass_hat_k(5, 4, 5) == 0.0
    assert pass_hat_k(4, 3, 2) == pytest.approx(math.comb(3, 2) / math.comb(4, 2))
    with pytest.raises(ValueError):
        pass_hat_k(2, 2, 3)


def test_case_repeats_consistency() -> None:
    tries = [row("a/1", "bad", v) for v in ("bad", "bad", "good", None)]
    repeats = case_repeats(tries)
    assert (repeats.tries, repeats.correct) == (4, 2)
    assert repeats.verdicts[0] == ("bad", 2)
    assert repeats.consistency == pytest.approx(0.5)


def test_repeat_stats() -> None:
    rows = [
        *(row("a/1", "bad", "bad", repeat=r) for r in range(3)),  # always right
        *(row("a/2", "good", v, repeat=r) for r, v in enumerate(("good", "bad", "good"))),
        *(row("a/3", "good", "bad", repeat=r) for r in range(2)),  # stopped early: 2 tries
    ]
    stats = repeat_stats(rows, 3)
    assert stats is not None
    assert (stats["cases"], stats["incomplete"]) == (3, 1)
    assert stats["pass_at_1"] == pytest.approx((1 + 2 / 3 + 0) / 3)
    assert stats["pass_hat_n"] == pytest.approx(0.5)  # a/1 passes 3 of 3, a/2 does not
    assert stats["consistency"] == pytest.approx((1 + 2 / 3 + 1) / 3)
    assert stats["always_same"] == pytest.approx(2 / 3)
    assert repeat_stats(rows, 1) is None


def test_case_interval_counts_cases_not_tries() -> None:
    once = [row(f"a/{n}", "bad", "bad" if n < 6 else "good") for n in range(10)]
    assert case_interval(once) == pytest.approx(wilson_interval(6, 10))
    thrice = [r for r in once for _ in range(3)]  # the same answers asked three times
    assert case_interval(thrice) == pytest.approx(wilson_interval(6, 10))  # not (18, 30)
    mixed = [row("a/1", "bad", v) for v in ("bad", "good")] + [row("a/2", "bad", "bad")]
    assert case_interval(mixed) == pytest.approx(proportion_interval(0.75, 2))
    assert case_interval([]) is None


def test_proportion_interval_is_wilson_for_whole_counts() -> None:
    for successes, n in ((0, 5), (3, 7), (50, 50)):
        assert proportion_interval(successes / n, n) == pytest.approx(wilson_interval(successes, n))
    low, high = proportion_interval(2 / 3, 30)
    assert low < 2 / 3 < high


def test_cost_per_correct() -> None:
    assert cost_per_correct(0.5, 4) == pytest.approx(0.125)
    assert cost_per_correct(0.0, 4) == 0.0  # a free model: each right answer costs nothing
    assert cost_per_correct(None, 4) is None  # cost unknown
    assert cost_per_correct(0.5, 0) is None  # nothing right: no price per right answer


def test_labels_are_read_whatever_their_case_as_imported_databases_hold_them() -> None:
    # The original tool stored the verdict as the model wrote it; outcomes were imported
    # case-insensitively, so the figures must read the labels the same way.
    rows = [
        row("a/1", "Bad", "bad", outcome="correct"),
        row("a/2", "bad", "BAD", outcome="correct"),
        row("a/3", " good", "Good", outcome="correct"),
        row("a/4", "GOOD", "bad", outcome="wrong"),
    ]
    stats = verdict_stats(rows)
    assert stats["confusion"] == {"tp": 2, "fp": 1, "tn": 1, "fn": 0}
    assert (stats["recall_bad"], stats["recall_good"]) == (1.0, 0.5)
    assert stats["precision"] == pytest.approx(2 / 3)
    assert confusion_matrix(rows) == {
        "bad": {"bad": 2, "good": 0, "none": 0},
        "good": {"bad": 1, "good": 1, "none": 0},
    }
    same = compare_pair({"a/1": rows[0]}, {"a/1": row("a/1", "bad", "bad")})
    assert same.agree == 1


def test_a_case_without_a_known_label_is_no_false_positive_or_negative() -> None:
    rows = [
        row("a/1", "", "good", outcome="wrong"),  # imported row whose label was missing
        row("a/2", "", "bad", outcome="wrong"),
        row("a/3", "bad", "bad"),
    ]
    stats = verdict_stats(rows)
    assert stats["confusion"] == {"tp": 1, "fp": 0, "tn": 0, "fn": 0}
    assert stats["precision"] == 1.0 and stats["recall"] == 1.0


def test_an_error_is_never_a_verdict_in_precision_and_recall() -> None:
    rows = [row("a/1", "good", "bad", outcome="error"), row("a/2", "bad", "bad")]
    stats = verdict_stats(rows)
    assert stats["confusion"] == {"tp": 1, "fp": 0, "tn": 0, "fn": 0}
    assert stats["precision"] == 1.0


def test_cost_is_partial_when_answered_requests_lack_their_cost() -> None:
    rows = [
        row("a/1", "bad", "bad", cost=0.01),
        row("a/2", "bad", "bad", cost=None),  # the endpoint did not report this one
        row("a/3", "bad", None, outcome="error", cost=None),  # no reply, nothing billed
    ]
    usage = usage_stats(rows)
    assert usage["cost"] == pytest.approx(0.01)
    assert usage["cost_missing"] == 1
    assert usage_stats(rows[::2])["cost_missing"] == 0
    assert usage_stats([row("a/2", "bad", "bad")])["cost_missing"] == 0  # no costs at all
