"""The HTML report: results read from the database, arranged for people choosing a model.

`gather()` reads the chosen runs from a `Store` (by default the latest whole run of each model
on each suite), computes every figure through `core.metrics` and ranks the models into a
verdict: the most accurate, those McNemar's test cannot tell from it, those no better than
an offline reference, and what a correct answer costs. `render_html()` turns that into
one self-contained page with jinja2, autoescape on, so every string from a model, a case, a
model name or an app name is escaped. The page's own script and stylesheet are inline and
pinned by hashes in a Content-Security-Policy, so nothing else could run even if a string ever
slipped through unescaped. Nothing is re-run: any past run can be reported again. Control
characters in those strings are shown as `\\x1b` (`_shown`), never written as they are.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from secbench_tui import __version__
from secbench_tui.core import numbers
from secbench_tui.core.models import Outcome, RunStatus, SuiteKind
from secbench_tui.core.results.figures import answer_figures
from secbench_tui.core.results.metrics import (
    CaseRepeats,
    PairComparison,
    RepeatStats,
    VerdictStats,
    case_interval,
    case_repeats,
    compare_pair,
    confusion_matrix,
    cost_per_correct,
    label,
    repeat_stats,
    usage_stats,
    verdict_stats,
)
from secbench_tui.core.results.pairwise import (
    PairTally,
    ScenarioComparison,
    compare_scenarios,
    scenario_tallies,
)
from secbench_tui.core.results.reasons import ReasonFigures, first_answers, reason_figures
from secbench_tui.core.results.robustness import (
    Robustness,
    robustness,
)
from secbench_tui.core.store.database import RunRecord, Store
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.untrusted import inert
from secbench_tui.core.vuldetectbench import DEFAULT_SCORING

if TYPE_CHECKING:
    from secbench_tui.core.vuldetectbench.scoring import TaskMetrics

BASELINE_PREFIX = "baseline/"
HARDEST_SHOWN = 20
DIFFERING_SHOWN = 30
LABEL_CHARS = 40
IMPORTED_SUITE = "suite unknown (imported)"  # runs imported from the original tool's database
SIGNIFICANCE = 0.05  # McNemar p below this: the two models differ by more than chance
# VulDetectBench's documented metrics per task, shown as percentages in this order.
VDB_METRICS = ("accuracy", "f1", "se", "me", "mar", "mir", "urs", "ors")
# Column heading and what it measures, as the benchmark defines it.
VDB_METRIC_NAMES = {
    "accuracy": ("Accuracy", "share of YES/NO answers that match the label"),
    "f1": ("F1", "F1 with YES (vulnerable) as the positive class"),
    "se": ("SE", "strict evaluation: 1 for the optimal option, 0.5 for the sub-optimal one"),
    "me": ("ME", "moderate evaluation: 1 when every option named is the optimal or sub-optimal"),
    "mar": ("MAR", "macro recall: the mean share of gold key objects and functions named"),
    "mir": ("MIR", "micro recall: gold key objects and functions named, pooled over samples"),
    "urs": ("URS", "union line recall: lines in common over the union of reply and gold lines"),
    "ors": ("ORS", "line recall: lines in common over the gold lines"),
}
VDB_TASK_NAMES = {
    "task1": "Task 1: vulnerability existence",
    "task2": "Task 2: vulnerability type (CWE)",
    "task3": "Task 3: key objects and functions",
    "task4": "Task 4: root cause location",
    "task5": "Task 5: trigger point location",
}
# Settings that mean nothing for some runs: the endpoint's for an offline baseline,
# VulDetectBench's for a markdown suite, the markdown suite's for VulDetectBench.
ENDPOINT_SETTINGS = frozenset(
    {"base_url", "temperature", "max_tokens", "response_format", "max_retries", "timeout"}
    | {"reasoning_effort", "reasoning_model", "request_style"}
)
VDB_ONLY_SETTINGS = frozenset({"tasks", "method", "vdb_scoring"})
MARKDOWN_ONLY_SETTINGS = frozenset({"apps"})

Row = ResultRow


class ReportError(Exception):
    """Nothing to report, or a selection that matches nothing; the message says what to do."""


# --- what the report is made of ----------------------------------------------------------


class AppStats(VerdictStats):
    """One app's verdict figures in a run, with how many distinct cases it has."""

    distinct_cases: int


@dataclass
class Contender:
    """One selected run: a model on a suite, with every figure the report shows for it."""

    index: int
    run: RunRecord
    label: str
    rows: list[Row]
    repeats: int = 1
    stats: dict[str, Any] = field(default_factory=dict)
    apps: dict[str, AppStats] = field(default_factory=dict)
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    repeat: RepeatStats | None = None
    by_case: dict[str, list[Row]] = field(default_factory=dict)
    vdb: TaskMetrics = field(default_factory=dict)
    rank: int | None = None  # 1 = most accurate on its suite; None for references
    colour: str = "ref"  # the chart class: s0..s9 for models, ref for references
    standing: str = ""  # against its suite's most accurate model: best, tied, behind, ahead
    vs_best: PairComparison | None = None
    settings: list[tuple[str, str]] = field(default_factory=list)  # shown, not common to all
    variant_rows: list[Row] = field(default_factory=list)  # --rewrites: never in the figures
    robustness: Robustness | None = None

    @property
    def all_rows(self) -> list[Row]:
        """Originals, then variants: what exports carry."""
        return [*self.rows, *self.variant_rows]

    # right for the right reason: pairwise, reason and scenario summaries; the per-rule table
    figures: dict[str, Any] = field(default_factory=dict)
    reasons: ReasonFigures | None = None
    scenarios: dict[str, PairTally] = field(default_factory=dict)

    @property
    def model(self) -> str:
        return self.run.model_name

    @property
    def baseline(self) -> bool:
        return self.model.startswith(BASELINE_PREFIX)

    @property
    def prompt(self) -> str:
        """The evaluation prompt's name ("" for runs imported without one)."""
        return self.run.prompt_name or ""

    @property
    def suite_label(self) -> str:
        """The suite folder and its parent: short enough for a table column."""
        return suite_name("/".join(Path(self.run.suite_path).parts[-2:]))

    @property
    def case_count(self) -> int:
        """Distinct cases answered (tries of one case count once)."""
        return len(self.by_case) if self.by_case else int(self.stats.get("cases", 0))

    @property
    def reused(self) -> int:
        return sum(1 for row in self.rows if row.get("reused_from"))

    @property
    def duration_s(self) -> float | None:
        start, end = _parse_time(self.run.started_at), _parse_time(self.run.finished_at)
        return (end - start).total_seconds() if start and end else None

    def first_tries(self) -> dict[str, Row]:
        return {key: rows[0] for key, rows in self.by_case.items()}


@dataclass
class CaseResult:
    contender: Contender
    rows: list[Row]
    passed: bool
    repeats: CaseRepeats | None


@dataclass
class CaseView:
    """One case with every selected model's answers to it."""

    anchor: str
    key: str
    case_id: str
    app: str
    expected: str
    code: str
    description: str
    results: list[CaseResult] = field(default_factory=list)
    failed_by: list[str] = field(default_factory=list)  # labels of the models judged
    judged: int = 0

    @property
    def name(self) -> str:
        """The case id without its app folder, for tables that show the app beside it."""
        return self.case_id.removeprefix(f"{self.app}/")


@dataclass
class Pair:
    a: Contender
    b: Contender
    comparison: PairComparison
    differing: list[CaseView]
    scenarios: ScenarioComparison | None = None  # McNemar on scenarios solved

    @property
    def better(self) -> Contender | None:
        """The model right on more of the cases where they differ, if not by chance."""
        m = self.comparison
        if m.p_value >= SIGNIFICANCE or m.only_a == m.only_b:
            return None
        return self.a if m.only_a > m.only_b else self.b


@dataclass
class Verdict:
    """The answer to "which model?" on one suite, with how sure the numbers let us be.

    `top` holds the most accurate model and every model McNemar's test cannot tell apart
    from it (p >= 0.05 on the cases both answered); `behind` those it beats by more than
    chance. `near_chance` lists models not clearly better than the best reference (an
    offline baseline that never reads the code). `partial` lists models that answered
    fewer of the suite's cases than the others: their figures are not comparable.
    """

    suite: str
    cases: int
    best: Contender
    top: list[Contender]
    behind: list[Contender]
    ahead: list[Contender]
    partial: list[Contender]
    reference: Contender | None
    near_chance: list[Contender]
    cheapest: Contender | None


@dataclass
class Bar:
    y: float
    width: float
    css: str
    label: str
    value: str
    low: float | None = None
    high: float | None = None


@dataclass
class Chart:
    width: int
    height: int
    left: int
    plot: int
    bars: list[Bar]
    groups: list[tuple[float, str]] = field(default_factory=list)
    marks: list[tuple[float, str]] = field(default_factory=list)  # (x, label): dashed lines

    @property
    def ticks(self) -> list[tuple[float, str]]:
        return [(self.left + self.plot * q / 4, f"{q * 25}%") for q in range(5)]


@dataclass
class PromptMatrix:
    """One suite's models x evaluation prompts: which way of asking suits each model best.

    `best` holds each model's most accurate prompt (ranked as the overview ranks); `pairs`
    compares the prompts of one model with McNemar's test on the cases both runs answered.
    """

    suite: str
    models: list[str]
    prompts: list[str]
    cells: dict[tuple[str, str], Contender]
    best: dict[str, Contender]
    pairs: list[Pair]

    def cell(self, model: str, prompt: str) -> Contender | None:
        return self.cells.get((model, prompt))


@dataclass
class ReportData:
    database: str
    generated_at: datetime
    explicit_selection: bool
    contenders: list[Contender]
    vdb: list[Contender]
    apps: list[str]
    cases: list[CaseView]
    overall: dict[str, Any]
    app_totals: dict[str, VerdictStats]
    pairs: list[Pair]
    hardest: list[CaseView]
    vdb_columns: list[tuple[str, str]]
    accuracy_chart: Chart | None
    app_chart: Chart | None
    verdicts: list[Verdict] = field(default_factory=list)
    common_settings: list[tuple[str, str]] = field(default_factory=list)
    others: list[RunRecord] = field(default_factory=list)  # runs with results left out
    tool_version: str = __version__
    prompt_matrices: list[PromptMatrix] = field(default_factory=list)
    # the JSON export's: each result's request by id, and the texts its messages are made of
    requests: dict[int, dict[str, Any]] = field(default_factory=dict)
    request_texts: dict[str, str] = field(default_factory=dict)

    @property
    def prompts(self) -> list[str]:
        return sorted({c.prompt for c in self.runs if c.prompt})

    @property
    def runs(self) -> list[Contender]:
        return sorted([*self.contenders, *self.vdb], key=lambda c: c.run.id)

    @property
    def suites(self) -> list[str]:
        return sorted({c.run.suite_path for c in self.contenders})

    @property
    def original_requests(self) -> list[int]:
        """Runs that sent the original security-bench evaluator's request."""
        return [
            c.run.id for c in self.runs if c.run.settings.get("request_style") == "security-bench"
        ]

    @property
    def with_rewrites(self) -> list[Contender]:
        return [c for c in self.contenders if c.robustness is not None]

    @property
    def with_repeats(self) -> list[Contender]:
        return [c for c in self.contenders if c.repeat is not None]

    @property
    def real_pairs(self) -> list[Pair]:
        return [p for p in self.pairs if not (p.a.baseline or p.b.baseline)]

    @property
    def reference_pairs(self) -> list[Pair]:
        return [p for p in self.pairs if p.a.baseline or p.b.baseline]

    @property
    def vdb_tasks(self) -> list[tuple[str, int]]:
        """(task, number of metric columns) in column order, for the table's top header."""
        tasks: dict[str, int] = {}
        for task, _ in self.vdb_columns:
            tasks[task] = tasks.get(task, 0) + 1
        return list(tasks.items())


# --- reading the database ----------------------------------------------------------------


def choose_runs(
    every: Sequence[RunRecord],
    path: Path,
    run_ids: Sequence[int] | None,
    models: Sequence[str] | None,
) -> list[RunRecord]:
    """The runs asked for, or by default, per model and suite, the latest
    whole run (completed, not narrowed by --apps or --limit), else the latest run."""
    if run_ids:
        missing = sorted(set(run_ids) - {r.id for r in every})
        if missing:
            raise ReportError(
                f"--runs: no run {', '.join(map(str, missing))} in {path}; "
                f"runs there: {_id_ranges([r.id for r in every]) or 'none'}"
            )
    if models:
        known = sorted({r.model_name for r in every})
        unknown = [m for m in models if m not in known]
        if unknown:
            raise ReportError(
                f"--models: no runs of {', '.join(unknown)} in {path}; "
                f"models there: {', '.join(known) or 'none'}"
            )
    runs = [
        r
        for r in every
        if r.finished > 0
        and (not run_ids or r.id in run_ids)
        and (not models or r.model_name in models)
    ]
    if not runs:
        raise ReportError(
            f"--db {path}: no results to report"
            + (" for this selection" if run_ids or models else "")
            + "; run an evaluation first, e.g. secbench-tui --model baseline/random --no-ui"
        )
    if run_ids:
        return runs
    chosen: dict[tuple[str, ...], RunRecord] = {}
    for run in runs:  # in id order: a later run replaces an earlier one...
        held = chosen.get(_suite_identity(run))
        # ...unless it covers less (--apps, --limit, stopped) than the whole run held.
        if held is None or is_whole(run) or not is_whole(held):
            chosen[_suite_identity(run)] = run
    return sorted(chosen.values(), key=lambda r: r.id)


def is_whole(run: RunRecord) -> bool:
    """A run that completed over its whole suite (its tasks): no --apps, no --limit."""
    settings = run.settings
    return (
        run.status is RunStatus.COMPLETED
        and not settings.get("apps")
        and settings.get("limit") is None
    )


def narrowed_by(run: RunRecord) -> str:
    """Why a run covers only part of its suite, in the words of the command line."""
    settings, parts = run.settings, []
    apps = settings.get("apps")
    if apps:
        parts.append("--apps " + ",".join(map(str, apps)))
    if settings.get("limit") is not None:
        parts.append(f"--limit {settings['limit']}")
    tasks = settings.get("tasks")
    if run.suite_kind == SuiteKind.VULDETECTBENCH.value and isinstance(tasks, list):
        if not set(tasks) >= {1, 2, 3, 4, 5}:
            parts.append("--tasks " + ",".join(map(str, tasks)))
    if run.status is not RunStatus.COMPLETED:
        parts.append(run.status)
    return ", ".join(parts)


def _suite_identity(run: RunRecord) -> tuple[str, ...]:
    """What makes two runs the same benchmark for one model; VulDetectBench's prompting
    method, scoring and tasks change the figures as much as another suite would (its tasks
    are five benchmarks, each with its own metrics)."""
    identity = (run.model_name, run.suite_kind, run.suite_path, run.prompt_name or "")
    if run.suite_kind == SuiteKind.VULDETECTBENCH.value:
        tasks = run.settings.get("tasks")
        extra = (
            str(run.settings.get("method")),
            str(run.settings.get("vdb_scoring")),
            ",".join(map(str, sorted(tasks))) if isinstance(tasks, list) else "",
        )
        return identity + extra
    return identity


def suite_name(path: str) -> str:
    """A suite's path as shown; imported results do not say which suite they came from."""
    return path or IMPORTED_SUITE


def _id_ranges(ids: Sequence[int]) -> str:
    """1-4, 7, 9-10: run ids as a short list."""
    spans: list[list[int]] = []
    for run_id in sorted(ids):
        if spans and run_id == spans[-1][1] + 1:
            spans[-1][1] = run_id
        else:
            spans.append([run_id, run_id])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def case_key(row: Row) -> str:
    """Cases are the same when their id, text and expected answer are the same."""
    return f"{row['case_id']}\0{row.get('case_hash') or ''}\0{label(row['expected_result'])}"


def _labels(runs: Sequence[RunRecord]) -> dict[int, str]:
    """Model names, with the prompt's name where one model was asked with several prompts,
    and the run id where that still leaves one label twice."""
    prompts: dict[str, set[str]] = {}
    for run in runs:
        prompts.setdefault(run.model_name, set()).add(run.prompt_name or "")
    named = {
        r.id: f"{r.model_name} \u00b7 {r.prompt_name}"
        if len(prompts[r.model_name]) > 1 and r.prompt_name
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


def _repeats(run: RunRecord, rows: Sequence[Row]) -> int:
    recorded = run.settings.get("repeats")
    seen = max((int(r["repeat"]) for r in rows), default=0) + 1
    return max(seen, int(recorded) if isinstance(recorded, int) else 1)


def _markdown_contender(index: int, run: RunRecord, label: str, rows: list[Row]) -> Contender:
    contender = Contender(index=index, run=run, label=label, rows=rows)
    contender.repeats = _repeats(run, rows)
    contender.stats = {**verdict_stats(rows), **usage_stats(rows)}
    by_app: dict[str, list[Row]] = {}
    for row in rows:
        by_app.setdefault(row["app"], []).append(row)
        contender.by_case.setdefault(case_key(row), []).append(row)
    contender.apps = {
        app: {**verdict_stats(app_rows), "distinct_cases": len({r["case_id"] for r in app_rows})}
        for app, app_rows in by_app.items()
    }
    contender.confusion = confusion_matrix(rows)
    contender.repeat = repeat_stats(rows, contender.repeats)
    answers = first_answers(rows)
    contender.figures = answer_figures(answers)
    contender.reasons = reason_figures(answers)
    contender.scenarios = scenario_tallies(answers)
    stats = contender.stats
    if contender.repeats > 1:  # tries of one case are not independent: cases are the units
        stats["accuracy_ci"] = case_interval(rows)
    stats["distinct_cases"] = len(contender.by_case)
    # With some answers' cost unreported, the total is a lower bound: no price per answer.
    known = None if stats["cost_missing"] else stats["cost"]
    stats["cost_per_correct"] = cost_per_correct(known, stats["correct"])
    return contender


def vuldetectbench_metrics(rows: Sequence[Row], scoring: str) -> TaskMetrics:
    """Task metrics of a VulDetectBench run, by the run's own scoring."""
    from secbench_tui.core.vuldetectbench.scoring import aggregate_rows

    return dict(aggregate_rows(rows, scoring))


def _vdb_contender(index: int, run: RunRecord, label: str, rows: list[Row]) -> Contender:
    contender = Contender(index=index, run=run, label=label, rows=rows)
    contender.stats = {
        "cases": len(rows),
        "unparsed": sum(1 for r in rows if r["outcome"] == Outcome.UNPARSED.value),
        "errors": sum(1 for r in rows if r["outcome"] == Outcome.ERROR.value),
        **usage_stats(rows),
    }
    contender.vdb = vuldetectbench_metrics(
        rows, str(run.settings.get("vdb_scoring", DEFAULT_SCORING))
    )
    return contender


def _vdb_columns(contenders: Sequence[Contender]) -> list[tuple[str, str]]:
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


def vdb_crashes(contender: Contender) -> int:
    """Samples the original library would have crashed on (library scoring only)."""
    return sum(
        int(metrics.get("crashes") or 0)
        for metrics in contender.vdb.values()
        if isinstance(metrics, dict)
    )


def _case_views(contenders: Sequence[Contender]) -> list[CaseView]:
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


def _pairs(contenders: Sequence[Contender], cases: dict[str, CaseView]) -> list[Pair]:
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


# --- ranking: which model, and how sure --------------------------------------------------


def _rank_key(c: Contender) -> tuple[Any, ...]:
    """Most accurate first; then balanced accuracy, then the cheaper right answer."""
    s = c.stats
    cost = s.get("cost_per_correct")
    return (
        -(s.get("accuracy") or 0.0),
        -(s.get("balanced_accuracy") or 0.0),
        float("inf") if cost is None else cost,
        c.run.id,
    )


def rank(contenders: Sequence[Contender]) -> list[Contender]:
    """Models in ranking order within each suite, references after them; sets `rank`,
    `index` and `colour`. A model that answered fewer cases than its suite's most
    (a narrowed or stopped run) ranks after the whole ones."""
    by_suite: dict[str, list[Contender]] = {}
    for c in contenders:
        by_suite.setdefault(c.run.suite_path, []).append(c)
    ordered: list[Contender] = []
    colours = 0
    for suite in sorted(by_suite):
        group = by_suite[suite]
        most = max(c.case_count for c in group)
        models = sorted(
            (c for c in group if not c.baseline),
            key=lambda c: (c.case_count < most, *_rank_key(c)),
        )
        for number, c in enumerate(models, 1):
            c.rank, c.colour = number, f"s{colours % 10}"
            colours += 1
        ordered += models + sorted((c for c in group if c.baseline), key=_rank_key)
    for index, c in enumerate(ordered):
        c.index = index
    return ordered


def _comparison(pairs: Sequence[Pair], a: Contender, b: Contender) -> PairComparison | None:
    """A's comparison with B (A's wins in `only_a`), whichever order the pair was built in."""
    for pair in pairs:
        if pair.a is a and pair.b is b:
            return pair.comparison
        if pair.a is b and pair.b is a:
            m = pair.comparison
            return replace(m, only_a=m.only_b, only_b=m.only_a)
    return None


def _standing(comparison: PairComparison | None) -> str:
    if comparison is None or comparison.shared == 0:
        return "n/a"
    if comparison.p_value >= SIGNIFICANCE or comparison.only_a == comparison.only_b:
        return "tied"
    return "behind" if comparison.only_a > comparison.only_b else "ahead"


def verdicts(contenders: Sequence[Contender], pairs: Sequence[Pair]) -> list[Verdict]:
    """One verdict per suite that has a model other than the references; sets `standing`."""
    found = []
    for suite in sorted({c.run.suite_path for c in contenders}):
        group = [c for c in contenders if c.run.suite_path == suite]
        models = [c for c in group if not c.baseline]
        if not models:
            continue
        best, most = models[0], max(c.case_count for c in group)
        best.standing = "best"
        for c in group:
            if c is not best:
                c.vs_best = _comparison(pairs, best, c)
                c.standing = _standing(c.vs_best)
        references = [c for c in group if c.baseline]
        reference = references[0] if references else None
        partial = [c for c in models if c.case_count < most]
        top = [c for c in models if c.standing in ("best", "tied") and c not in partial]
        near_chance = []
        if reference is not None:
            for c in models:
                if _standing(_comparison(pairs, reference, c)) != "ahead":
                    near_chance.append(c)
        priced = [c for c in top if c.stats.get("cost_per_correct") is not None]
        cheapest = min(priced, key=lambda c: c.stats["cost_per_correct"]) if priced else None
        found.append(
            Verdict(
                suite=suite,
                cases=most,
                best=best,
                top=top,
                behind=[c for c in models if c.standing == "behind"],
                ahead=[c for c in models if c.standing == "ahead"],
                partial=partial,
                reference=reference,
                near_chance=near_chance,
                cheapest=cheapest if len(top) > 1 else None,
            )
        )
    return found


def prompt_matrices(contenders: Sequence[Contender], pairs: Sequence[Pair]) -> list[PromptMatrix]:
    """Per suite where some model was asked with more than one prompt: the model x prompt
    table, each model's best prompt, and McNemar's test between prompts of the same model."""
    found = []
    for suite in sorted({c.run.suite_path for c in contenders}):
        group = [c for c in contenders if c.run.suite_path == suite and not c.baseline]
        prompts_of: dict[str, list[str]] = {}
        for c in group:
            prompts_of.setdefault(c.model, []).append(c.prompt)
        if not any(len(set(p)) > 1 for p in prompts_of.values()):
            continue
        most = max(c.case_count for c in group)
        best: dict[str, Contender] = {}
        for c in sorted(group, key=lambda c: (c.case_count < most, *_rank_key(c))):
            best.setdefault(c.model, c)
        same_model = [
            p
            for p in pairs
            if p.a.model == p.b.model and p.a.prompt != p.b.prompt and p.a.run.suite_path == suite
        ]
        found.append(
            PromptMatrix(
                suite=suite,
                models=list(dict.fromkeys(c.model for c in group)),
                prompts=sorted({c.prompt for c in group}),
                cells={(c.model, c.prompt): c for c in group},
                best=best,
                pairs=same_model,
            )
        )
    return found


def _hardest(cases: Sequence[CaseView]) -> list[CaseView]:
    failing = [c for c in cases if c.failed_by]
    failing.sort(key=lambda c: (-len(c.failed_by) / c.judged, -len(c.failed_by), c.app, c.case_id))
    return failing[:HARDEST_SHOWN]


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "\u2026"


def _accuracy_chart(contenders: Sequence[Contender]) -> Chart | None:
    if not contenders:
        return None
    left, plot, step, top = 300, 420, 24, 24
    bars = []
    for i, c in enumerate(contenders):
        acc = c.stats["accuracy"] or 0.0
        low, high = c.stats["accuracy_ci"] or (0.0, 0.0)
        interval = (
            f"  ({numbers.pct(low, 0)}\u2013{numbers.pct(high, 0)})" if c.stats["cases"] else ""
        )
        bars.append(
            Bar(
                y=top + i * step,
                width=plot * acc,
                css=c.colour,
                label=_short(c.label),
                value=numbers.pct(c.stats["accuracy"]) + interval,
                low=left + plot * low,
                high=left + plot * high,
            )
        )
    marks = []
    suites = {c.run.suite_path for c in contenders}
    references = [c for c in contenders if c.baseline and c.stats["accuracy"] is not None]
    if references and len(suites) == 1:
        best = max(c.stats["accuracy"] for c in references)
        marks.append((left + plot * best, f"best reference {numbers.pct(best)}"))
    return Chart(
        width=left + plot + 150,
        height=top + 20 + len(bars) * step,
        left=left,
        plot=plot,
        bars=bars,
        marks=marks,
    )


def _app_chart(contenders: Sequence[Contender], apps: Sequence[str]) -> Chart | None:
    if not contenders or not apps:
        return None
    left, plot, step, gap = 300, 420, 14, 22
    bars: list[Bar] = []
    groups: list[tuple[float, str]] = []
    y = 10.0
    for app in apps:
        groups.append((y + 11, _short(app)))
        y += gap
        for c in contenders:
            stats = c.apps.get(app)
            if stats is None:
                continue
            acc = stats["accuracy"]
            bars.append(
                Bar(
                    y=y,
                    width=plot * (acc or 0.0),
                    css=c.colour,
                    label=_short(c.label),
                    value=numbers.pct(acc),
                )
            )
            y += step
        y += 6
    return Chart(
        width=left + plot + 70, height=int(y) + 24, left=left, plot=plot, bars=bars, groups=groups
    )


async def gather(
    store: Store,
    run_ids: Sequence[int] | None = None,
    models: Sequence[str] | None = None,
    now: datetime | None = None,
) -> ReportData:
    """Everything the report and the exports show, read from `store`."""
    every = await store.runs()
    runs = choose_runs(every, store.path, run_ids, models)
    vdb_kind = SuiteKind.VULDETECTBENCH.value
    labels = _labels([r for r in runs if r.suite_kind != vdb_kind])
    labels |= _labels([r for r in runs if r.suite_kind == vdb_kind])
    contenders: list[Contender] = []
    vdb: list[Contender] = []
    for run in runs:
        rows = await store.run_results(run.id)
        for row in rows:  # the prompt is the run's: exports carry it on every result
            row["prompt_name"] = run.prompt_name
        if run.suite_kind == vdb_kind:
            vdb.append(_vdb_contender(len(vdb), run, labels[run.id], rows))
        else:
            originals = [r for r in rows if not isinstance(r.get("variant"), dict)]
            contender = _markdown_contender(len(contenders), run, labels[run.id], originals)
            contender.variant_rows = [r for r in rows if isinstance(r.get("variant"), dict)]
            rewrites = run.settings.get("rewrites")
            if contender.variant_rows or rewrites:
                rewrites = rewrites if isinstance(rewrites, dict) else {}
                contender.robustness = robustness(
                    rows, rewrites.get("dropped"), rewrites.get("kinds"), contender.repeats
                )
            contenders.append(contender)
    contenders = rank(contenders)
    apps = sorted({app for c in contenders for app in c.apps})
    cases = _case_views(contenders)
    real = [c for c in contenders if not c.baseline] or contenders
    real_rows = [row for c in real for row in c.rows]
    app_totals = {
        app: verdict_stats([r for c in real for r in c.rows if r["app"] == app]) for app in apps
    }
    pairs = _pairs(contenders, {c.key: c for c in cases})
    chosen = {r.id for r in runs}
    others = [
        r
        for r in every
        if r.id not in chosen and r.finished > 0 and (not models or r.model_name in models)
    ]
    common = _settings(contenders + vdb)
    return ReportData(
        database=str(store.path),
        generated_at=(now or datetime.now()).astimezone(),
        explicit_selection=bool(run_ids),
        contenders=contenders,
        vdb=vdb,
        apps=apps,
        cases=cases,
        overall={**verdict_stats(real_rows), **usage_stats(real_rows), "models": len(real)},
        app_totals=app_totals,
        pairs=pairs,
        hardest=_hardest(cases),
        vdb_columns=_vdb_columns(vdb),
        accuracy_chart=_accuracy_chart(contenders),
        app_chart=_app_chart(contenders, apps),
        verdicts=verdicts(contenders, pairs),
        common_settings=common,
        others=[] if run_ids else others,
        prompt_matrices=prompt_matrices(contenders, pairs),
    )


def _setting_text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return value if isinstance(value, str) else json.dumps(value)


def applicable_settings(run: RunRecord) -> list[tuple[str, str]]:
    """The run's recorded settings that mean something for it, as (name, text)."""
    skip: set[str] = set()
    if run.suite_kind == SuiteKind.VULDETECTBENCH.value:
        skip |= MARKDOWN_ONLY_SETTINGS
    else:
        skip |= VDB_ONLY_SETTINGS
    if run.model_name.startswith(BASELINE_PREFIX):
        skip |= ENDPOINT_SETTINGS
    return [
        (key, _setting_text(value))
        for key, value in sorted(run.settings.items())
        if key not in skip and value is not None
    ]


def _settings(contenders: Sequence[Contender]) -> list[tuple[str, str]]:
    """Settings every run shares (shown once); each contender keeps the rest in `settings`."""
    shown = {c.run.id: applicable_settings(c.run) for c in contenders}
    common: list[tuple[str, str]] = []
    if len(contenders) > 1:
        first, *rest = shown.values()
        common = [item for item in first if all(item in other for other in rest)]
    for c in contenders:
        c.settings = [item for item in shown[c.run.id] if item not in common]
    return common


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


# --- rendering ---------------------------------------------------------------------------


def _fmt_p(value: float) -> str:
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def _fmt_when(text: str | None) -> str:
    when = _parse_time(text)
    if when is None:
        return text or ""
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _bucket(value: float | None) -> str:
    return "qn" if value is None else f"q{min(4, int(value * 5))}"


def _csp_hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def _shown(value: Any) -> Any:
    """Every value the template prints: text with its control characters made visible (the
    page's own markup, passed as `Markup`, is left alone)."""
    if isinstance(value, str) and not hasattr(value, "__html__"):
        return inert(value)
    return value


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("secbench_tui.core.results", "templates"),
        autoescape=True,
        finalize=_shown,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=numbers.pct,
        pvalue=_fmt_p,
        money=numbers.money,
        ms=numbers.latency_ms,
        num=numbers.integer,
        compact=numbers.compact,
        when=_fmt_when,
        duration=numbers.duration,
        bucket=_bucket,
        vdb_crashes=vdb_crashes,
        narrowed=narrowed_by,
        suite=suite_name,
        excerpt=excerpt,
    )
    return env


REASONING_SHOWN = 4000  # characters of a model's reasoning in the report; the database has all


def excerpt(text: object, limit: int = REASONING_SHOWN) -> str:
    """Long text (a model's reasoning) cut for the page, saying how much was left out."""
    value = "" if text is None else str(text)
    if len(value) <= limit:
        return value
    return (
        f"{value[:limit]}\n… (first {limit:,} of {len(value):,} characters; the database keeps all)"
    )


@cache
def _asset(name: str) -> str:
    return (resources.files("secbench_tui.core.results") / "templates" / name).read_text("utf-8")


def render_html(data: ReportData) -> str:
    """The whole report as one HTML document."""
    script, style = _asset("report.js"), _asset("report.css")
    csp = (
        "default-src 'none'; "
        f"script-src '{_csp_hash(script)}'; style-src '{_csp_hash(style)}'; "
        "base-uri 'none'; form-action 'none'"
    )
    template = _environment().get_template("report.html.j2")
    return template.render(
        data=data,
        script=script,
        style=style,
        csp=csp,
        vdb_names=VDB_METRIC_NAMES,
        vdb_tasks=VDB_TASK_NAMES,
        alpha=SIGNIFICANCE,
    )


def report_path(directory: Path, now: datetime | None = None) -> Path:
    """`reports/report_YYYY-MM-DD_HH-MM-SS.html` in local time; a suffix if that file exists."""
    stamp = (now or datetime.now()).strftime("%Y-%m-%d_%H-%M-%S")
    path = directory / f"report_{stamp}.html"
    number = 2
    while path.exists():
        path = directory / f"report_{stamp}-{number}.html"
        number += 1
    return path


def write_text_atomic(path: Path, text: str) -> None:
    """Write through a temporary file, so a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
