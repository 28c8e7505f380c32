"""Errors become notifications, never a traceback: in handlers, actions and timers alike.

Each test plants a fault in one place of the app (the planted function is the fault, not the
thing under test) and checks what the user gets: a notification naming the error and the
log file, the traceback in that file, and an app that goes on working from the keyboard.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Input, SelectionList

from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.host import Intervals
from secbench_tui.tui.screens import results as results_screen
from secbench_tui.tui.screens import run as run_screen
from secbench_tui.tui.screens.setup import SetupScreen
from secbench_tui.tui.widgets import suite_picker
from tests.tui.conftest import SIZE, record_run, settle, wait_until


def error_notes(app: Any) -> list[str]:
    return [n.message for n in app._notifications if n.severity == "error"]


async def test_an_error_in_an_event_handler_is_a_notification_and_the_widget_lives_on(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real_scan = suite_picker.scan_suite

    def scan_fails(root: Path) -> suite_picker.SuiteChoice:
        raise OSError(f"{root}: the disk is on fire")

    app = make_app(make_settings(model="baseline/random"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        field = app.screen.query_one("#cases-path", Input)
        field.focus()
        monkeypatch.setattr(suite_picker, "scan_suite", scan_fails)
        field.value = "elsewhere"
        await pilot.press("enter")  # Input.Submitted -> SuitePicker._path_submitted raises
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, SetupScreen)
        (note,) = error_notes(app)
        assert "OSError: elsewhere: the disk is on fire" in note and str(app.error_log) in note
        log = app.error_log.read_text(encoding="utf-8")
        assert "Traceback" in log and "scan_fails" in log and "the disk is on fire" in log
        assert len(app.errors) == 1

        # the picker still handles its messages: the same key now loads a real folder
        monkeypatch.setattr(suite_picker, "scan_suite", real_scan)
        other = tmp_path / "other"
        (other / "billing").mkdir(parents=True)
        (other / "billing" / "SPEC.md").write_text("# Prompt\nBilling rules\n")
        (other / "billing" / "one-good.md").write_text("x")
        field.value = str(other)
        await pilot.press("enter")
        await pilot.pause()
        groups = app.screen.query_one("#groups", SelectionList)
        assert [str(groups.get_option_at_index(i).prompt) for i in range(groups.option_count)] == [
            "billing (1)"
        ]
        await pilot.press("ctrl+q")
    assert app.return_code == 0


async def test_an_error_in_a_key_action_is_a_notification(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    await record_run(make_settings(model="baseline/always-bad"))

    def order_fails(self: Any, newest_first: bool) -> None:
        raise KeyError("no such order")

    monkeypatch.setattr(results_screen.ResultsScreen, "action_order", order_fails)
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("o")
        await pilot.pause()
        assert app.is_running
        (note,) = error_notes(app)
        assert note.startswith("KeyError: 'no such order'")
        table = app.screen.query_one("#results-table", DataTable)
        before = table.cursor_row
        await pilot.press("down")  # the keys still work
        await pilot.pause()
        assert table.cursor_row == before + 1


async def test_an_error_in_a_timer_is_a_notification(
    make_settings: Callable[..., Settings], clean_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def tick_fails(self: Any) -> None:
        raise ZeroDivisionError("the clock stopped")

    monkeypatch.setattr(run_screen.RunScreen, "_tick", tick_fails)
    app = make_app(
        make_settings(model="baseline/always-good"),
        offline_catalog=True,
        intervals=Intervals(tick=0.05),  # the run screen's clock, 20 times a second
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: bool(error_notes(app)))
        assert app.is_running and "ZeroDivisionError: the clock stopped" in error_notes(app)[0]
        screen = app.screen
        assert isinstance(screen, run_screen.RunScreen)
        await wait_until(pilot, lambda: screen.state == "completed")
        assert screen.query_one("#run-table", DataTable).row_count == 5
        # the clock mended before the app closes: a tick raising while it shuts down (after
        # its error handling has stopped) is raised by run_test, not shown
        monkeypatch.setattr(run_screen.RunScreen, "_tick", lambda self: None)


async def test_an_unusable_database_is_named_with_its_fix_on_every_screen(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    db = tmp_path / "no-such-folder" / "results.db"
    app = make_app(make_settings(model="baseline/random", db=db), offline_catalog=True)
    said: dict[str, str] = {}  # every notice said, kept: a notice on screen expires (5 s)
    notify = app.notify

    def keep(message: str, *args: Any, **kwargs: Any) -> None:
        said.setdefault(str(kwargs.get("title", "")), message)
        notify(message, *args, **kwargs)

    app.notify = keep  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:

        def titles() -> set[str]:
            return set(said)

        # each screen reads the database in a worker of its own, started when it mounts: wait
        # for what it says, not for the workers there happen to be at the moment of asking
        await wait_until(pilot, lambda: "database" in titles())  # the setup screen's
        await pilot.press("r")
        await wait_until(pilot, lambda: "reading the runs failed" in titles())
        await settle(pilot)
        notes = said
        assert "folder" in notes["database"] and str(db.parent) in notes["database"]
        assert notes["reading the runs failed"] == notes["database"]
        assert app.errors == []  # a known problem, said in words: not logged as a bug
        assert app.is_running


def test_the_private_hooks_the_guard_relies_on_are_there() -> None:
    """Textual has no public hook for a handler's exception; the two private ones `Guarded`
    and the app override must exist with the signature they are overridden with."""
    import inspect

    from textual.app import App
    from textual.message_pump import MessagePump

    assert list(inspect.signature(MessagePump._dispatch_message).parameters) == [
        "self",
        "message",
    ]
    assert list(inspect.signature(App._handle_exception).parameters) == ["self", "error"]
