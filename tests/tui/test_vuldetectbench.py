"""A VulDetectBench folder chosen instead of apps: tasks with counts, a run, scores shown."""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from textual.widgets import SelectionList

from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens.results import ResultsScreen
from secbench_tui.tui.screens.run import RunScreen
from tests.tui.conftest import SIZE, settle, wait_until

CODE = "int f(char *s) {\n    char buf[8];\n    strcpy(buf, s);\n    return 0;\n}"


def write_test_set(root: Path) -> Path:
    root.mkdir()
    rows = [
        {"code": CODE, "answer": a, "cwe": "120", "idx": str(i)}
        for i, a in enumerate(["YES", "NO", "YES"])
    ]
    (root / "task1_code.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return root


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
            "task1  (3 cases)"
        ]
        assert app.screen.query_one("#method-row").display
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        await settle(pilot)
        run = app.screen
        assert isinstance(run, RunScreen) and run.state == "completed"
        assert "task1" in str(run.query_one("#run-summary").render())
        await pilot.press("r")
        await settle(pilot)
        results = app.screen
        assert isinstance(results, ResultsScreen)
        console = Console(width=80, record=True, file=io.StringIO())
        console.print(results.query_one("#detail").content)
        text = console.export_text()
    with sqlite3.connect("results.db") as conn:
        actual, scores = conn.execute(
            "SELECT actual_result, scores FROM evaluations ORDER BY id LIMIT 1"
        ).fetchone()
    assert "extracted answer" in text and str(actual) in text
    for key in json.loads(scores):
        assert f'"{key}"' in text
    assert "strcpy(buf, s);" in text
