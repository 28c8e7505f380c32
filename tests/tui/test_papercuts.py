"""Small things the app got wrong: each test names what the user saw."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from textual.widgets import DataTable, Select, SelectionList, Static

from secbench_tui.config import Settings
from secbench_tui.core.models import RunStatus
from secbench_tui.core.results.summary import RunSummary
from secbench_tui.core.run.events import RunFinished
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens.confirm import ConfirmScreen
from secbench_tui.tui.screens.results import ResultsScreen
from secbench_tui.tui.screens.run import RunScreen
from secbench_tui.tui.screens.setup import SetupScreen
from secbench_tui.tui.tally import RunTally
from secbench_tui.tui.widgets.results_table import ResultsTable
from secbench_tui.tui.widgets.run_end import summary_text
from secbench_tui.tui.widgets.suite_picker import scan_suite
from tests.e2e.server import LoopbackServer
from tests.tui.conftest import SIZE, record_run, runs_stopping, settle, wait_for_state, wait_until


def test_a_run_where_nothing_was_answered_shows_no_accuracy() -> None:
    """It showed "accuracy 0.0% (95% CI 0.0-65.8%)" for four failed requests."""
    summary = RunSummary(
        model="m",
        cases=4,
        correct=0,
        wrong=0,
        unparsed=0,
        errors=4,
        accuracy=0.0,
        accuracy_ci=(0.0, 0.658),
    )
    text = summary_text(RunFinished(1, RunStatus.COMPLETED, None, summary)).plain
    assert "0.0%" not in text and "65.8%" not in text
    assert "accuracy n/a (no case was answered" in text
    answered = summary.model_copy(update={"correct": 1, "wrong": 2, "errors": 1, "accuracy": 0.25})
    finished = RunFinished(1, RunStatus.COMPLETED, None, answered)
    assert "accuracy 25.0%" in summary_text(finished).plain

    tally = RunTally()
    tally.counts["error"] = 4
    assert tally.accuracy is None
    tally.counts["wrong"] = 1
    assert tally.accuracy == 0.0


async def test_no_key_for_openrouter_says_so_instead_of_asking_then_refusing(
    make_settings: Callable[..., Settings],
) -> None:
    app = make_app(make_settings(model="openai/gpt-4o-mini"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)
        assert not any(isinstance(s, ConfirmScreen | RunScreen) for s in app.screen_stack)
        (note,) = [n for n in app._notifications if n.title == "no API key"]
        assert "OPENROUTER_API_KEY" in note.message and "baseline" in note.message


async def test_enter_on_a_run_lifts_a_model_filter_that_would_hide_it(
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
        screen.query_one("#filter-model", Select).value = "baseline/always-good"
        await settle(pilot)
        runs = screen.query_one("#runs-table", DataTable)
        runs.focus()
        runs.move_cursor(row=runs.get_row_index("1"), animate=False)  # always-bad's run
        await pilot.press("enter")
        await settle(pilot)
        table = screen.query_one(ResultsTable)
        assert screen.run_filter == 1 and table.row_count == table.total > 0
        assert screen.query_one("#filter-model", Select).value == Select.NULL


async def test_filters_that_match_nothing_together_say_so(
    make_settings: Callable[..., Settings],
) -> None:
    await record_run(make_settings(model="baseline/always-bad"))
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        screen.query_one("#filter-outcome", Select).value = "error"
        await settle(pilot)
        status = str(screen.query_one("#results-status", Static).render())
        # the way out comes first, where a narrow terminal cannot cut it
        assert status.startswith("no result matches these filters") and "Clear filters" in status
        assert "0 results" in status and "showing 0 of 0" not in status


async def test_the_detail_pane_never_shows_a_result_the_filter_removed(
    make_settings: Callable[..., Settings],
) -> None:
    await record_run(make_settings(model="baseline/always-bad"))
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        table = screen.query_one(ResultsTable)
        first = table.row_id(0)
        assert first is not None
        screen.query_one("#filter-outcome", Select).value = "error"  # nothing matches
        await settle(pilot)
        assert table.row_count == 0
        screen.show_detail(first)  # a read of the old row that lands late
        await settle(pilot)
        detail = str(screen.query_one("#detail", Static).render())
        assert "No results match" in detail


async def test_the_detail_and_current_case_panes_show_focus(
    make_settings: Callable[..., Settings],
) -> None:
    await record_run(make_settings(model="baseline/always-bad"))
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        pane = app.screen.query_one("#detail-pane")
        unfocused = pane.styles.border_top
        pane.focus()
        await pilot.pause()
        assert pane.has_focus and pane.styles.border_top != unfocused


async def test_the_stopping_notice_goes_when_the_run_has_stopped(
    remote_settings: Settings, clean_suite: Path, server: LoopbackServer
) -> None:
    server.hold_after(1)  # the case in flight stays there until the notice has been seen
    app = make_app(remote_settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_until(pilot, lambda: run.query_one("#run-table", DataTable).row_count >= 1)
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_until(pilot, lambda: any("stopping" in n.message for n in app._notifications))
        assert run.state == "stopping"
        await wait_for_state(lambda: runs_stopping(run), "the runs to take the stop")
        server.release()
        await wait_until(pilot, lambda: run.state == "stopped", limit=5000)
        await settle(pilot)
        assert not any("stopping" in n.message for n in app._notifications)


async def test_an_app_without_a_prompt_section_is_named_not_listed(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    broken = clean_suite / "notes"
    broken.mkdir()
    (broken / "SPEC.md").write_text("# Rules\nno prompt heading here\n")
    (broken / "one-01-good.md").write_text("# Code\n```\nx\n```\n# Expected\ngood\n")
    choice = scan_suite(clean_suite)
    assert [name for name, _ in choice.groups] == ["blog", "shop"]
    assert len(choice.unusable) == 1 and "notes" in choice.unusable[0]
    assert "# Prompt" in choice.unusable[0]

    app = make_app(make_settings(model="baseline/always-bad"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown = str(app.screen.query_one("#suite-kind", Static).render())
        assert "not listed" in shown and "notes" in shown
        groups = app.screen.query_one("#groups", SelectionList)
        assert groups.option_count == 2
        await pilot.press("ctrl+r")  # every listed app: the run starts and completes
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_until(pilot, lambda: not run.active)
        assert run.state == "completed"
    with sqlite3.connect("results.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 5


async def test_the_model_lists_failure_is_said_on_the_setup_screen_only(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """Pressing `r` at once, the failed GET /models said itself over the results table at
    80x24, hiding half its columns; it is said when the setup screen is back in view."""
    import socket
    import threading

    release = threading.Event()

    def hold_then_hang_up(listener: socket.socket) -> None:
        conn, _ = listener.accept()  # the model list's request, held until the test says
        with conn:
            release.wait(30)

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        base_url = f"http://127.0.0.1:{listener.getsockname()[1]}/api/v1"
        server = threading.Thread(target=hold_then_hang_up, args=(listener,), daemon=True)
        server.start()
        await record_run(make_settings(model="baseline/always-bad"))
        app = make_app(make_settings(base_url=base_url), cache_dir=tmp_path / "cache")

        def offline() -> list[str]:
            return [n.message for n in app._notifications if n.title == "model list offline"]

        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("r")
            await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen))
            release.set()  # the connection closes without an answer: the list failed
            await settle(pilot)  # the model list's worker too
            assert offline() == []
            await pilot.press("escape")
            await wait_until(pilot, lambda: isinstance(app.screen, SetupScreen))
            await wait_until(pilot, lambda: bool(offline()))
            assert "failed" in offline()[0] and "a model id typed" in offline()[0]
        server.join(5)
