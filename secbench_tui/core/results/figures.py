"""Every figure of a run, from its stored rows and its recorded settings: one computation.

`run_figures_of` is what every front end reads a run's figures from: the engine's summary
(the headless summary lines, `--summary-json`, the app's summary at the run's end), the
report and its exports, and the app's runs table and comparison grid. A run's figures are
its originals' (never blended with its `--rewrites` variants', which have figures of their
own, `robustness`); with `--repeats`, accuracy's interval takes each case as one unit
(`metrics.case_interval`), and the pair, reason and scenario figures count first answers
(repeat 0) only: a pair is one answer to each of its two cases.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TypedDict, cast

from secbench_tui.core.lint.report import read_leak_record
from secbench_tui.core.models import Outcome, RecordedSettings, RewritesRecord, SuiteKind
from secbench_tui.core.results import pairwise
from secbench_tui.core.results.chance import ChanceLevels, chance_levels
from secbench_tui.core.results.metrics import (
    VerdictStats,
    case_interval,
    summarize,
    usage_stats,
    wilson_interval,
)
from secbench_tui.core.results.reasons import Answer, ReasonFigures, first_answers, reason_figures
from secbench_tui.core.results.summary import (
    PairwiseSummary,
    ReasonSummary,
    RunSummary,
    ScenarioSummary,
)
from secbench_tui.core.store.rows import ResultRow, originals_only


class AnswerFigures(TypedDict, total=False):
    """`answer_figures`: a run's pairwise, reason and scenario figures and the chance levels
    of the lead figures; none without a markdown case."""

    pairwise: PairwiseSummary
    reason: ReasonSummary
    scenarios: ScenarioSummary
    chance: ChanceLevels


def pairwise_summary(
    tallies: Sequence[pairwise.PairTally], intervals: bool = True
) -> PairwiseSummary:
    total = sum(tallies, pairwise.PairTally())
    intervals = intervals and bool(total.pairs)
    return PairwiseSummary(
        pairs=total.pairs,
        p_c=total.rate("p_c"),
        p_v=total.rate("p_v"),
        p_b=total.rate("p_b"),
        p_r=total.rate("p_r"),
        p_c_rule=total.rate("p_c_rule"),
        unanswered=total.unanswered,
        p_c_ci=pairwise.bootstrap_interval(tallies, "p_c") if intervals else None,
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


def scenario_summary(
    tallies: Sequence[pairwise.PairTally], intervals: bool = True
) -> ScenarioSummary:
    total = sum(tallies, pairwise.PairTally())
    intervals = intervals and bool(total.scenarios)
    return ScenarioSummary(
        count=total.scenarios,
        solved=total.solved,
        solved_ci=pairwise.bootstrap_interval(tallies, "solved") if intervals else None,
    )


def answer_figures(
    answers: Sequence[Answer],
    surface_cue: Mapping[str, float] | None = None,
    intervals: bool = True,
) -> AnswerFigures:
    """`pairwise`, `reason`, `scenarios` and `chance` for one run's answers; {} with no
    markdown case. `surface_cue`: the leak check's held-out answers, when the suite leaks.
    P-C with the rule is None (not available) when no bad case names a rule. Without
    `intervals`, the bootstrap intervals and the chance levels are left out (None)."""
    if not answers:
        return AnswerFigures()
    tallies = list(pairwise.scenario_tallies(answers).values())
    reasons = reason_figures(answers)
    pairs = pairwise_summary(tallies, intervals)
    if not reasons.available:
        pairs.p_c_rule = None
    found: AnswerFigures = {
        "pairwise": pairs,
        "reason": reason_summary(reasons),
        "scenarios": scenario_summary(tallies, intervals),
    }
    if intervals:
        found["chance"] = chance_levels(answers, surface_cue)
    return found


def answer_figures_of(summary: RunSummary) -> AnswerFigures:
    """The pair, reason, scenario and chance figures of a run's summary, those it has."""
    found = AnswerFigures()
    if summary.pairwise is not None:
        found["pairwise"] = summary.pairwise
    if summary.reason is not None:
        found["reason"] = summary.reason
    if summary.scenarios is not None:
        found["scenarios"] = summary.scenarios
    if summary.chance is not None:
        found["chance"] = summary.chance
    return found


def repeats_of(rows: Sequence[ResultRow], settings: RecordedSettings) -> int:
    """How many times each case was asked: as recorded, or as the rows show (older runs)."""
    seen = max((int(row.get("repeat") or 0) for row in rows), default=0) + 1
    return max(seen, settings.repeats or 1)


def run_figures_of(
    rows: Sequence[ResultRow], settings: RecordedSettings, *, intervals: bool = True
) -> RunSummary:
    """Every figure of one run (`Store.run_results`, with its recorded settings): the one
    computation each front end shows. Who ran it, and for how long, are the caller's to add
    (`RunSummary.model_copy(update=...)`).

    `intervals=False` (a table that shows the figures alone, many runs at once) leaves out
    what takes time: the bootstrap intervals, the chance levels and `--rewrites` robustness;
    every figure it gives is the one the full computation gives."""
    originals = originals_only(rows)
    leak, guesses = read_leak_record(settings.leak)
    surface_cue = guesses if leak is not None and leak.leaky else None
    figures: dict[str, object] = {
        **summarize(originals),
        **answer_figures(first_answers(originals), surface_cue, intervals),
        "leak": leak,
    }
    repeats = repeats_of(rows, settings)
    markdown = [r for r in originals if r.get("suite_kind", "markdown") == "markdown"]
    if repeats > 1 and markdown:  # tries of one case are not independent: cases are the units
        figures["accuracy_ci"] = case_interval(markdown)
        for app, stats in cast(dict[str, VerdictStats], figures["apps"]).items():
            stats["accuracy_ci"] = case_interval([r for r in markdown if r["app"] == app])
    rewritten = len(originals) != len(rows) or settings.rewrites is not None
    if rewritten:
        figures.update(usage_stats(rows))  # what the variants cost counts
    if rewritten and intervals:
        from secbench_tui.core.results.robustness import robustness  # --rewrites only

        rewrites = settings.rewrites or RewritesRecord()
        figures["robustness"] = robustness(rows, rewrites.dropped, rewrites.kinds, repeats)
    if settings.task == "fix":  # verified after the run: until then, "not verified yet"
        from secbench_tui.core.results.fixes import fix_summary

        figures["fixes"] = fix_summary(originals)
    vdb_rows = [r for r in rows if r["suite_kind"] == SuiteKind.VULDETECTBENCH.value]
    if vdb_rows:
        from secbench_tui.core.vuldetectbench import DEFAULT_SCORING
        from secbench_tui.core.vuldetectbench.task_scores import (
            aggregate_rows,
            summary_counts,
            summary_metrics,
        )

        scoring = settings.vdb_scoring or DEFAULT_SCORING
        aggregate = aggregate_rows(vdb_rows, scoring)
        figures["vuldetectbench"] = summary_metrics(aggregate)
        figures["vuldetectbench_counts"] = summary_counts(aggregate)
        figures["vdb_scoring"] = scoring
    figures["no_answer"] = no_answer(rows)
    return RunSummary.from_figures(figures)


def no_answer(rows: Sequence[ResultRow]) -> str | None:
    """When no case of a run got an answer, why: its commonest error and how many it ended."""
    if not rows or any(row["outcome"] != Outcome.ERROR.value for row in rows):
        return None
    reasons = Counter(str(row.get("error") or "no reply") for row in rows)
    reason, count = reasons.most_common(1)[0]
    return f"no case got an answer: {count} of {len(rows)} cases ended with {reason}"
