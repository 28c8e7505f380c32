"""Chance levels computed from the cases run: each checked against a count made here, and
against the figures the tool computes for answers that play the strategy."""

from __future__ import annotations

from dataclasses import replace

import pytest

from secbench_tui.core.results.chance import chance_levels, highest
from secbench_tui.core.results.pairwise import pair_figures
from secbench_tui.core.results.reasons import Answer, precise, reason_figures


def suite() -> list[Answer]:
    """Scenario a: 1 good, 2 bad (rules 1 and 2); b: 1 good, 2 bad (rule 1, rule 3 with 4
    also acceptable); c: 1 bad (rule 1), no good case. 3 good, 5 bad; SPEC rules 1-5."""
    spec = (1, 2, 3, 4, 5)

    def bad(case_id: str, *gold: int) -> Answer:
        return Answer(case_id, "bad", None, gold[0], frozenset(gold), app="x", spec=spec)

    return [
        Answer("x/a-01-good.md", "good", None, app="x", spec=spec),
        bad("x/a-02-bad.md", 1),
        bad("x/a-03-bad.md", 2),
        Answer("x/b-01-good.md", "good", None, app="x", spec=spec),
        Answer("x/b-02-good.md", "good", None, app="x", spec=spec),
        bad("x/b-03-bad.md", 1),
        bad("x/b-04-bad.md", 3, 4),
        bad("x/c-001-bad.md", 1),
    ]


def test_levels_are_counted_from_the_cases_run() -> None:
    levels = chance_levels(suite())
    assert levels.accuracy == {"always_bad": 5 / 8, "always_good": 3 / 8, "majority": 5 / 8}
    assert levels.balanced_accuracy == {"constant": 0.5}
    assert levels.p_c == {"coin_flip": 0.25, "always_bad": 0.0}
    # scenarios of 3, 4 and 1 cases: a coin flip solves each with 1/2 ** n
    assert levels.scenarios_solved["coin_flip"] == pytest.approx((1 / 8 + 1 / 16 + 1 / 2) / 3)
    assert levels.scenarios_solved["always_bad"] == pytest.approx(1 / 3)  # c has no good case
    assert levels.scenarios_solved["always_good"] == 0.0
    # rule 1 is acceptable on 3 of 5 bad cases; with one more allowed, 1 and 2 (or 3, 4): 4
    assert levels.right_reason == {
        "most_frequent_rule": 3 / 5,
        "best_allowed_rules": 4 / 5,
        "every_rule": 0.0,
    }
    assert highest(levels.right_reason) == ("best_allowed_rules", 4 / 5)


def test_a_strategy_played_through_the_figures_scores_its_level() -> None:
    levels = chance_levels(suite())
    for cited, level in (((1,), "most_frequent_rule"), ((1, 2, 3, 4, 5), "every_rule")):
        played = [
            replace(
                a,
                verdict="bad",
                cited=cited,
                right_rule=a.expected == "bad" and precise(cited, a.gold),
            )
            for a in suite()
        ]
        figures = reason_figures(played)
        assert figures.right_rule_rate == levels.right_reason[level]
        assert pair_figures(played).rate("p_c") == levels.p_c["always_bad"]


def test_what_cannot_be_computed_is_none_never_zero() -> None:
    goods = [a for a in suite() if a.expected == "good"]
    levels = chance_levels(goods)
    assert levels.p_c == {"coin_flip": None, "always_bad": None}
    assert levels.balanced_accuracy == {"constant": None}
    assert set(levels.right_reason.values()) == {None}
    unruled = [replace(a, gold=frozenset(), gold_rule=None) for a in suite()]
    assert set(chance_levels(unruled).right_reason.values()) == {None}
    assert highest({"a": None}) is None


def test_a_surface_cue_scores_its_own_held_out_answers() -> None:
    cue = {a.case_id: 1.0 if a.expected == "bad" else 0.0 for a in suite()}
    cue["x/a-01-good.md"] = 0.5  # a tie: half a right answer
    levels = chance_levels(suite(), surface_cue=cue)
    assert levels.accuracy["surface_cue"] == pytest.approx(7.5 / 8)
    assert levels.p_c["surface_cue"] == pytest.approx((0.5 * 2 + 4) / 6)
    assert "surface_cue" not in levels.right_reason
