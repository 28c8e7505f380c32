"""`e` writes the HTML report (selected runs, or the report's default) and shows its path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import DataTable

from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens.export import ExportScreen
from secbench_tui.tui.screens.results import ResultsScreen
from secbench_tui.tui.screens.run import RunScreen
from tests.tui.conftest import SIZE, record_run, settle, wait_until


async def test_export_marked_runs_from_the_results_screen(
    make_settings: Callable[..., Settings],
) -> None:
    await record_run(make_settings(model="baseline/always-bad"))
    await record_run(make_settings(model="baseline/always-good"))
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        screen.query_one("#runs-table", DataTable).focus()
        await pilot.press("down", "space")  # mark run 1 (the list is newest first)
        assert screen.export_selection() == [1]
        await pilot.press("e")
        await settle(pilot)
        export = app.screen
        assert isinstance(export, ExportScreen) and export.path is not None
        assert str(export.path) in str(export.query_one("#export-status").render())
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ResultsScreen)
    path = export.path
    assert path.parent == (Path("reports")).resolve() and path.suffix == ".html"
    html = path.read_text(encoding="utf-8")
    assert "baseline/always-bad" in html and "baseline/always-good" not in html


async def test_export_after_a_run_reports_that_run(
    make_settings: Callable[..., Settings],
) -> None:
    await record_run(make_settings(model="baseline/always-good"))
    app = make_app(make_settings(model="baseline/always-bad"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        await settle(pilot)
        run = app.screen
        assert isinstance(run, RunScreen) and run.state == "completed"
        await pilot.press("e")
        await settle(pilot)
        export = app.screen
        assert isinstance(export, ExportScreen) and export.run_ids == [run.run_id]
    assert export.path is not None
    html = export.path.read_text(encoding="utf-8")
    assert "baseline/always-bad" in html and "baseline/always-good" not in html


async def test_nothing_to_export_is_a_notification(
    make_settings: Callable[..., Settings],
) -> None:
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        export = app.screen
        assert isinstance(export, ExportScreen) and export.path is None
        assert "no results to report" in str(export.query_one("#export-status").render())
        assert any(n.title == "export failed" for n in app._notifications)
    assert not Path("reports").exists() or not any(Path("reports").iterdir())
