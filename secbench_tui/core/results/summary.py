"""A run's end, typed: `RunStatus`, the `RunSummary` figures, and the one renderer of them.

The engine builds a `RunSummary`; the store records the `RunStatus`; the headless runner prints
`summary_lines` plain, the terminal app styles the same lines by their tags, and
`--summary-json` writes `RunSummary.json_data()` (the keys it always had). A figure added
here reaches every front end, or none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from secbench_tui.core import numbers
from secbench_tui.core.models import RunStatus
from secbench_tui.core.untrusted import inert_line


def worst_status(statuses: Sequence[RunStatus | str]) -> RunStatus:
    """aborted, then stopped, then completed: what several runs ended as together."""
    for status in (RunStatus.ABORTED, RunStatus.STOPPED):
        if status in statuses:
            return status
    return RunStatus.COMPLETED


class VerdictStats(BaseModel):
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
    confusion: dict[str, int] = Field(default_factory=dict)


# Keys `--summary-json` has only when they apply.
_OPTIONAL_KEYS = (
    "summary_error",
    "vuldetectbench",
    "vuldetectbench_counts",
    "vdb_scoring",
    "no_answer",
)


class RunSummary(VerdictStats):
    """One run's figures. The outcome counts cover every case; accuracy and the verdict
    figures cover good/bad cases (VulDetectBench tasks have `vuldetectbench` metrics)."""

    run_id: int = 0
    model: str = ""
    prompt: str = ""
    reused: int = 0
    apps: dict[str, VerdictStats] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0  # part of completion_tokens
    cost: float | None = None  # what the answers cost, reused ones included
    spent: float | None = None  # what this run paid
    cost_missing: int = 0  # answers with no cost reported: then `cost` is a lower bound
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    wall_seconds: float = 0.0
    summary_error: str | None = None
    vuldetectbench: dict[str, dict[str, float]] | None = None
    vuldetectbench_counts: dict[str, dict[str, int]] | None = None
    vdb_scoring: str | None = None
    # Set when no case got an answer: the commonest error, and how many cases it ended
    no_answer: str | None = None

    @property
    def cost_is_partial(self) -> bool:
        return self.cost is not None and self.cost_missing > 0

    def json_data(self) -> dict[str, Any]:
        """The `--summary-json` layout: every figure, the optional ones when they apply."""
        data = self.model_dump(mode="json")
        for key in _OPTIONAL_KEYS:
            if data[key] is None:
                del data[key]
        return data


# --- the one renderer ----------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """Text and what it is (`tag`): the app styles by tag, the headless runner ignores it.
    Tags: heading, status, dim, warning, and the outcomes (correct, wrong, unparsed, error)."""

    text: str
    tag: str = ""


Line = tuple[Segment, ...]


def plain(lines: Sequence[Line]) -> str:
    return "\n".join("".join(s.text for s in line) for line in lines)


def _line(*parts: str | Segment) -> Line:
    return tuple(p if isinstance(p, Segment) else Segment(p) for p in parts)


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
        _line(Segment(f"Run {s.run_id} {status}", "heading"), f": {inert_line(s.model)}{prompt}")
    ]
    if message:
        lines.append(_line("  ", Segment(inert_line(message), "warning")))
    if s.summary_error:
        lines.append(_line("  ", Segment(inert_line(s.summary_error), "warning")))
    lines.append(
        _line(
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
            _line(f"  accuracy {numbers.EMPTY} (no case was answered: every request failed)")
        )
        if s.no_answer:
            lines.append(_line("  ", Segment(inert_line(s.no_answer), "warning")))
    elif s.accuracy is not None:
        low, high = s.accuracy_ci or (None, None)
        lines.append(
            _line(
                f"  accuracy {numbers.pct(s.accuracy)} (95% CI {numbers.pct(low)}"
                f"-{numbers.pct(high)})  balanced {numbers.pct(s.balanced_accuracy)}"
            )
        )
        for app, stats in s.apps.items():
            lines.append(
                _line(
                    f"    {inert_line(app)}: {numbers.pct(stats.accuracy)} of {stats.cases}"
                    f" (unparsed {stats.unparsed}, errors {stats.errors})"
                )
            )
    lines.extend(_vuldetectbench_lines(s))
    if s.reused:
        lines.append(
            _line(
                Segment(
                    f"  reused {s.reused} results asked before with the same settings"
                    " (--force asks again)",
                    "dim",
                )
            )
        )
    reasoning = f" ({s.reasoning_tokens} reasoning)" if s.reasoning_tokens else ""
    lines.append(
        _line(
            f"  tokens {s.prompt_tokens} in / {s.completion_tokens} out{reasoning}"
            f"  cost {cost_text(s)}" + (f"  wall {s.wall_seconds:.1f}s" if wall else "")
        )
    )
    return lines


def _vuldetectbench_lines(s: RunSummary) -> list[Line]:
    if not s.vuldetectbench:
        return []
    from secbench_tui.core.vuldetectbench.scoring import crash_note

    lines = [_line(f"  VulDetectBench, {s.vdb_scoring or 'correct'} scoring:")]
    counts = s.vuldetectbench_counts or {}
    for task, metrics in s.vuldetectbench.items():
        shown = "  ".join(f"{k} {numbers.pct(v)}" for k, v in metrics.items())
        note = crash_note(counts.get(task, {}))
        lines.append(
            _line(
                f"    {inert_line(task)}: {shown}",
                Segment(f"  ({note})", "warning") if note else "",
            )
        )
    return lines


def matrix_lines(ended: Sequence[tuple[RunStatus | str, str | None, RunSummary]]) -> list[Line]:
    """Several runs, one line each: model x prompt, accuracy, CI, balanced, cost, status."""
    lines = [_line(Segment("Matrix (accuracy, 95% CI, balanced accuracy):", "heading"))]
    for status, message, s in ended:
        figure = numbers.EMPTY
        if s.accuracy is not None:
            low, high = s.accuracy_ci or (None, None)
            figure = (
                f"{numbers.pct(s.accuracy)} ({numbers.pct(low)}-{numbers.pct(high)})"
                f"  balanced {numbers.pct(s.balanced_accuracy)}"
            )
        lines.append(
            _line(
                f"  {inert_line(s.model)}  x  {inert_line(s.prompt)}: {figure}"
                f"  cost {cost_text(s)}  ",
                Segment(f"[run {s.run_id} {status}]", "status"),
            )
        )
        if message:
            lines.append(_line(Segment(f"    {inert_line(message)}", "dim")))
    return lines
