"""The HTML report: results read from the database, arranged for people choosing a model.

`gather()` reads the chosen runs from a `Store` (by default the latest run of each model on
each suite) and computes every figure through `core.metrics`; `render_html()` turns that into
one self-contained page with jinja2, autoescape on, so every string from a model, a case, a
model name or an app name is escaped. The page's own script and stylesheet are inline and
pinned by hashes in a Content-Security-Policy, so nothing else could run even if a string ever
slipped through unescaped. Nothing is re-run: any past run can be reported again.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from itertools import combinations
from pathlib import Path
from typing import Any

import jinja2

from secbench_tui import __version__
from secbench_tui.core.metrics import (
    CaseRepeats,
    PairComparison,
    case_repeats,
    compare_pair,
    confusion_matrix,
    repeat_stats,
    usage_stats,
    verdict_stats,
)
from secbench_tui.core.models import Outcome, Scored, SuiteKind
from secbench_tui.core.store import RunRecord, Store

BASELINE_PREFIX = "baseline/"
HARDEST_SHOWN = 20
DIFFERING_SHOWN = 30
LABEL_CHARS = 40
# VulDetectBench's documented metrics per task, shown as percentages in this order.
VDB_METRICS = ("accuracy", "f1", "se", "me", "mar", "mir", "urs", "ors")
VDB_METRIC_NAMES = {"accuracy": "Accuracy", "f1": "F1"}

Row = dict[str, Any]


class ReportError(Exception):
    """Nothing to report, or a selection that matches nothing; the message says what to do."""


# --- what the report is made of ----------------------------------------------------------


@dataclass
class Contender:
    """One selected run: a model on a suite, with every figure the report shows for it."""

    index: int
    run: RunRecord
    label: str
    rows: list[Row]
    repeats: int = 1
    stats: dict[str, Any] = field(default_factory=dict)
    apps: dict[str, dict[str, Any]] = field(default_factory=dict)
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    repeat: dict[str, Any] | None = None
    by_case: dict[str, list[Row]] = field(default_factory=dict)
    vdb: dict[str, Any] = field(default_factory=dict)

    @property
    def model(self) -> str:
        return self.run.model_name

    @property
    def baseline(self) -> bool:
        return self.model.startswith(BASELINE_PREFIX)

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


@dataclass
class Pair:
    a: Contender
    b: Contender
    comparison: PairComparison
    differing: list[CaseView]


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

    @property
    def ticks(self) -> list[tuple[float, str]]:
        return [(self.left + self.plot * q / 4, f"{q * 25}%") for q in range(5)]


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
    app_totals: dict[str, dict[str, Any]]
    pairs: list[Pair]
    hardest: list[CaseView]
    vdb_columns: list[tuple[str, str]]
    accuracy_chart: Chart | None
    app_chart: Chart | None
    tool_version: str = __version__

    @property
    def runs(self) -> list[Contender]:
        return sorted([*self.contenders, *self.vdb], key=lambda c: c.run.id)

    @property
    def suites(self) -> list[str]:
        return sorted({c.run.suite_path for c in self.contenders})

    @property
    def with_repeats(self) -> list[Contender]:
        return [c for c in self.contenders if c.repeat is not None]

    @property
    def vdb_tasks(self) -> list[tuple[str, int]]:
        """(task, number of metric columns) in column order, for the table's top header."""
        tasks: dict[str, int] = {}
        for task, _ in self.vdb_columns:
            tasks[task] = tasks.get(task, 0) + 1
        return list(tasks.items())


# --- reading the database ----------------------------------------------------------------


async def select_runs(
    store: Store, run_ids: Sequence[int] | None, models: Sequence[str] | None
) -> list[RunRecord]:
    """The runs asked for, or by default the latest run with results of each model and suite."""
    every = await store.runs()
    if run_ids:
        missing = sorted(set(run_ids) - {r.id for r in every})
        if missing:
            raise ReportError(
                f"--runs: no run {', '.join(map(str, missing))} in {store.path}; "
                f"runs there: {_id_ranges([r.id for r in every]) or 'none'}"
            )
    if models:
        known = sorted({r.model_name for r in every})
        unknown = [m for m in models if m not in known]
        if unknown:
            raise ReportError(
                f"--models: no runs of {', '.join(unknown)} in {store.path}; "
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
            f"--db {store.path}: no results to report"
            + (" for this selection" if run_ids or models else "")
            + "; run an evaluation first, e.g. secbench-tui --model baseline/random --no-ui"
        )
    if run_ids:
        return runs
    latest: dict[tuple[str, ...], RunRecord] = {}
    for run in runs:  # in id order: later runs replace earlier ones
        latest[_suite_identity(run)] = run
    return sorted(latest.values(), key=lambda r: r.id)


def _suite_identity(run: RunRecord) -> tuple[str, ...]:
    """What makes two runs the same benchmark for one model; VulDetectBench's prompting
    method and scoring change the figures as much as another suite would."""
    identity = (run.model_name, run.suite_kind, run.suite_path)
    if run.suite_kind == SuiteKind.VULDETECTBENCH.value:
        extra = (str(run.settings.get("method")), str(run.settings.get("vdb_scoring")))
        return identity + extra
    return identity


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
    return f"{row['case_id']}\0{row.get('case_hash') or ''}\0{row['expected_result']}"


def _labels(runs: Sequence[RunRecord]) -> dict[int, str]:
    """Model names, with the run id added where one model appears more than once."""
    seen: dict[str, int] = {}
    for run in runs:
        seen[run.model_name] = seen.get(run.model_name, 0) + 1
    return {
        r.id: r.model_name if seen[r.model_name] == 1 else f"{r.model_name} (run {r.id})"
        for r in runs
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
    contender.apps = {app: verdict_stats(app_rows) for app, app_rows in by_app.items()}
    contender.confusion = confusion_matrix(rows)
    contender.repeat = repeat_stats(rows, contender.repeats)
    return contender


def vuldetectbench_metrics(rows: Sequence[Row], scoring: str) -> dict[str, Any]:
    """Task metrics of a VulDetectBench run, by the benchmark's scorer when it is installed.

    Without it (an older checkout), each task shows the mean of every per-sample score.
    """
    samples = [
        (
            int(str(r["app"]).removeprefix("task") or 0),
            Scored(
                actual=r["actual_result"],
                outcome=Outcome(r["outcome"]),
                explanation=r["explanation"],
                scores=json.loads(r["scores"] or "{}"),
            ),
        )
        for r in rows
    ]
    try:
        from secbench_tui.core.vdb_scoring import aggregate_vuldetectbench
    except ImportError:
        return _mean_scores(samples)
    return dict(aggregate_vuldetectbench(samples, scoring))


def _mean_scores(samples: Iterable[tuple[int, Scored]]) -> dict[str, Any]:
    sums: dict[str, dict[str, list[float]]] = {}
    for task, scored in samples:
        for name, value in scored.scores.items():
            sums.setdefault(f"task{task}", {}).setdefault(name, []).append(float(value))
    return {
        task: {name: sum(values) / len(values) for name, values in metrics.items()}
        for task, metrics in sorted(sums.items())
    }


def _vdb_contender(index: int, run: RunRecord, label: str, rows: list[Row]) -> Contender:
    contender = Contender(index=index, run=run, label=label, rows=rows)
    contender.stats = {
        "cases": len(rows),
        "unparsed": sum(1 for r in rows if r["outcome"] == Outcome.UNPARSED.value),
        "errors": sum(1 for r in rows if r["outcome"] == Outcome.ERROR.value),
        **usage_stats(rows),
    }
    contender.vdb = vuldetectbench_metrics(rows, str(run.settings.get("vdb_scoring", "correct")))
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
    pairs = []
    for a, b in combinations(contenders, 2):
        if a.baseline and b.baseline:
            continue
        comparison = compare_pair(a.first_tries(), b.first_tries())
        if comparison.shared:
            differing = [cases[key] for key in comparison.differing[:DIFFERING_SHOWN]]
            pairs.append(Pair(a, b, comparison, differing))
    return pairs


def _hardest(cases: Sequence[CaseView]) -> list[CaseView]:
    failing = [c for c in cases if c.failed_by]
    failing.sort(key=lambda c: (-len(c.failed_by) / c.judged, -len(c.failed_by), c.app, c.case_id))
    return failing[:HARDEST_SHOWN]


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "\u2026"


def _accuracy_chart(contenders: Sequence[Contender]) -> Chart | None:
    if not contenders:
        return None
    left, plot, step = 300, 420, 24
    bars = []
    for i, c in enumerate(contenders):
        acc = c.stats["accuracy"] or 0.0
        low, high = c.stats["accuracy_ci"] or (0.0, 0.0)
        bars.append(
            Bar(
                y=10 + i * step,
                width=plot * acc,
                css=f"s{c.index % 10}" + (" ref" if c.baseline else ""),
                label=_short(c.label),
                value=_fmt_pct(c.stats["accuracy"]),
                low=left + plot * low,
                high=left + plot * high,
            )
        )
    return Chart(
        width=left + plot + 70, height=30 + len(bars) * step, left=left, plot=plot, bars=bars
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
                    css=f"s{c.index % 10}",
                    label=_short(c.label),
                    value=_fmt_pct(acc),
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
    runs = await select_runs(store, run_ids, models)
    vdb_kind = SuiteKind.VULDETECTBENCH.value
    labels = _labels([r for r in runs if r.suite_kind != vdb_kind])
    labels |= _labels([r for r in runs if r.suite_kind == vdb_kind])
    contenders: list[Contender] = []
    vdb: list[Contender] = []
    for run in runs:
        rows = await store.run_results(run.id)
        if run.suite_kind == vdb_kind:
            vdb.append(_vdb_contender(len(vdb), run, labels[run.id], rows))
        else:
            contenders.append(_markdown_contender(len(contenders), run, labels[run.id], rows))
    apps = sorted({app for c in contenders for app in c.apps})
    cases = _case_views(contenders)
    real = [c for c in contenders if not c.baseline] or contenders
    real_rows = [row for c in real for row in c.rows]
    app_totals = {
        app: verdict_stats([r for c in real for r in c.rows if r["app"] == app]) for app in apps
    }
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
        pairs=_pairs(contenders, {c.key: c for c in cases}),
        hardest=_hardest(cases),
        vdb_columns=_vdb_columns(vdb),
        accuracy_chart=_accuracy_chart(contenders),
        app_chart=_app_chart(contenders, apps),
    )


# --- rendering ---------------------------------------------------------------------------


def _fmt_pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value * 100:.{digits}f}%"


def _fmt_p(value: float) -> str:
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def _fmt_money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.4f}"


def _fmt_ms(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def _fmt_int(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def _bucket(value: float | None) -> str:
    return "qn" if value is None else f"q{min(4, int(value * 5))}"


def _csp_hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("secbench_tui.core", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=_fmt_pct,
        pvalue=_fmt_p,
        money=_fmt_money,
        ms=_fmt_ms,
        num=_fmt_int,
        bucket=_bucket,
        vdb_crashes=vdb_crashes,
    )
    return env


@cache
def _asset(name: str) -> str:
    return (resources.files("secbench_tui.core") / "templates" / name).read_text("utf-8")


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
        data=data, script=script, style=style, csp=csp, vdb_names=VDB_METRIC_NAMES
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
