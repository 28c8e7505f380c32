"""A run's end, typed: `RunStatus`, the `RunSummary` figures, and the one renderer of them.

The engine builds a `RunSummary`; the store records the `RunStatus`; the headless runner prints
`summary_lines` plain, the terminal app styles the same lines by their tags, and
`--summary-json` writes the summary's `model_dump()` (the keys it always had; a figure that
applies only to some runs is left out when it is None). A figure added here reaches every
front end, or none.

The figures are pydantic models, checked as they are made: they are built from computed
figures by name (`RunSummary.from_figures`), where a misspelt or mistyped one is an error here
rather than a missing key in a user's script.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from secbench_tui.core import numbers
from secbench_tui.core.lint.report import LeakCheck
from secbench_tui.core.models import RunStatus
from secbench_tui.core.results.chance import STRATEGY_NAMES, ChanceLevels, Level
from secbench_tui.core.results.findings import FindingSummary
from secbench_tui.core.results.findings_text import findings_lines
from secbench_tui.core.results.fix_figures import FixSummary, fix_words
from secbench_tui.core.results.lines import Line, Segment, ci_text, text_line
from secbench_tui.core.results.robustness import Robustness, coverage_text
from secbench_tui.core.untrusted import inert_line


def worst_status(statuses: Sequence[RunStatus | str]) -> RunStatus:
    """aborted, then stopped, then completed: what several runs ended as together."""
    for status in (RunStatus.ABORTED, RunStatus.STOPPED):
        if status in statuses:
            return status
    return RunStatus.COMPLETED


class Figures(BaseModel):
    """Figures of a run, by name: an unknown name is a mistake in the program."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when first used


# A figure that applies only to some runs: `--summary-json` leaves it out when it is None.
WhenApplies = Field(exclude_if=lambda value: value is None)


class VerdictStats(Figures):
    """Figures over good/bad verdicts (metrics.verdict_stats): a run's, or one app's."""

    cases: int = 0
    correct: int = 0
    wrong: int = 0
    unparsed: int = 0
    errors: int = 0
    accuracy: float | None = None
    accuracy_ci: tuple[float, float] | None = None
    recall_bad: float | None = None
    recall_good: float | None = None
    balanced_accuracy: float | None = None
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    confusion: dict[str, int] = {}


class PairwiseSummary(Figures):
    """Over every (good, bad) pair of a scenario: rates are fractions of `pairs`."""

    pairs: int = 0
    p_c: float | None = None
    p_v: float | None = None
    p_b: float | None = None
    p_r: float | None = None
    p_c_rule: float | None = None
    unanswered: int = 0  # pairs with a case that got no verdict (never P-C)
    p_c_ci: tuple[float, float] | None = None  # bootstrap over scenarios


class ReasonSummary(Figures):
    """Over bad cases that name their rule; every rate None when the suite names none."""

    bad_cases: int = 0
    right_rule: float | None = None
    right_rule_and_line: float | None = None
    rule_precision: float | None = None
    right_rule_ci: tuple[float, float] | None = None  # Wilson, over cases
    right_rule_and_line_ci: tuple[float, float] | None = None
    right_rule_cases: int = 0  # answered bad with the right reason (the count behind the rate)
    right_rule_and_line_cases: int = 0
    rule_recall: float | None = None  # answered bad citing an acceptable rule, whatever else
    imprecise: int = 0  # answered bad citing an acceptable rule among too many others
    wrong_rule: int = 0  # answered bad citing no acceptable rule
    wrong_verdict: int = 0  # answered good, or not answered
    # by SPEC rule number: bad_cases, right, cited, cited_right, false_alarms (on good cases)
    per_rule: dict[str, dict[str, int]] = {}


class ScenarioSummary(Figures):
    count: int = 0
    solved: int = 0
    solved_ci: tuple[float, float] | None = None  # of the share solved, bootstrap


class BatchFigures(Figures):
    """A run asked through a batch API (`--batch`): its protocol, and what its tokens come to
    at the live price and at the batch price (the catalog's, or the documented half), beside
    the cost the provider reported (`RunSummary.cost`). None where the price is not known."""

    protocol: str
    live_price: float | None = None
    batch_price: float | None = None


class RunSummary(VerdictStats):
    """One run's figures. The outcome counts cover every case; accuracy and the verdict
    figures cover good/bad cases (VulDetectBench tasks have `vuldetectbench` metrics)."""

    run_id: int = 0
    model: str = ""
    prompt: str = ""
    reused: int = 0
    apps: dict[str, VerdictStats] = {}
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0  # part of completion_tokens
    cost: float | None = None  # what the answers cost, reused ones included
    spent: float | None = None  # what this run paid
    cost_missing: int = 0  # answers with no cost reported: then `cost` is a lower bound
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    wall_seconds: float = 0.0
    summary_error: Annotated[str | None, WhenApplies] = None
    vuldetectbench: Annotated[dict[str, dict[str, float]] | None, WhenApplies] = None
    vuldetectbench_counts: Annotated[dict[str, dict[str, int]] | None, WhenApplies] = None
    vdb_scoring: Annotated[str | None, WhenApplies] = None
    pairwise: Annotated[PairwiseSummary | None, WhenApplies] = None
    reason: Annotated[ReasonSummary | None, WhenApplies] = None
    scenarios: Annotated[ScenarioSummary | None, WhenApplies] = None
    # --rewrites: flips, robust accuracy, agreement
    robustness: Annotated[Robustness | None, WhenApplies] = None
    # --task fix: proven-fix rate, secure but broken, functional but insecure, change size
    fixes: Annotated[FixSummary | None, WhenApplies] = None
    # --prove-findings: proven-finding rate, exploit precision, P-C proven, refutations
    findings: Annotated[FindingSummary | None, WhenApplies] = None
    # Set when no case got an answer: the commonest error, and how many cases it ended
    no_answer: Annotated[str | None, WhenApplies] = None
    # each lead figure's chance levels (results.chance), for a run of markdown cases
    chance: Annotated[ChanceLevels | None, WhenApplies] = None
    # the suite's surface cues, checked before the run (core.lint.leaks)
    leak: Annotated[LeakCheck | None, WhenApplies] = None
    batch: Annotated[BatchFigures | None, WhenApplies] = None  # --batch

    @classmethod
    def from_figures(cls, figures: Mapping[str, Any]) -> RunSummary:
        """The summary from its figures by name (`metrics.summarize`, `figures.run_figures`,
        ...), each app's a `VerdictStats`; names that are not figures are left out."""
        known = cls.model_fields
        return cls.model_validate({key: value for key, value in figures.items() if key in known})

    @property
    def cost_is_partial(self) -> bool:
        return self.cost is not None and self.cost_missing > 0


# --- the one renderer ----------------------------------------------------------------------


def cost_text(summary: RunSummary) -> str:
    """`$0.0123`, `≥ $0.0123 (4 answers had no price)` when some answers reported none."""
    shown = numbers.money(summary.cost)
    if summary.cost_is_partial:
        shown = f"≥ {shown} ({summary.cost_missing} answers had no price)"
    if summary.cost is not None and summary.reused:
        shown += f" ({numbers.money(summary.spent or 0.0)} spent by this run, the rest reused)"
    return shown


def summary_lines(
    summary: RunSummary, status: RunStatus | str, message: str | None, wall: bool = True
) -> list[Line]:
    """The run's figures as lines; untrusted names are made inert here."""
    s = summary
    prompt = f", prompt {inert_line(s.prompt)}" if s.prompt else ""
    lines = [
        text_line(
            Segment(f"Run {s.run_id} {status}", "heading"), f": {inert_line(s.model)}{prompt}"
        )
    ]
    lines.extend(leak_lines(s.leak))
    if message:
        lines.append(text_line("  ", Segment(inert_line(message), "warning")))
    if s.summary_error:
        lines.append(text_line("  ", Segment(inert_line(s.summary_error), "warning")))
    lines.append(
        text_line(
            f"  cases {s.cases}  ",
            Segment(f"correct {s.correct}", "correct"),
            "  ",
            Segment(f"wrong {s.wrong}", "wrong"),
            "  ",
            Segment(f"unparsed {s.unparsed}", "unparsed"),
            "  ",
            Segment(f"errors {s.errors}", "error"),
            f"  reused {s.reused}" if s.reused else "",
        )
    )
    if s.cases and s.cases == s.errors:  # an accuracy of 0 would blame the model
        lines.append(
            text_line(f"  accuracy {numbers.EMPTY} (no case was answered: every request failed)")
        )
        if s.no_answer:
            lines.append(text_line("  ", Segment(inert_line(s.no_answer), "warning")))
    elif s.accuracy is not None:
        lines.extend(reason_lines(s))
        low, high = s.accuracy_ci or (None, None)
        lines.append(
            text_line(
                f"  accuracy {numbers.pct(s.accuracy)} (95% CI {numbers.pct(low)}"
                f"-{numbers.pct(high)})  balanced {numbers.pct(s.balanced_accuracy)}"
            )
        )
        if s.chance is not None:
            accuracy = chance_text(s.chance.accuracy)
            balanced = chance_text(s.chance.balanced_accuracy)
            lines.append(
                text_line(Segment(f"    chance: accuracy {accuracy}; balanced {balanced}", "dim"))
            )
        for app, stats in s.apps.items():
            lines.append(
                text_line(
                    f"    {inert_line(app)}: {numbers.pct(stats.accuracy)} of {stats.cases}"
                    f" (unparsed {stats.unparsed}, errors {stats.errors})"
                )
            )
    lines.extend(_vuldetectbench_lines(s))
    lines.extend(fix_lines(s.fixes))
    lines.extend(findings_lines(s.findings))
    lines.extend(robustness_lines(s.robustness))
    if s.reused:
        lines.append(
            text_line(
                Segment(
                    f"  reused {s.reused} results asked before with the same settings"
                    " (--force asks again)",
                    "dim",
                )
            )
        )
    reasoning = f" ({numbers.tokens(s.reasoning_tokens)} reasoning)" if s.reasoning_tokens else ""
    lines.append(
        text_line(
            f"  tokens {numbers.tokens(s.prompt_tokens)} in /"
            f" {numbers.tokens(s.completion_tokens)} out{reasoning}"
            f"  cost {cost_text(s)}" + (f"  wall {s.wall_seconds:.1f}s" if wall else "")
        )
    )
    if s.batch is not None:
        lines.append(text_line(Segment(batch_text(s.batch), "dim")))
    return lines


def batch_text(batch: BatchFigures) -> str:
    """The batch price beside the live one, for the tokens the run used."""
    money = numbers.money
    live = "unknown" if batch.live_price is None else f"~{money(batch.live_price)}"
    price = "unknown" if batch.batch_price is None else f"~{money(batch.batch_price)}"
    return (
        f"  asked in batches ({inert_line(batch.protocol)}): these tokens cost {price} at the "
        f"batch price, {live} at the live price; the cost above is what the provider reported"
    )


def lead_text(s: RunSummary) -> str:
    """`P-C 45.0% of 196 pairs  right reason 40.8% of 98 bad cases`: what a run leads with."""
    parts = []
    if s.pairwise is not None and s.pairwise.pairs:
        p = s.pairwise
        parts.append(f"P-C {numbers.pct(p.p_c)}{ci_text(p.p_c_ci)} of {p.pairs} pairs")
    if s.reason is not None:
        r = s.reason
        if r.bad_cases:
            parts.append(
                f"right reason {numbers.pct(r.right_rule)}{ci_text(r.right_rule_ci)}"
                f" of {r.bad_cases} bad cases"
            )
        else:
            parts.append(f"right reason {numbers.EMPTY} (no bad case of this run names a rule)")
    return "  ".join(parts)


def chance_text(level: Level) -> str:
    """`coin flip 25.0%, always bad 0.0%`: a figure's chance levels, by strategy."""
    return ", ".join(
        f"{STRATEGY_NAMES.get(name, name)} {numbers.pct(value)}" for name, value in level.items()
    )


def leak_lines(leak: LeakCheck | None) -> list[Line]:
    """When a surface cue gives the suite's labels away, what says so first: each cue and its
    balanced accuracy against the threshold."""
    if leak is None or not leak.leaky:
        return []
    return [
        text_line(
            "  ",
            Segment(
                f"labels leak: a surface cue reads this suite's labels above"
                f" {leak.threshold:.2f} balanced accuracy, so the figures may measure the cue,"
                " not review (secbench-tui --lint says more):",
                "warning",
            ),
        ),
        *(text_line("    ", Segment(inert_line(cue.text()), "warning")) for cue in leak.cues),
    ]


def reason_lines(s: RunSummary) -> list[Line]:
    """P-C and the right-reason rate first, then the chance levels of the lead figures, then
    the other pair, scenario and reason figures."""
    lead = lead_text(s)
    if not lead:
        return []
    lines = [text_line("  ", Segment(lead, "heading"))]
    p, r, chance = s.pairwise, s.reason, s.chance
    if chance is not None:
        shown = []
        if p is not None and p.pairs:
            shown.append(f"P-C {chance_text(chance.p_c)}")
        if r is not None and r.bad_cases:
            shown.append(f"right reason {chance_text(chance.right_reason)}")
        if shown:
            lines.append(text_line(Segment(f"    chance: {'; '.join(shown)}", "dim")))
    if p is not None and p.pairs:
        scenarios = s.scenarios or ScenarioSummary()
        solved_chance = (
            f" (chance: {chance_text(chance.scenarios_solved)})" if chance is not None else ""
        )
        lines.append(
            text_line(
                f"    pairs: P-V {numbers.pct(p.p_v)}  P-B {numbers.pct(p.p_b)}"
                f"  P-R {numbers.pct(p.p_r)}  P-C with the rule {numbers.pct(p.p_c_rule)}"
                + (f"  unanswered {p.unanswered}" if p.unanswered else "")
                + f"  scenarios solved {scenarios.solved} of {scenarios.count}",
                Segment(solved_chance, "dim"),
            )
        )
    if r is not None and r.bad_cases:
        lines.append(
            text_line(
                f"    reason: rule and line {numbers.pct(r.right_rule_and_line)}"
                f"  rule recall {numbers.pct(r.rule_recall)}"
                f"  rule precision {numbers.pct(r.rule_precision)}"
                f"  bad cases: right reason {r.right_rule_cases}, imprecise {r.imprecise},"
                f" wrong rule {r.wrong_rule}, wrong verdict {r.wrong_verdict}"
            )
        )
    return lines


def _rate(value: float | None, ci: tuple[float, float] | None = None) -> str:
    shown = numbers.pct(value)
    if value is not None and ci is not None:
        shown += f" ({numbers.pct(ci[0])}-{numbers.pct(ci[1])})"
    return shown


def fix_lines(f: FixSummary | None) -> list[Line]:
    """`--task fix`: its words (`fix_figures.fix_words`), styled by their tags."""
    return [tuple(Segment(text, tag) for text, tag in line) for line in fix_words(f)]


def robustness_lines(r: Robustness | None) -> list[Line]:
    """`--rewrites`: the noise floor, then invariance and sensitivity relations apart."""
    if r is None:
        return []
    lines = [
        text_line(
            Segment("  rewrites: ", "heading"),
            f"{r.variants} variants asked, {r.dropped} dropped by the equivalence gate"
            + (f", {r.unproven} unproven" if r.unproven else ""),
        ),
        text_line(
            f"    noise floor (same case asked again) {_rate(r.noise_flip_rate)}"
            f" of {r.noise_pairs};  invariance flips {_rate(r.flip_rate, r.flip_rate_ci)}"
            f"  robust accuracy {numbers.pct(r.robust_accuracy)}"
            f"  agreement {numbers.pct(r.agreement)} (over {coverage_text(r)}:"
            " those with an invariance variant)"
        ),
    ]
    for note in r.notes:
        lines.append(text_line(Segment(f"    {note}", "dim")))
    for kind in ("invariance", "sensitivity"):
        for name, f in r.by_relation.items():
            if f.kind != kind:
                continue
            excess = ""
            if f.excess is not None:
                excess = f"  excess {f.excess * 100:+.1f} pts (p={f.excess_p:.3g})"
            claim = ""
            if f.towards_claim is not None:
                claim = f"  towards the claim ({f.claim}) {numbers.pct(f.towards_claim)}"
            lines.append(
                text_line(
                    f"    {kind[:4]} {inert_line(name)}: flips {f.flips}/{f.pairs}"
                    f" {_rate(f.flip_rate, f.flip_rate_ci)}{excess}{claim}"
                    f"  robust {numbers.pct(f.robust_accuracy)}  P-C {numbers.pct(f.pc)}"
                    f" vs {numbers.pct(f.pc_original)} originals"
                    + (f"  dropped {f.dropped}" if f.dropped else "")
                    + (
                        f"  same rule cited {numbers.pct(f.rule_kept)} of {f.rule_pairs}"
                        if f.rule_pairs
                        else ""
                    )
                )
            )
    return lines


def _vuldetectbench_lines(s: RunSummary) -> list[Line]:
    if not s.vuldetectbench:
        return []
    from secbench_tui.core.vuldetectbench.task_scores import crash_note

    lines = [text_line(f"  VulDetectBench, {s.vdb_scoring or 'correct'} scoring:")]
    counts = s.vuldetectbench_counts or {}
    for task, metrics in s.vuldetectbench.items():
        shown = "  ".join(f"{k} {numbers.pct(v)}" for k, v in metrics.items())
        note = crash_note(counts.get(task, {}))
        lines.append(
            text_line(
                f"    {inert_line(task)}: {shown}",
                Segment(f"  ({note})", "warning") if note else "",
            )
        )
    return lines


def matrix_lines(ended: Sequence[tuple[RunStatus | str, str | None, RunSummary]]) -> list[Line]:
    """Several runs, one line each: model x prompt, accuracy, CI, balanced, cost, status."""
    lines = [
        text_line(
            Segment(
                "Matrix (accuracy, 95% CI, balanced accuracy; led by P-C and the right-reason"
                " rate where the suite has pairs and rules):",
                "heading",
            )
        )
    ]
    for status, message, s in ended:
        figure = numbers.EMPTY
        if s.accuracy is not None:
            low, high = s.accuracy_ci or (None, None)
            lead = _matrix_lead(s)
            figure = (
                f"{lead}{numbers.pct(s.accuracy)} ({numbers.pct(low)}-{numbers.pct(high)})"
                f"  balanced {numbers.pct(s.balanced_accuracy)}"
            )
        lines.append(
            text_line(
                f"  {inert_line(s.model)}  x  {inert_line(s.prompt)}: {figure}"
                f"  cost {cost_text(s)}  ",
                Segment(f"[run {s.run_id} {status}]", "status"),
            )
        )
        if message:
            lines.append(text_line(Segment(f"    {inert_line(message)}", "dim")))
    return lines


def _matrix_lead(s: RunSummary) -> str:
    """`P-C 45.0%  right reason 40.8%  ` before a matrix run's accuracy, where they apply."""
    parts = []
    if s.pairwise is not None and s.pairwise.pairs:
        parts.append(f"P-C {numbers.pct(s.pairwise.p_c)}")
    if s.reason is not None and s.reason.bad_cases:
        parts.append(f"right reason {numbers.pct(s.reason.right_rule)}")
    return "".join(f"{part}  " for part in parts) + ("accuracy " if parts else "")
