"""What the exports write, as pydantic models: one `ExportedResult` per evaluation (a JSON
record, a CSV row, a JUnit test case), one `ExportedRun` per run, and the JSON `ExportDocument`.

The order of `ExportedResult`'s fields is the order of the CSV columns and of each JSON
record's keys: a column is declared once, here. Values come from the store's believable rows
(`store.rows.ResultRow`), so their types are the ones the store reads; a key that applies only
to some runs (a run's figures) is written when the run has it (`model_dump(exclude_unset=True)`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_serializer

from secbench_tui.core.lint.report import LeakCheck
from secbench_tui.core.models import JSONObject
from secbench_tui.core.results.chance import ChanceLevels
from secbench_tui.core.results.findings import FindingSummary
from secbench_tui.core.results.fix_figures import FixSummary
from secbench_tui.core.results.robustness import Robustness
from secbench_tui.core.results.summary import PairwiseSummary, ReasonSummary, ScenarioSummary


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when first used


class ExportedResult(Record):
    """One evaluation, as every export writes it. The spec's seven columns (`test_file`,
    `model_name`, `expected_result`, `actual_result`, `explanation`, `timestamp`, `run_id`)
    are among them under their names."""

    id: int | None = None
    timestamp: str | None = None
    run_id: int | None = None
    model_name: str | None = None
    prompt_name: str | None = None
    prompt_hash: str | None = None  # the prompt's words: one name may stand for different texts
    suite_kind: str | None = None
    app: str | None = None
    case_id: str | None = None
    test_file: str | None = None
    repeat: int | None = None
    expected_result: str | None = None
    actual_result: str | None = None
    outcome: str | None = None
    explanation: str | None = None
    # the reply
    raw_reply: str | None = None
    error: str | None = None
    http_status: int | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None  # part of completion_tokens
    reasoning: str | None = None  # the model's thinking, as its endpoint returned it
    # the asking
    cost: float | None = None
    latency_ms: float | None = None
    attempts: int | None = None
    served_model: str | None = None
    provider: str | None = None
    reused_from: int | None = None
    scores: dict[str, float] = {}
    notes: str | None = None
    # the reason: the rules a bad case breaks, the rules the reply cited with its quotes, and
    # whether they were right (None: not scored, e.g. a good case or a suite naming no rules)
    gold_rules: list[int] = []
    rules_cited: list[int] = []
    quotes: list[str] = []
    right_rule: bool | None = None
    right_line: bool | None = None
    schema_problem: str | None = None  # how the reply broke verdict schema 2
    scoring_version: int | None = None
    # --prove-findings: the exploits the reply offered, as sent ([{"rule", "exploit"}]), and
    # how proving them ended (proven, refuted, false exploit, no exploit; None: not proven)
    exploit: list[JSONObject] | None = None
    exploit_outcome: str | None = None
    exploit_reason: str | None = None
    # --rewrites: a variant's original case, relation, seed, code hash, proof and code, as the
    # file holds them (seed, code hash and proof are not checked on reading)
    variant_of: str | None = None
    relation: str | None = None
    rewrite_seed: Any = None
    code_hash: Any = None
    proven: Any = None
    variant_code: str | None = None
    # --task fix: the fixed code the reply gave, and what verifying it found (`fix_detail`:
    # the parameter set that shows why it is not proven, with the rows, as JSON)
    fixed_code: str | None = None
    fix_outcome: str | None = None
    fix_reason: str | None = None
    fix_secure: bool | None = None
    fix_functional: bool | None = None
    fix_twin: str | None = None
    fix_change_lines: int | None = None
    fix_detail: str | None = None
    # JSON only: the messages sent, by the hashes of the document's `request_texts`
    request: JSONObject | None = None


RESULT_COLUMNS: tuple[str, ...] = tuple(
    name for name in ExportedResult.model_fields if name != "request"
)  # the CSV's columns, in this order


class StandingAgainstBest(Record):
    """A run against the most accurate model of its suite (McNemar, on the cases shared)."""

    standing: str
    p_value: float | None
    shared: int


class RepeatFigures(Record):
    """Consistency and pass^N of a run that asked each case several times
    (`metrics.repeat_stats`)."""

    repeats: int
    cases: int
    incomplete: int
    pass_at_1: float | None
    pass_hat_n: float | None
    consistency: float | None
    always_same: float | None


class ExportedFigures(Record):
    """A run's figures in the JSON export: those of its kind of suite, each when it has it
    (a VulDetectBench run has counts, usage and task metrics; a markdown run verdict figures,
    an interval when one is defined, repeat figures, and the pairwise and reason figures)."""

    cases: int | None = None
    correct: int | None = None
    wrong: int | None = None
    unparsed: int | None = None
    errors: int | None = None
    accuracy: float | None = None
    recall_bad: float | None = None
    recall_good: float | None = None
    balanced_accuracy: float | None = None
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    confusion: dict[str, int] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost: float | None = None
    spent: float | None = None
    cost_missing: int | None = None
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    distinct_cases: int | None = None
    cost_per_correct: float | None = None
    accuracy_ci: list[float] | None = None
    repeats: RepeatFigures | None = None
    vuldetectbench: dict[str, dict[str, float]] | None = None
    pairwise: PairwiseSummary | None = None
    reason: ReasonSummary | None = None
    scenarios: ScenarioSummary | None = None
    chance: ChanceLevels | None = None
    leak: LeakCheck | None = None
    fixes: FixSummary | None = None  # --task fix
    robustness: Robustness | None = None  # --rewrites
    findings: FindingSummary | None = None


class ExportedRun(Record):
    """One run in the JSON export: what it was, how it stands, its settings and figures."""

    id: int
    model: str
    label: str
    baseline: bool
    rank: int | None
    vs_best: StandingAgainstBest | None
    suite_kind: str
    suite_path: str
    suite_hash: str | None
    prompt: str | None
    prompt_hash: str | None
    tool_version: str | None
    status: str
    message: str | None
    started_at: str
    finished_at: str | None
    total_cases: int
    settings: JSONObject  # as the run recorded them
    summary: ExportedFigures

    @field_serializer("summary")
    def _figures_it_has(self, summary: ExportedFigures) -> JSONObject:
        return summary.model_dump(exclude_unset=True)


class ExportDocument(Record):
    """The JSON export: the runs, one record per evaluation, and every text the results'
    requests are made of, once, by its SHA-256 (a message's content is its `parts` joined)."""

    tool: str = "secbench-tui"
    tool_version: str
    generated_at: str
    database: str
    runs: list[ExportedRun]
    results: list[ExportedResult]
    request_texts: dict[str, str]
