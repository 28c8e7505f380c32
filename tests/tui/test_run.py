"""The run screen against the loopback OpenRouter server and a real SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import SecretStr
from textual.message import Message
from textual.widgets import DataTable, Static

from secbench_tui.config import Settings
from secbench_tui.core.run.events import Retrying
from secbench_tui.core.run.providers.base import RetryNotice
from secbench_tui.tui.app import make_app
from secbench_tui.tui.messages import RetryWaiting, RowsArrived
from secbench_tui.tui.screens.confirm import ConfirmScreen
from secbench_tui.tui.screens.run import RunScreen
from secbench_tui.tui.widgets.latest_cases import LatestCases
from tests.e2e.server import LoopbackServer, rate_limited, unauthorized
from tests.tui.conftest import (
    SIZE,
    record_run,
    runs_stopping,
    settle,
    wait_for_exit,
    wait_for_state,
    wait_until,
)


def db_rows(db: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT case_id, expected_result, outcome FROM evaluations ORDER BY case_index"
        ).fetchall()


def run_status(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT status FROM runs ORDER BY id")]


def table_cases(screen: RunScreen) -> list[str]:
    table = screen.query_one("#run-table", DataTable)
    return [str(table.get_row_at(i)[1]) for i in range(table.row_count)]


def labels_of(screen: RunScreen, case_ids: list[str]) -> list[str]:
    """What the run table shows for `case_ids`: labels that tell every case apart."""
    table = screen.query_one("#run-table", LatestCases)
    labels = [table.label(case_id) for case_id in case_ids]
    assert len(set(labels)) == len(set(case_ids))
    return labels


async def start(pilot: object, app: object) -> RunScreen:
    await pilot.press("ctrl+r")  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))  # type: ignore[arg-type,attr-defined]
    return app.screen  # type: ignore[attr-defined,no-any-return]


async def test_rows_arrive_as_cases_finish_and_are_stored(
    remote_settings: Settings, clean_suite: Path, server: LoopbackServer
) -> None:
    server.delay = 0.15
    seen: list[Message] = []
    app = make_app(remote_settings, offline_catalog=True)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        run = await start(pilot, app)
        table = run.query_one("#run-table", DataTable)
        await wait_until(pilot, lambda: table.row_count >= 1)
        assert run.state == "running" and table.row_count < 5  # rows come while it runs
        await settle(pilot)
        assert run.state == "completed"
        stored = [c for c, _, _ in db_rows(Path("results.db"))]
        assert table_cases(run) == labels_of(run, stored)
        assert len([m for m in seen if isinstance(m, RowsArrived)]) >= 2
        summary = str(run.query_one("#run-summary", Static).render())
        assert "completed" in summary and "accuracy" in summary
    rows = db_rows(Path("results.db"))
    assert len(rows) == 5
    # the server answers "good" to everything: good cases are correct, bad ones wrong
    assert all((outcome == "correct") == (expected == "good") for _, expected, outcome in rows)
    assert run_status(Path("results.db")) == ["completed"]


async def test_stop_midway_keeps_every_finished_case(
    remote_settings: Settings, clean_suite: Path, server: LoopbackServer
) -> None:
    server.hold_after(2)  # the third case stays in flight until the stop is asked
    app = make_app(remote_settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        run = await start(pilot, app)
        table = run.query_one("#run-table", DataTable)
        await wait_until(pilot, lambda: table.row_count >= 2)
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        notice = "the cases in flight finish first"
        await wait_until(pilot, lambda: any(notice in n.message for n in app._notifications))
        await wait_for_state(lambda: runs_stopping(run), "the runs to take the stop")
        server.release()  # the case in flight answers within its grace
        await settle(pilot)
        assert run.state == "stopped"
        shown = table_cases(run)
        stored = [c for c, _, _ in db_rows(Path("results.db"))]
        assert labels_of(run, stored) == shown and 2 <= len(stored) < 5
    assert run_status(Path("results.db")) == ["stopped"]


async def test_escape_then_no_keeps_running(
    remote_settings: Settings, clean_suite: Path, server: LoopbackServer
) -> None:
    server.hold_after(1)  # the run cannot end before the question is answered
    app = make_app(remote_settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        run = await start(pilot, app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is run)
        server.release()
        await settle(pilot)
        assert run.state == "completed"
    assert len(db_rows(Path("results.db"))) == 5


async def test_the_stop_question_goes_when_the_run_ends_unanswered(
    remote_settings: Settings, clean_suite: Path, server: LoopbackServer
) -> None:
    """A run that ends while "Stop the run?" is asked has nothing left to stop: the question
    goes, and the finished run is in view."""
    server.hold_after(1)
    app = make_app(remote_settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        run = await start(pilot, app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        server.release()  # the run goes on to its end under the question
        await wait_until(pilot, lambda: run.state == "completed")
        await wait_until(pilot, lambda: app.screen is run)
        await settle(pilot)
        assert run.state == "completed"  # not stopped: the question was not answered
    assert len(db_rows(Path("results.db"))) == 5


async def test_waiting_on_a_rate_limit_is_shown(
    remote_settings: Settings, clean_suite: Path, server: LoopbackServer
) -> None:
    server.script("# edit handler", rate_limited(retry_after=1.5))  # seen on a loaded machine
    seen: list[Message] = []
    app = make_app(remote_settings, offline_catalog=True)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        run = await start(pilot, app)
        line = run.query_one("#retry-line", Static)
        await wait_until(pilot, lambda: line.display)
        text = str(line.render())
        assert "waiting on rate limit" in text and "concurrency now 1" in text
        await settle(pilot)
        assert run.state == "completed" and not line.display
        assert "retries 1" in str(run.query_one("#tally", Static).render())
    waits = [m for m in seen if isinstance(m, RetryWaiting)]
    assert waits and waits[0].event.notice.rate_limited
    assert len(db_rows(Path("results.db"))) == 5


async def test_an_aborted_run_says_why_in_its_summary_uncovered(
    remote_settings: Settings, clean_suite: Path, server: LoopbackServer
) -> None:
    server.enqueue(unauthorized())
    app = make_app(remote_settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        run = await start(pilot, app)
        await settle(pilot)
        assert run.state == "aborted"
        summary = str(run.query_one("#run-summary", Static).render())
        assert "aborted" in summary and "401" in summary
        left = [(n.title, n.message) for n in app._notifications]
        assert not left, left  # none is left to cover the summary (nor comes after it)
    assert run_status(Path("results.db")) == ["aborted"]


async def test_a_run_that_cannot_start_says_why(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    app = make_app(make_settings(model="baseline/random"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.start_run(make_settings(model="baseline/random", cases=empty))
        await settle(pilot)
        run = app.screen
        assert isinstance(run, RunScreen) and run.state == "failed"
        assert any("no app folders" in n.message for n in app._notifications)
        await pilot.press("escape")  # back to setup
        await pilot.pause()
        assert not isinstance(app.screen, RunScreen)


async def test_quit_during_a_run_asks_then_stops_and_keeps_results(
    remote_settings: Settings, clean_suite: Path, server: LoopbackServer
) -> None:
    server.hold_after(1)  # the second case stays in flight until the quit is asked
    app = make_app(remote_settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        run = await start(pilot, app)
        table = run.query_one("#run-table", DataTable)
        await wait_until(pilot, lambda: table.row_count >= 1)
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for_state(lambda: runs_stopping(run), "the runs to take the stop")
        server.release()
        await wait_for_exit(app)
    stored = db_rows(Path("results.db"))
    assert 1 <= len(stored) < 5
    assert run_status(Path("results.db")) == ["stopped"]


async def test_ctrl_q_during_a_run_asks_too(
    remote_settings: Settings, clean_suite: Path, server: LoopbackServer
) -> None:
    server.hold_after(1)  # the second case stays in flight until the quit is asked
    app = make_app(remote_settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        run = await start(pilot, app)
        await wait_until(pilot, lambda: run.query_one("#run-table", DataTable).row_count >= 1)
        await pilot.press("ctrl+q")  # Textual's own quit key: it must not drop the run
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running and run.active
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for_state(lambda: runs_stopping(run), "the runs to take the stop")
        server.release()
        await wait_for_exit(app)
    assert run_status(Path("results.db")) == ["stopped"]
    assert 1 <= len(db_rows(Path("results.db"))) < 5


async def test_after_the_run_escape_goes_back_to_setup_and_the_footer_says_so(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(make_settings(model="baseline/always-good"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        await settle(pilot)
        run = app.screen
        assert isinstance(run, RunScreen) and run.state == "completed"
        shown = {b.binding.description for b in run.active_bindings.values()}
        assert "Back to setup" in shown and "Stop" not in shown
        summary = str(run.query_one("#run-summary", Static).render())
        good = sum(1 for _, expected, _ in db_rows(Path("results.db")) if expected == "good")
        assert f"cases 5  correct {good}  wrong {5 - good}  unparsed 0  errors 0" in summary
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "SetupScreen"


async def test_moving_up_the_table_shows_that_cases_answer(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(make_settings(model="baseline/always-bad"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        await settle(pilot)
        run = app.screen
        assert isinstance(run, RunScreen)
        pane = run.query_one("#last-explanation", Static)
        cases = [c for c, _, _ in db_rows(Path("results.db"))]
        assert f"last answer {cases[-1]}" in str(pane.render())
        run.query_one("#run-table", DataTable).focus()
        await pilot.press("up", "up")
        await pilot.pause()
        shown = str(pane.render())
        assert f"answer (highlighted row) {cases[-3]}" in shown
        assert "always-bad answers without reading" in shown


async def test_a_run_the_database_refuses_to_open_ends_and_escape_goes_back(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    settings = make_settings(model="baseline/always-good")
    await record_run(settings)  # a real database, then one that refuses new runs
    with sqlite3.connect(settings.db) as conn:
        conn.execute(
            "CREATE TRIGGER no_new_runs BEFORE INSERT ON runs "
            "BEGIN SELECT RAISE(ABORT, 'the database refuses new runs'); END"
        )
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        run = await start(pilot, app)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert run.state == "failed" and not app.run_active
        (note,) = [n for n in app._notifications if "refuses new runs" in n.message]
        assert note.title == "run failed" and str(app.error_log) in note.message
        assert "refuses new runs" in str(run.query_one("#run-summary", Static).render())
        await pilot.press("escape")  # back to setup: no stop to confirm, nothing runs
        await pilot.pause()
        assert type(app.screen).__name__ == "SetupScreen"


async def test_every_retry_is_counted_even_when_several_arrive_at_once(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(make_settings(model="baseline/always-good"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        run = await start(pilot, app)
        await settle(pilot)
        for attempt in (1, 2, 3):  # three cases hit the rate limit in the same moment
            notice = RetryNotice(
                case_id=f"app/case-{attempt}.md",
                attempt=1,
                wait_seconds=0.0,
                reason="429",
                status=429,
                rate_limited=True,
            )
            run.post_message(RetryWaiting(Retrying(run.run_id or 0, notice, limit=1)))
        await pilot.pause()
        assert run.tally.retries == 3
        assert "retries 3" in str(run.query_one("#tally", Static).render())


async def test_a_prompt_larger_than_the_models_context_is_refused_before_sending(
    make_settings: Callable[..., Settings], clean_suite: Path, tmp_path: Path
) -> None:
    """Issue 22: the app refuses what the headless runner refuses, naming both sizes."""
    from tests.e2e.server import MODELS

    prompt = tmp_path / "long.txt"
    prompt.write_text("Consider every rule. " * 400, encoding="utf-8")
    small = [{**MODELS[0], "context_length": 1000}]
    with LoopbackServer(models=small) as server:
        settings = make_settings(
            model="openai/gpt-4o-mini",
            base_url=server.base_url,
            api_key=SecretStr("sk-test"),
            prompts=[str(prompt)],
        )
        app = make_app(settings, cache_dir=tmp_path / "cache")
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            app.start_run(settings)
            await settle(pilot)
            run = app.screen
            assert isinstance(run, RunScreen) and run.state == "failed"
            said = " ".join(n.message for n in app._notifications)
            assert "1,000-token context of openai/gpt-4o-mini" in said and "--force" in said
        assert server.completions() == []


async def test_a_suite_with_no_usable_case_is_refused_and_no_run_recorded(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """The app's run shares the planner with --no-ui: a suite whose every case is skipped
    is said (folder, why, the fix) and nothing is recorded, not an empty 'completed' run."""
    suite = tmp_path / "bx"
    (suite / "a").mkdir(parents=True)
    (suite / "a" / "SPEC.md").write_text("# Prompt\nRules.\n", encoding="utf-8")
    (suite / "a" / "x-01-good.md").write_text(
        "# Code\n```sql\nSELECT 1;\n```\n# Expected\nmaybe\n", encoding="utf-8"
    )
    app = make_app(make_settings(model="baseline/random", cases=suite), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: any(n.severity == "error" for n in app._notifications))
        notes = [n.message for n in app._notifications if n.severity == "error"]
    assert any(f"no usable case in {suite} (1 skipped: " in n for n in notes), notes
    assert not Path("results.db").exists() or run_status(Path("results.db")) == []


async def test_the_app_closes_its_database_after_a_run_at_concurrency_four(
    make_settings: Callable[..., Settings],
) -> None:
    """The runs write through a store of their own, on their own event loop, closed there
    once they end; the screens' store is closed when the app exits (rows written together
    by the runs' loop once kept the database's thread up, and the app never exited on q)."""
    app = make_app(make_settings(model="baseline/random", concurrency=4), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        run = await start(pilot, app)
        await settle(pilot)
        assert run.state == "completed"
        lifecycle = run.engine.lifecycle  # the engine's thread's
        assert lifecycle is not None and lifecycle.store is not None
        runs_store = lifecycle.store
        store = await app.store()
        assert store is not runs_store and [r.status for r in await store.runs()] == ["completed"]
    # out of run_test: the app has unmounted, and closed its store whatever the run left
    for closed in (runs_store, store):
        with pytest.raises(ValueError):  # closed: aiosqlite refuses any further statement
            await closed.db.execute("SELECT 1")
