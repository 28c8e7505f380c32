"""A VulDetectBench folder chosen instead of apps: tasks with counts, a run, scores shown."""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.widgets import DataTable, SelectionList

from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens.results import ResultsScreen
from secbench_tui.tui.screens.run import RunScreen
from secbench_tui.tui.widgets.results_table import ResultsTable
from tests.tui.conftest import SIZE, settle, wait_until

CODE = "int f(char *s) {\n    char buf[8];\n    strcpy(buf, s);\n    return 0;\n}"
SHARED_TEST_SET = Path("/work/shared/vuldetectbench/test")


def write_test_set(root: Path) -> Path:
    root.mkdir()
    rows = [
        {"code": CODE, "answer": a, "cwe": "120", "idx": str(i)}
        for i, a in enumerate(["YES", "NO", "YES"])
    ]
    (root / "task1_code.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return root


def detail_text(screen: ResultsScreen) -> str:
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(screen.query_one("#detail").content)
    return console.export_text()


def stored(result_id: int) -> dict[str, Any]:
    with sqlite3.connect("results.db") as conn:
        conn.row_factory = sqlite3.Row
        return dict(conn.execute("SELECT * FROM evaluations WHERE id=?", (result_id,)).fetchone())


def assert_sample_shown(text: str, row: dict[str, Any]) -> None:
    """The detail pane shows this sample's gold answer, extracted answer and every score."""
    assert "expected (gold answer)" in text and "extracted answer" in text
    flat = " ".join(text.split())
    assert " ".join(str(row["expected_result"]).split()) in flat
    assert " ".join(str(row["actual_result"] or "(none").split()) in flat
    for name, value in json.loads(row["scores"]).items():
        assert f"{name} {value:g}" in flat


async def test_a_test_set_folder_lists_tasks_and_runs_them(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    vdb = write_test_set(tmp_path / "vdb")
    app = make_app(
        make_settings(model="baseline/random", cases=vdb, tasks=[1]), offline_catalog=True
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        groups = app.screen.query_one("#groups", SelectionList)
        assert [str(groups.get_option_at_index(i).prompt) for i in range(groups.option_count)] == [
            "task1 (3)"
        ]
        assert app.screen.query_one("#method-row").display
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        await settle(pilot)
        run = app.screen
        assert isinstance(run, RunScreen) and run.state == "completed"
        summary = str(run.query_one("#run-summary").render())
        assert "task1" in summary and "cases 3" in summary
        await pilot.press("r")
        await settle(pilot)
        results = app.screen
        assert isinstance(results, ResultsScreen)
        runs = results.query_one("#runs-table", DataTable)
        assert str(runs.get_row_at(0)[4]) == "VDB task1"
        text = detail_text(results)
    assert_sample_shown(text, stored(1))
    assert "strcpy(buf, s);" in text


@pytest.mark.skipif(not SHARED_TEST_SET.is_dir(), reason="needs /work/shared/vuldetectbench")
async def test_every_task_of_the_real_test_set_is_browsable_sample_by_sample(
    make_settings: Callable[..., Settings],
) -> None:
    counts = {
        str(n): sum(1 for line in path.open("rb") if line.strip())
        for n in range(1, 6)
        if (path := SHARED_TEST_SET / f"task{n}_code.jsonl").is_file()
    }
    settings = make_settings(model="baseline/random", cases=SHARED_TEST_SET, limit=1)
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        groups = app.screen.query_one("#groups", SelectionList)
        labels = [str(groups.get_option_at_index(i).prompt) for i in range(groups.option_count)]
        assert labels == [f"task{n} ({c})" for n, c in counts.items()]
        status = str(app.screen.query_one("#setup-status").render())
        assert f"{len(counts)} of {sum(counts.values())} cases (limit 1 per task)" in status
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        await settle(pilot)
        run = app.screen
        assert isinstance(run, RunScreen) and run.state == "completed"
        summary = str(run.query_one("#run-summary").render())
        assert all(f"task{n}:" in summary for n in counts)
        await pilot.press("r")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        table = screen.query_one(ResultsTable)
        assert table.row_count == len(counts)
        for index in range(table.row_count):
            table.move_cursor(row=index, animate=False)
            await settle(pilot)
            result_id = table.row_id(index)
            assert result_id is not None
            assert_sample_shown(detail_text(screen), stored(result_id))


async def test_tasks_a_test_set_lacks_are_named_unless_none_were_asked_for(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    vdb = write_test_set(tmp_path / "vdb")  # task1 only
    for tasks, warned in (([1, 2, 3, 4, 5], False), ([1, 3], True)):
        app = make_app(
            make_settings(model="baseline/random", cases=vdb, tasks=tasks), offline_catalog=True
        )
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert app.screen.query_one("#groups", SelectionList).selected == ["1"]
            notes = [n.message for n in app._notifications if n.title == "not in this suite"]
            assert notes == ([f"--tasks: task3 not in {vdb}; it has task1"] if warned else [])
