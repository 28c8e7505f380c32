"""Each run's figures (a `Contender`), the cases with every model's answers, and the pairs of
models compared on the cases both answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import TYPE_CHECKING, cast

from secbench_tui.core.models import Outcome
from secbench_tui.core.results.figures import answer_figures_of, repeats_of, run_figures_of
from secbench_tui.core.results.findings import finding_summary
from secbench_tui.core.results.fixes import fix_summary
from secbench_tui.core.results.metrics import (
    case_repeats,
    compare_pair,
    confusion_matrix,
    cost_per_correct,
    label,
    repeat_stats,
    usage_stats,
)
from secbench_tui.core.results.pairwise import (
    compare_scenarios,
    scenario_tallies,
)
from secbench_tui.core.results.reasons import first_answers, reason_figures
from secbench_tui.core.results.report.data import (
    DIFFERING_SHOWN,
    AppStats,
    CaseResult,
    CaseView,
    Contender,
    ContenderStats,
    Pair,
    Row,
    VdbContender,
    VdbStats,
)
from secbench_tui.core.store.rows import originals_only
from secbench_tui.core.store.runs import RunRecord
from secbench_tui.core.vuldetectbench import DEFAULT_SCORING

if TYPE_CHECKING:
    from secbench_tui.core.vuldetectbench.task_scores import TaskMetrics

# VulDetectBench's documented metrics per task, shown as percentages in this order.
VDB_METRICS = ("accuracy", "f1", "se", "me", "mar", "mir", "urs", "ors")


def case_key(row: Row) -> str:
    """Cases are the same when their id, text and expected answer are the same."""
    return f"{row['case_id']}\0{row.get('case_hash') or ''}\0{label(row['expected_result'])}"


def run_labels(runs: Sequence[RunRecord], prompts: dict[int, str]) -> dict[int, str]:
    """Model names, with the prompt (as `prompts` names it) where one model was asked with
    several prompts, and the run id where that still leaves one label twice."""
    asked: dict[str, set[str]] = {}
    for run in runs:
        asked.setdefault(run.model_name, set()).add(prompts[run.id])
    named = {
        r.id: f"{r.model_name} \u00b7 {prompts[r.id]}"
        if len(asked[r.model_name]) > 1 and prompts[r.id]
        else r.model_name
        for r in runs
    }
    seen: dict[str, int] = {}
    for name in named.values():
        seen[name] = seen.get(name, 0) + 1
    return {
        run_id: name if seen[name] == 1 else f"{name} (run {run_id})"
        for run_id, name in named.items()
    }


def markdown_contender(index: int, run: RunRecord, label: str, rows: list[Row]) -> Contender:
    """A markdown run's figures, from all its rows (originals and `--rewrites` variants): the
    headline ones by the one computation every front end reads (`figures.run_figures_of`),
    then what only the report shows (cases side by side, the confusion, the repeats)."""
    summary = run_figures_of(rows, run.settings)
    originals = originals_only(rows)
    figures = summary.model_dump(include=set(ContenderStats.__required_keys__))
    stats = cast(ContenderStats, {**figures, "distinct_cases": 0, "cost_per_correct": None})
    contender = Contender(index=index, run=run, label=label, rows=originals, stats=stats)
    contender.summary = summary
    contender.variant_rows = [r for r in rows if isinstance(r.get("variant"), dict)]
    contender.robustness = summary.robustness
    contender.repeats = repeats_of(rows, run.settings)
    for row in originals:
        contender.by_case.setdefault(case_key(row), []).append(row)
    contender.apps = {
        app: cast(
            AppStats,
            {
                **app_stats.model_dump(),
                "distinct_cases": len({r["case_id"] for r in originals if r["app"] == app}),
            },
        )
        for app, app_stats in summary.apps.items()
    }
    contender.confusion = confusion_matrix(originals)
    contender.repeat = repeat_stats(originals, contender.repeats)
    answers = first_answers(originals)
    contender.leak = summary.leak
    contender.figures = answer_figures_of(summary)
    contender.reasons = reason_figures(answers)
    contender.scenarios = scenario_tallies(answers)
    if run.settings.task == "fix":
        contender.fixes = fix_summary(rows)
    contender.findings = finding_summary(rows)
    stats["distinct_cases"] = len(contender.by_case)
    # With some answers' cost unreported, the total is a lower bound: no price per answer.
    known = None if stats["cost_missing"] else stats["cost"]
    stats["cost_per_correct"] = cost_per_correct(known, stats["correct"])
    return contender


def vuldetectbench_metrics(rows: Sequence[Row], scoring: str) -> TaskMetrics:
    """Task metrics of a VulDetectBench run, by the run's own scoring."""
    from secbench_tui.core.vuldetectbench.task_scores import aggregate_rows

    return dict(aggregate_rows(rows, scoring))


def vdb_contender(index: int, run: RunRecord, label: str, rows: list[Row]) -> VdbContender:
    stats: VdbStats = {
        "cases": len(rows),
        "unparsed": sum(1 for r in rows if r["outcome"] == Outcome.UNPARSED.value),
        "errors": sum(1 for r in rows if r["outcome"] == Outcome.ERROR.value),
        **usage_stats(rows),
    }
    contender = VdbContender(index=index, run=run, label=label, rows=rows, stats=stats)
    contender.vdb = vuldetectbench_metrics(rows, run.settings.vdb_scoring or DEFAULT_SCORING)
    return contender


def vdb_columns(contenders: Sequence[VdbContender]) -> list[tuple[str, str]]:
    """(task, metric) columns present in any run, tasks in order, metrics as documented."""
    present = {
        (task, name)
        for c in contenders
        for task, metrics in c.vdb.items()
        if isinstance(metrics, dict)
        for name in metrics
    }
    tasks = sorted({task for task, _ in present}, key=lambda t: (len(t), t))
    return [(t, name) for t in tasks for name in VDB_METRICS if (t, name) in present]


def vdb_crashes(contender: VdbContender) -> int:
    """Samples the original library would have crashed on (library scoring only)."""
    return sum(
        int(metrics.get("crashes") or 0)
        for metrics in contender.vdb.values()
        if isinstance(metrics, dict)
    )


def case_views(contenders: Sequence[Contender]) -> list[CaseView]:
    views: dict[str, CaseView] = {}
    for contender in contenders:
        for key, rows in contender.by_case.items():
            view = views.get(key)
            if view is None:
                first = rows[0]
                view = views[key] = CaseView(
                    anchor="",
                    key=key,
                    case_id=first["case_id"],
                    app=first["app"],
                    expected=first["expected_result"],
                    code=first.get("code") or "",
                    description=first.get("description") or "",
                )
            passed = all(r["outcome"] == Outcome.CORRECT.value for r in rows)
            repeats = case_repeats(rows) if contender.repeats > 1 else None
            view.results.append(CaseResult(contender, rows, passed, repeats))
    ordered = sorted(views.values(), key=lambda v: (v.app, v.case_id, v.key))
    for number, view in enumerate(ordered):
        view.anchor = f"c{number}"
        judged = [r for r in view.results if not r.contender.baseline] or view.results
        view.judged = len(judged)
        view.failed_by = [r.contender.label for r in judged if not r.passed]
    return ordered


def model_pairs(contenders: Sequence[Contender], cases: dict[str, CaseView]) -> list[Pair]:
    """Every two models on their shared cases, models against each other first."""
    pairs = []
    for a, b in combinations(contenders, 2):
        if a.baseline and b.baseline:
            continue
        comparison = compare_pair(a.first_tries(), b.first_tries())
        if comparison.shared:
            differing = [cases[key] for key in comparison.differing[:DIFFERING_SHOWN]]
            solved = compare_scenarios(a.scenarios, b.scenarios)
            pairs.append(Pair(a, b, comparison, differing, solved if solved.scenarios else None))
    pairs.sort(key=lambda p: (p.a.baseline or p.b.baseline, p.a.index, p.b.index))
    return pairs
