"""Snapshots of the main screens at a fixed terminal size (pytest-textual-snapshot).

Update them after a deliberate change with `python -m pytest tests/tui --snapshot-update`
and look at the SVGs in `__snapshots__/` before committing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from secbench_tui.config import Settings
from secbench_tui.tui import format as fmt
from secbench_tui.tui.app import make_app
from secbench_tui.tui.widgets.case_tables import CaseTable
from secbench_tui.tui.widgets.results_table import CASE_WIDTH, ResultsTable
from tests.tui.conftest import SIZE, record_run, search_palette, settle, wait_until


def _fitted(app: Any) -> bool:
    """Every case table shown is drawn at its width: the case column takes what a resize
    leaves, redrawn when the resize is handled, which comes a refresh after the layout (on a
    loaded machine, after the snapshot was taken: the compare grid's and the results' case
    ids cut to their app's name)."""
    cases = all(
        table.case_width == table._fit()
        for table in app.screen.query(CaseTable)
        if table.display and table.items and table.size.width
    )
    results = all(
        table.case_width == fmt.fitting(table.size.width, table._others, CASE_WIDTH)
        for table in app.screen.query(ResultsTable)
        if table.display and table._rows and table.size.width
    )
    return cases and results


async def _still(pilot: Pilot[Any]) -> None:
    """The same frame before and after a refresh of the screen: what a resize schedules
    after the refresh (the results screen draws its runs again at the width it then has) is
    done. Bounded: a screen that never stops changing is left to the comparison."""
    before = pilot.app.export_screenshot()
    for _ in range(50):
        await pilot.app.screen.wait_for_refresh()
        await pilot.pause()
        after = pilot.app.export_screenshot()
        if after == before:
            return
        before = after


async def steady(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await wait_until(pilot, lambda: _fitted(pilot.app))
    for screen in pilot.app.screen_stack:
        for field in screen.query(Input):
            field.cursor_blink = False
    pilot.app.clear_notifications()
    await pilot.pause()
    await _still(pilot)


async def fixed_dates() -> None:
    with sqlite3.connect("results.db") as conn:
        conn.execute(
            "UPDATE runs SET started_at='2025-05-01T09:30:00.000Z',"
            " finished_at='2025-05-01T09:31:00.000Z'"
        )


def test_setup_screen(
    snap_compare: Any, make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(make_settings(model="baseline/random", apps=["shop"]), offline_catalog=True)
    assert snap_compare(app, terminal_size=SIZE, run_before=steady)


def test_run_screen_after_a_run(
    snap_compare: Any, make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    # the clock stands still: elapsed and ETA read the same on every machine
    app = make_app(
        make_settings(model="baseline/always-good"), offline_catalog=True, clock=lambda: 0.0
    )

    async def run(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "RunScreen")
        await steady(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run)


def test_results_screen(
    snap_compare: Any, make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    import asyncio

    asyncio.run(record_run(make_settings(model="baseline/always-bad")))
    asyncio.run(record_run(make_settings(model="baseline/always-good")))
    asyncio.run(fixed_dates())
    app = make_app(make_settings(), offline_catalog=True)

    async def browse(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("r")
        await steady(pilot)
        await pilot.press("down")
        await steady(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=browse)


def test_help_screen(
    snap_compare: Any, make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(make_settings(model="baseline/random"), offline_catalog=True)

    async def help_(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await steady(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=help_)


def three_runs(make_settings: Callable[..., Settings]) -> None:
    import asyncio

    for model in ("baseline/always-bad", "baseline/always-good", "baseline/always-bad"):
        asyncio.run(record_run(make_settings(model=model)))
    asyncio.run(fixed_dates())


async def results_then(pilot: Pilot[Any], *keys: str) -> None:
    """The results screen, runs 1 and 2 marked, then `keys`."""
    await settle(pilot)
    await pilot.press("r")
    await steady(pilot)
    runs = pilot.app.screen.query_one("#runs-table", DataTable)
    runs.focus()
    for run_id in (1, 2):
        runs.move_cursor(row=runs.get_row_index(str(run_id)), animate=False)
        await pilot.press("space")
    for key in keys:
        await pilot.press(key)
        await steady(pilot)


def test_compare_grid(
    snap_compare: Any, make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    three_runs(make_settings)
    app = make_app(make_settings(), offline_catalog=True)

    async def grid(pilot: Pilot[Any]) -> None:
        await results_then(pilot, "c", "down")

    assert snap_compare(app, terminal_size=SIZE, run_before=grid)


def test_answers_side_by_side(
    snap_compare: Any, make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    three_runs(make_settings)
    app = make_app(make_settings(), offline_catalog=True)

    async def answers(pilot: Pilot[Any]) -> None:
        await results_then(pilot, "c", "enter")

    assert snap_compare(app, terminal_size=SIZE, run_before=answers)


def test_diff_of_two_runs(
    snap_compare: Any, make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    three_runs(make_settings)
    app = make_app(make_settings(), offline_catalog=True)

    async def diff(pilot: Pilot[Any]) -> None:
        await results_then(pilot, "d")

    assert snap_compare(app, terminal_size=SIZE, run_before=diff)


def test_command_palette(
    snap_compare: Any, make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    three_runs(make_settings)
    app = make_app(make_settings(), offline_catalog=True)

    async def palette(pilot: Pilot[Any]) -> None:
        await results_then(pilot)
        await search_palette(pilot, "run")
        await steady(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=palette)


def test_results_screen_at_80x24(
    snap_compare: Any, make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    three_runs(make_settings)
    app = make_app(make_settings(), offline_catalog=True)

    async def browse(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("r")
        await steady(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=browse)


def test_run_screen_at_80x24(
    snap_compare: Any, make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(
        make_settings(model="baseline/always-good"), offline_catalog=True, clock=lambda: 0.0
    )

    async def run(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "RunScreen")
        await steady(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run)


def test_setup_screen_at_80x24(
    snap_compare: Any, make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(make_settings(model="baseline/random"), offline_catalog=True)
    assert snap_compare(app, terminal_size=(80, 24), run_before=steady)


def test_request_sent_in_a_results_detail(
    snap_compare: Any, make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    import asyncio

    asyncio.run(record_run(make_settings(model="baseline/always-bad")))
    asyncio.run(fixed_dates())
    app = make_app(make_settings(), offline_catalog=True)

    async def request(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("r")
        await steady(pilot)
        await pilot.press("down", "t")
        await steady(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=request)
