"""One typed summary, rendered once: the headless lines and the app's are the same text."""

from __future__ import annotations

import json

from secbench_tui.core.models import RunStatus
from secbench_tui.core.results.lines import plain
from secbench_tui.core.results.metrics import summarize
from secbench_tui.core.results.summary import RunSummary, summary_lines, worst_status
from secbench_tui.core.run.events import RunFinished
from secbench_tui.headless import format_summary, write_summary_json
from secbench_tui.tui.widgets.run_end import summary_text


def _row(app: str, expected: str, outcome: str, cost: float | None = 0.01) -> dict[str, object]:
    return {
        "app": app,
        "case_id": f"{app}/{expected}-{outcome}",
        "expected_result": expected,
        "actual_result": expected if outcome == "correct" else None,
        "outcome": outcome,
        "suite_kind": "markdown",
        "prompt_tokens": 10,
        "completion_tokens": 2,
        "cost": cost,
        "latency_ms": 100.0,
    }


ROWS = [
    _row("shop", "bad", "correct"),
    _row("shop", "good", "unparsed", cost=None),
    _row("clinic", "bad", "error", cost=None),
    _row("clinic", "good", "correct"),
]


def _summary() -> RunSummary:
    return RunSummary.from_figures(
        {**summarize(ROWS), "run_id": 7, "model": "m/one", "prompt": "default"}
    )


def test_both_front_ends_show_the_same_lines_per_app_counts_and_a_partial_cost() -> None:
    summary = _summary()
    headless = format_summary(summary, RunStatus.COMPLETED, None)
    app = str(summary_text(RunFinished(7, RunStatus.COMPLETED, None, summary)))
    assert app == plain(summary_lines(summary, RunStatus.COMPLETED, None, wall=False))
    assert headless.rsplit("  wall ", 1)[0] == app  # the app shows the wall time above
    assert "shop: 50.0% of 2 (unparsed 1, errors 0)" in app
    assert "clinic: 50.0% of 2 (unparsed 0, errors 1)" in app
    # one answer came back without a price: the cost is a lower bound, and says so
    assert summary.cost_is_partial and "cost ≥ $0.0200 (1 answers had no price)" in app


def test_vuldetectbench_crash_note_reaches_the_app() -> None:
    summary = _summary().model_copy(
        update={
            "vuldetectbench": {"task1": {"accuracy": 0.5}},
            "vuldetectbench_counts": {"task1": {"n": 4, "crashes": 2}},
            "vdb_scoring": "library",
        },
    )
    app = str(summary_text(RunFinished(7, RunStatus.COMPLETED, None, summary)))
    assert "task1: accuracy 50.0%" in app and "crash" in app
    assert app in format_summary(summary, RunStatus.COMPLETED, None)


def test_summary_json_keeps_its_keys(tmp_path) -> None:
    path = tmp_path / "s.json"
    write_summary_json(path, RunFinished(7, RunStatus.STOPPED, "stopped by the user", _summary()))
    data = json.loads(path.read_text(encoding="utf-8"))
    legacy = {**summarize(ROWS), "run_id": 7, "model": "m/one", "prompt": "default"}
    legacy |= {"wall_seconds": 0.0, "status": "stopped", "message": "stopped by the user"}
    assert set(data) == set(legacy)
    assert data["status"] == "stopped" and data["accuracy_ci"] == list(legacy["accuracy_ci"])
    assert "vuldetectbench" not in data and "summary_error" not in data


def test_worst_status() -> None:
    assert worst_status(["completed", RunStatus.STOPPED]) is RunStatus.STOPPED
    assert worst_status([RunStatus.ABORTED, "stopped"]) is RunStatus.ABORTED
    assert RunStatus.of("from-the-future") is RunStatus.UNKNOWN
