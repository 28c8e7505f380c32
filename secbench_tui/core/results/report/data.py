"""What the report is made of: one run's figures (`Contender`), a case with every model's
answers, pairs of models, a suite's verdict, charts, and the whole `ReportData`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from secbench_tui import __version__
from secbench_tui.core.lint.report import LeakCheck
from secbench_tui.core.results.chance import ChanceLevels
from secbench_tui.core.results.figures import AnswerFigures
from secbench_tui.core.results.findings import FindingSummary
from secbench_tui.core.results.fix_figures import FixSummary
from secbench_tui.core.results.metrics import (
    CaseRepeats,
    PairComparison,
    RepeatStats,
    UsageStats,
    VerdictStats,
)
from secbench_tui.core.results.pairwise import (
    PairTally,
    ScenarioComparison,
)
from secbench_tui.core.results.reasons import ReasonFigures
from secbench_tui.core.results.robustness import (
    Robustness,
)
from secbench_tui.core.results.summary import RunSummary
from secbench_tui.core.store.requests import ExportedRequest
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.runs import RunRecord

if TYPE_CHECKING:
    from secbench_tui.core.vuldetectbench.task_scores import TaskMetrics


BASELINE_PREFIX = "baseline/"
HARDEST_SHOWN = 20
DIFFERING_SHOWN = 30
LABEL_CHARS = 40
IMPORTED_SUITE = "suite unknown (imported)"  # runs imported from the original tool's database
SIGNIFICANCE = 0.05  # McNemar p below this: the two models differ by more than chance


Row = ResultRow


class ReportError(Exception):
    """Nothing to report, or a selection that matches nothing; the message says what to do."""


class AppStats(VerdictStats):
    """One app's verdict figures in a run, with how many distinct cases it has."""

    distinct_cases: int


class ContenderStats(VerdictStats, UsageStats):
    """A markdown run's figures: its verdicts and usage, how many distinct cases it answered,
    and what a correct answer cost (None: unknown, or some answers' cost was not reported)."""

    distinct_cases: int
    cost_per_correct: float | None


class VdbStats(UsageStats):
    """A VulDetectBench run's counts and usage (its task metrics are `SelectedRun.vdb`)."""

    cases: int
    unparsed: int
    errors: int


Stats = TypeVar("Stats", ContenderStats, VdbStats)


@dataclass
class SelectedRun(Generic[Stats]):
    """One selected run: a model on a suite, with every figure the report shows for it.

    A markdown run is a `Contender` (ranked, compared case by case); a VulDetectBench run is a
    `VdbContender` (its task metrics in `vdb`)."""

    index: int
    run: RunRecord
    label: str
    rows: list[Row]
    stats: Stats
    repeats: int = 1
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
    # the run's figures as every front end shows them (`figures.run_figures_of`)
    summary: RunSummary | None = None
    robustness: Robustness | None = None
    fixes: FixSummary | None = None  # --task fix: what verifying each fix found
    findings: FindingSummary | None = None  # --prove-findings: its exploits, as proven
    # the prompt as this report names it (`prompt_labels`); None: its name as stored
    prompt_label: str | None = None
    leak: LeakCheck | None = None  # the leak check the run recorded (None: it recorded none)

    @property
    def all_rows(self) -> list[Row]:
        """Originals, then variants: what exports carry."""
        return [*self.rows, *self.variant_rows]

    # right for the right reason: pairwise, reason and scenario summaries; the per-rule table
    figures: AnswerFigures = field(default_factory=lambda: AnswerFigures())
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
        """The evaluation prompt's name ("" for runs imported without one), with the start of
        its hash where the report shows one name for different words."""
        if self.prompt_label is not None:
            return self.prompt_label
        return self.run.prompt_name or ""

    @property
    def suite_label(self) -> str:
        """The suite folder and its parent: short enough for a table column."""
        return suite_name("/".join(Path(self.run.suite_path).parts[-2:]))

    @property
    def case_count(self) -> int:
        """Distinct cases answered (tries of one case count once)."""
        return len(self.by_case) if self.by_case else self.stats["cases"]

    @property
    def reused(self) -> int:
        return sum(1 for row in self.rows if row.get("reused_from"))

    @property
    def duration_s(self) -> float | None:
        start, end = parse_time(self.run.started_at), parse_time(self.run.finished_at)
        return (end - start).total_seconds() if start and end else None

    def first_tries(self) -> dict[str, Row]:
        return {key: rows[0] for key, rows in self.by_case.items()}


Contender = SelectedRun[ContenderStats]
VdbContender = SelectedRun[VdbStats]


class OverallStats(VerdictStats, UsageStats):
    """Every model's results together (references left out when there are models)."""

    models: int


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
    withheld: LeakCheck | None = None  # the suite's labels leak: no verdict is given


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
    vdb: list[VdbContender]
    apps: list[str]
    cases: list[CaseView]
    overall: OverallStats
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
    requests: dict[int, ExportedRequest] = field(default_factory=dict)
    request_texts: dict[str, str] = field(default_factory=dict)

    @property
    def prompts(self) -> list[str]:
        return sorted({c.prompt for c in self.runs if c.prompt})

    @property
    def shown_verdicts(self) -> list[Verdict]:
        """The verdicts given: none on a suite whose labels leak (`leaks` says why)."""
        return [v for v in self.verdicts if v.withheld is None]

    @property
    def chance_rows(self) -> list[tuple[str, ChanceLevels]]:
        """Each suite's chance levels, from its run with the most cases (every run of a suite
        asked the same cases, unless narrowed; the levels are the suite's, not a model's)."""
        rows = []
        for suite in self.suites:
            group = [c for c in self.contenders if c.run.suite_path == suite]
            widest = max(group, key=lambda c: c.case_count)
            chance = widest.figures.get("chance")
            if chance is not None:
                rows.append((suite, chance))
        return rows

    @property
    def leaks(self) -> list[tuple[str, LeakCheck]]:
        """Each suite whose labels a surface cue reads, with the check that found it."""
        return leaks_by_suite(self.contenders)

    @property
    def runs(self) -> list[Contender | VdbContender]:
        return sorted([*self.contenders, *self.vdb], key=lambda c: c.run.id)

    @property
    def suites(self) -> list[str]:
        return sorted({c.run.suite_path for c in self.contenders})

    @property
    def original_requests(self) -> list[int]:
        """Runs that sent the original security-bench evaluator's request."""
        return [c.run.id for c in self.runs if c.run.settings.request_style == "security-bench"]

    @property
    def with_findings(self) -> list[Contender]:
        return [c for c in self.contenders if c.findings is not None]

    @property
    def with_rewrites(self) -> list[Contender]:
        return [c for c in self.contenders if c.robustness is not None]

    @property
    def with_fixes(self) -> list[Contender]:
        """Runs of `--task fix`, the floor and ceiling baselines among them."""
        return [c for c in self.contenders if c.fixes is not None]

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


def leaks_by_suite(contenders: Sequence[Contender]) -> list[tuple[str, LeakCheck]]:
    """Each suite some run found leaky before it started, with that run's check."""
    found: dict[str, LeakCheck] = {}
    for c in contenders:
        if c.leak is not None and c.leak.leaky:
            found.setdefault(c.run.suite_path, c.leak)
    return sorted(found.items())


def suite_name(path: str) -> str:
    """A suite's path as shown; imported results do not say which suite they came from."""
    return path or IMPORTED_SUITE


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
