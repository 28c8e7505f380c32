"""The results browser: runs, filters, text search, the detail pane, paging from SQLite."""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from textual.widgets import DataTable, Input, Select, Static

from scripts.harness.databases import fill_results
from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.host import Intervals
from secbench_tui.tui.screens.results import ResultsScreen
from secbench_tui.tui.widgets.results_table import PAGE, ResultsTable
from tests.e2e.server import LoopbackServer
from tests.tui.conftest import SIZE, record_run, settle, wait_until


def sql(query: str, *params: object) -> list[tuple[object, ...]]:
    with sqlite3.connect("results.db") as conn:
        return conn.execute(query, params).fetchall()


def shown_ids(screen: ResultsScreen) -> list[int]:
    table = screen.query_one(ResultsTable)
    return [int(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def open_results(pilot: object, app: object) -> ResultsScreen:
    """`r` from the setup screen."""
    await settle(pilot)  # type: ignore[arg-type]
    await pilot.press("r")  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]
    screen = app.screen  # type: ignore[attr-defined]
    assert isinstance(screen, ResultsScreen)
    return screen


async def two_runs(make_settings: Callable[..., Settings]) -> Settings:
    await record_run(make_settings(model="baseline/always-bad"))
    await record_run(make_settings(model="baseline/random"))
    return make_settings()


async def test_runs_then_results_with_filters(make_settings: Callable[..., Settings]) -> None:
    settings = await two_runs(make_settings)
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        runs = screen.query_one("#runs-table", DataTable)
        assert [str(runs.get_row_at(i)[2]) for i in range(runs.row_count)] == [
            "baseline/random",
            "baseline/always-bad",
        ]  # newest first
        assert shown_ids(screen) == [r[0] for r in sql("SELECT id FROM evaluations ORDER BY id")]

        screen.query_one("#filter-outcome", Select).value = "correct"
        await settle(pilot)
        expected = sql("SELECT id FROM evaluations WHERE outcome='correct' ORDER BY id")
        assert shown_ids(screen) == [r[0] for r in expected] and expected

        screen.query_one("#filter-model", Select).value = "baseline/always-bad"
        await settle(pilot)
        expected = sql(
            "SELECT id FROM evaluations WHERE outcome='correct'"
            " AND model_name='baseline/always-bad' ORDER BY id"
        )
        assert shown_ids(screen) == [r[0] for r in expected]
        shown = ",".join(str(i) for i in shown_ids(screen))
        verdicts = sql(f"SELECT expected_result FROM evaluations WHERE id IN ({shown})")
        assert verdicts and all(e == "bad" for (e,) in verdicts)

        screen.query_one("#filter-outcome", Select).clear()
        screen.query_one("#filter-model", Select).clear()
        screen.query_one("#filter-app", Select).value = "blog"
        await settle(pilot)
        expected = sql("SELECT id FROM evaluations WHERE app='blog' ORDER BY id")
        assert shown_ids(screen) == [r[0] for r in expected]
        status = str(screen.query_one("#results-status").render())
        assert f"showing {len(expected)} of {len(expected)}" in status and "app blog" in status


async def test_choosing_a_run_and_text_search(make_settings: Callable[..., Settings]) -> None:
    settings = await two_runs(make_settings)
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        runs = screen.query_one("#runs-table", DataTable)
        runs.focus()
        await pilot.press("down", "enter")  # the older run: always-bad
        await settle(pilot)
        first_run = sql("SELECT id FROM evaluations WHERE run_id=1 ORDER BY id")
        assert shown_ids(screen) == [r[0] for r in first_run]

        await pilot.press("a", "slash", *"list-orders")
        await settle(pilot)
        hits = sql("SELECT id FROM evaluations WHERE case_id LIKE '%list-orders%' ORDER BY id")
        assert shown_ids(screen) == [r[0] for r in hits] and len(hits) == 4
        search = screen.query_one("#search", Input)
        search.value = "no such text anywhere"
        await settle(pilot)
        assert shown_ids(screen) == []


async def test_detail_pane_shows_code_verdicts_and_reply(
    make_settings: Callable[..., Settings],
) -> None:
    settings = await two_runs(make_settings)
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        screen.query_one(ResultsTable).focus()
        await pilot.press("down")
        await settle(pilot)
        (case_id, expected, actual, raw) = sql(
            "SELECT case_id, expected_result, actual_result, raw_reply FROM evaluations"
            " ORDER BY id LIMIT 1 OFFSET 1"
        )[0]
        detail = screen.query_one("#detail", Static)
        console = Console(width=80, record=True, file=io.StringIO())
        console.print(detail.content)
        text = console.export_text()
        assert str(case_id) in text
        assert f"expected {expected}" in text and f"actual {actual}" in text
        assert "raw reply" in text and "answers without reading" in str(raw)
        assert "post.body = body" in text and "code" in text  # the case's code


async def test_a_large_database_is_read_a_page_at_a_time(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    total = await fill_results(Path("results.db"), 2 * PAGE + 50, runs=2)
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        table = screen.query_one(ResultsTable)
        assert table.row_count == PAGE and table.total == total
        table.focus()
        await pilot.press("end")
        await settle(pilot)
        assert table.row_count == 2 * PAGE
        await pilot.press("end")
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        assert table.row_count == total and table.exhausted
        assert shown_ids(screen) == [r[0] for r in sql("SELECT id FROM evaluations ORDER BY id")]


async def test_escape_leaves_a_field_first_then_the_screen(
    make_settings: Callable[..., Settings],
) -> None:
    settings = await two_runs(make_settings)
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        await pilot.press("slash", *"list")
        assert screen.query_one("#search", Input).has_focus
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and screen.query_one(ResultsTable).has_focus
        assert screen.query_one("#search", Input).value == "list"  # the filter stays
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "SetupScreen"


async def test_enter_on_a_run_drills_down_and_space_marks_only_from_the_runs(
    make_settings: Callable[..., Settings],
) -> None:
    settings = await two_runs(make_settings)
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)

        def shown() -> set[str]:
            return {b.binding.description for b in screen.active_bindings.values()}

        assert "Mark run" not in shown() and "All runs" not in shown()
        screen.query_one("#runs-table", DataTable).focus()
        await pilot.pause()
        assert "Mark run" in shown()
        await pilot.press("enter")  # the newest run
        await settle(pilot)
        table = screen.query_one(ResultsTable)
        assert table.has_focus and "All runs" in shown() and "Mark run" not in shown()
        assert shown_ids(screen) == [r[0] for r in sql("SELECT id FROM evaluations WHERE run_id=2")]
        await pilot.press("space")  # not on the runs table: marks nothing
        assert screen.marked == set()


async def test_newest_first_pages_backwards_through_every_result(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    total = await fill_results(Path("results.db"), PAGE + 30, runs=2)
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        await pilot.press("o")
        await settle(pilot)
        table = screen.query_one(ResultsTable)
        assert table.newest_first and table.row_count == PAGE
        await pilot.press("end")
        await settle(pilot)
        assert table.row_count == total and table.exhausted
        newest = [r[0] for r in sql("SELECT id FROM evaluations ORDER BY id DESC")]
        assert shown_ids(screen) == newest
        assert "newest first" in str(screen.query_one("#results-status").render())
        shown = {b.binding.description for b in screen.active_bindings.values()}
        assert "Oldest first" in shown and "Newest first" not in shown


async def test_the_results_follow_a_run_in_progress(
    remote_settings: Settings,
    clean_suite: Path,
    server: LoopbackServer,
) -> None:
    server.delay = 0.4
    server.hold_after(2)  # the third case waits until the first rows were seen: still running
    app = make_app(remote_settings, offline_catalog=True, intervals=Intervals(follow=0.1))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "RunScreen")
        run = app.screen
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen))
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        table = screen.query_one(ResultsTable)
        await wait_until(pilot, lambda: table.row_count >= 1, limit=3000)
        assert table.row_count < 5 and run.active  # type: ignore[attr-defined]
        server.release()
        await wait_until(pilot, lambda: table.row_count == 5, limit=5000)
        await settle(pilot)
        assert shown_ids(screen) == [r[0] for r in sql("SELECT id FROM evaluations ORDER BY id")]
        runs = screen.query_one("#runs-table", DataTable)
        await wait_until(pilot, lambda: str(runs.get_row_at(0)[6]) == "completed", limit=5000)
