"""A run's reason, pairwise and scenario figures, from its stored rows, as summary models.

The engine's summary (`--summary-json`, the summary line) and the report build them here, so
both show the same numbers. Only first answers (repeat 0) to markdown cases count: a pair is
one answer to each of its two cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypedDict

from secbench_tui.core.results import pairwise
from secbench_tui.core.results.chance import ChanceLevels, chance_levels
from secbench_tui.core.results.metrics import wilson_interval
from secbench_tui.core.results.reasons import Answer, ReasonFigures, first_answers, reason_figures
from secbench_tui.core.results.summary import PairwiseSummary, ReasonSummary, ScenarioSummary
from secbench_tui.core.store.rows import ResultRow


class AnswerFigures(TypedDict, total=False):
    """`answer_figures`: a run's pairwise, reason and scenario figures and the chance levels
    of the lead figures; none without a markdown case."""

    pairwise: PairwiseSummary
    reason: ReasonSummary
    scenarios: ScenarioSummary
    chance: ChanceLevels


def pairwise_summary(tallies: Sequence[pairwise.PairTally]) -> PairwiseSummary:
    total = sum(tallies, pairwise.PairTally())
    return PairwiseSummary(
        pairs=total.pairs,
        p_c=total.rate("p_c"),
        p_v=total.rate("p_v"),
        p_b=total.rate("p_b"),
        p_r=total.rate("p_r"),
        p_c_rule=total.rate("p_c_rule"),
        unanswered=total.unanswered,
        p_c_ci=pairwise.bootstrap_interval(tallies, "p_c") if total.pairs else None,
    )


def reason_summary(figures: ReasonFigures) -> ReasonSummary:
    n = figures.bad_cases
    return ReasonSummary(
        bad_cases=n,
        right_rule=figures.right_rule_rate,
        right_rule_and_line=figures.right_rule_and_line_rate,
        rule_precision=figures.rule_precision,
        right_rule_ci=wilson_interval(figures.right_rule, n) if n else None,
        right_rule_and_line_ci=wilson_interval(figures.right_rule_and_line, n) if n else None,
        right_rule_cases=figures.right_rule,
        right_rule_and_line_cases=figures.right_rule_and_line,
        rule_recall=figures.rule_recall,
        imprecise=figures.imprecise,
        wrong_rule=figures.wrong_rule,
        wrong_verdict=figures.wrong_verdict,
        per_rule={
            str(rule): {
                "bad_cases": row.bad_cases,
                "right": row.right,
                "cited": row.cited,
                "cited_right": row.cited_right,
                "false_alarms": row.false_alarms,
            }
            for rule, row in figures.per_rule.items()
        },
    )


def scenario_summary(tallies: Sequence[pairwise.PairTally]) -> ScenarioSummary:
    total = sum(tallies, pairwise.PairTally())
    return ScenarioSummary(
        count=total.scenarios,
        solved=total.solved,
        solved_ci=pairwise.bootstrap_interval(tallies, "solved") if total.scenarios else None,
    )


def answer_figures(
    answers: Sequence[Answer], surface_cue: Mapping[str, float] | None = None
) -> AnswerFigures:
    """`pairwise`, `reason`, `scenarios` and `chance` for one run's answers; {} with no
    markdown case. `surface_cue`: the leak check's held-out answers, when the suite leaks.
    P-C with the rule is None (not available) when no bad case names a rule."""
    if not answers:
        return AnswerFigures()
    tallies = list(pairwise.scenario_tallies(answers).values())
    reasons = reason_figures(answers)
    pairs = pairwise_summary(tallies)
    if not reasons.available:
        pairs.p_c_rule = None
    return {
        "pairwise": pairs,
        "reason": reason_summary(reasons),
        "scenarios": scenario_summary(tallies),
        "chance": chance_levels(answers, surface_cue),
    }


def run_figures(
    rows: Iterable[ResultRow], surface_cue: Mapping[str, float] | None = None
) -> AnswerFigures:
    """The same, from a run's stored rows (`Store.run_results`)."""
    return answer_figures(first_answers(rows), surface_cue)
