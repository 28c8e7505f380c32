"""Robustness figures from hand-made rows: each figure counted by hand beside it."""

from __future__ import annotations

from typing import Any

import pytest

from secbench_tui.core.models import Citation, ReasonScore
from secbench_tui.core.results.robustness import robustness


def _row(
    case: str,
    expected: str,
    said: str,
    repeat: int = 0,
    relation: str | None = None,
    rules: tuple[int, ...] = (),
    right: bool | None = None,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "case_id": case if relation is None else f"{case}#{relation}/0",
        "repeat": repeat,
        "expected_result": expected,
        "actual_result": said,
        "outcome": "correct" if said == expected else "wrong",
        "variant": None,
        "reasons": ReasonScore(
            given=True, citations=tuple(Citation(rule=r) for r in rules), right_rule=right
        ).to_json(),
    }
    if relation is not None:
        row["variant"] = {"original": case, "relation": relation, "seed": 0, "proven": True}
    return row


def test_flips_claims_rules_and_the_missing_noise_floor() -> None:
    rows = [
        _row("a/s-01-good.md", "good", "good"),
        _row("a/s-03-bad.md", "bad", "bad", rules=(2,), right=True),
        _row("a/s-01-good.md", "good", "bad", relation="layout"),
        _row("a/s-03-bad.md", "bad", "bad", relation="layout", rules=(3,), right=False),
        _row("a/s-01-good.md", "good", "good", relation="comment-flaw"),
        _row("a/s-03-bad.md", "bad", "good", relation="comment-safe"),
    ]
    figures = robustness(rows, {"layout": 2}, {"layout": "invariance"}, repeats=1)
    assert figures is not None
    assert figures.variants == 4 and figures.dropped == 2
    assert figures.noise_flip_rate is None and "--repeats 2" in figures.notes[0]
    layout = figures.by_relation["layout"]
    assert (layout.flips, layout.pairs, layout.flip_rate) == (1, 2, 0.5)
    assert layout.rule_pairs == 1 and layout.rule_kept == 0.0  # rule 2 became rule 3
    assert (layout.right_rule, layout.right_rule_original) == (0.0, 1.0)
    assert layout.pc == 0.0 and layout.pc_original == 1.0
    assert figures.flip_rate == 0.5 and figures.robust_accuracy == 0.5
    assert figures.agreement == 0.5
    safe = figures.by_relation["comment-safe"]
    assert safe.kind == "sensitivity" and safe.towards_claim == 1.0
    assert figures.by_relation["comment-flaw"].flips == 0
    assert figures.sensitivity_flip_rate == pytest.approx(0.5)
    assert figures.model_dump()["by_relation"]["layout"]["variants"] == 2


def test_noise_floor_and_excess_on_the_same_cases() -> None:
    rows = [
        _row("a/s-01-good.md", "good", "good"),
        _row("a/s-01-good.md", "good", "bad", repeat=1),
        _row("a/s-02-good.md", "good", "good"),
        _row("a/s-02-good.md", "good", "good", repeat=1),
        _row("a/s-01-good.md", "good", "good", relation="alias-rename"),
        _row("a/s-02-good.md", "good", "bad", relation="alias-rename"),
    ]
    figures = robustness(rows, repeats=2)
    assert figures is not None and figures.noise_flip_rate == 0.5 and not figures.notes
    alias = figures.by_relation["alias-rename"]
    assert alias.flip_rate == 0.5 and alias.noise_on_same == 0.5 and alias.excess == 0.0
    assert alias.excess_p == 1.0


def test_no_variant_no_figures() -> None:
    assert robustness([_row("a/s-01-good.md", "good", "good")]) is None


def test_robust_accuracy_states_the_cases_it_covers() -> None:
    """Only originals with an invariance variant count; the summary says how many of all."""
    from secbench_tui.core.results.summary import robustness_lines

    rows = [
        _row("a/s-01-good.md", "good", "good"),
        _row("a/s-03-bad.md", "bad", "bad"),
        _row("a/t-01-good.md", "good", "good"),  # no variant: not covered
        _row("a/s-01-good.md", "good", "good", relation="layout"),
        _row("a/s-03-bad.md", "bad", "good", relation="layout"),
        _row("a/t-01-good.md", "good", "good", relation="comment-safe"),  # sensitivity only
    ]
    figures = robustness(rows, {}, {"layout": "invariance"}, repeats=1)
    assert figures is not None
    assert (figures.covered, figures.cases, figures.robust_accuracy) == (2, 3, 0.5)
    shown = " ".join(seg.text for line in robustness_lines(figures) for seg in line)
    assert "robust accuracy 50.0%  agreement 50.0% (over 2 of 3 cases" in shown
