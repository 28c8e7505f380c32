"""Errors become notifications, never a traceback on screen: the one place that decides how.

Textual ends the app and prints a traceback when an exception escapes a message handler, a
key binding's action or a timer. The app's screens and widgets mix in `Guarded`, which
catches the exception where the message is dispatched, so that widget keeps handling
messages, and `SecbenchApp._handle_exception` catches what gets past them (timers,
rendering). Either way the user sees a one-line notification; the traceback goes to
`errors.log` in the cache folder, which the notification names, for a bug report.

Both hooks are private Textual methods (`MessagePump._dispatch_message`,
`App._handle_exception`): Textual 8 has no public hook for an exception raised in a handler,
an action or a timer. `tests/tui/test_errors.py` pins their signatures, so an upgrade that
moves them fails a test instead of silently losing the guard. Everything else uses public
hooks.
"""

from __future__ import annotations

import traceback
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.worker import Worker, WorkerState

from secbench_tui.core.store.connection import StoreError
from secbench_tui.errors import UsageError

if TYPE_CHECKING:
    from textual.app import App
    from textual.message import Message

LOG_NAME = "errors.log"

# What each worker was doing, in the words a notification's title uses.
WORK_TITLES = {
    "load_catalog": "model list",
    "run_engine": "run",
    "load_runs": "reading the runs",
    "reload_results": "reading the results",
    "load_more": "reading more results",
    "follow_run": "following the run",
    "show_detail": "reading a result",
    "read_figures": "computing the runs' figures",
    "run_verify": "verifying labels",
}


def is_ours(error: BaseException) -> bool:
    """Errors this program raises on purpose already say what to do."""
    return isinstance(error, UsageError | StoreError) or type(error).__module__.startswith(
        "secbench_tui."
    )


def describe_error(error: BaseException) -> str:
    """A one-line message for a notification."""
    if is_ours(error):
        return str(error)
    return f"{type(error).__name__}: {error}"


def log_error(path: Path, error: BaseException) -> bool:
    """Append the traceback to `path`; False when it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as log:
            log.write(f"--- {datetime.now().isoformat(timespec='seconds')}\n")
            log.write("".join(traceback.format_exception(error)))
        return True
    except OSError:
        return False


def report_error(app: App[Any], error: BaseException, title: str = "unexpected error") -> None:
    """Show `error` as a notification; log the traceback of anything not raised on purpose."""
    message = describe_error(error)
    if not is_ours(error):
        errors = getattr(app, "errors", None)
        if isinstance(errors, list):
            errors.append(error)
        path = getattr(app, "error_log", None)
        if isinstance(path, Path) and log_error(path, error):
            message += f"\n(details in {path})"
    app.notify(message, title=title, severity="error", timeout=15)


class Guarded:
    """Mixed into a screen or widget: an exception in one of its handlers or actions is
    reported by `report_error` and the widget goes on handling its messages."""

    async def _dispatch_message(self, message: Message) -> None:
        try:
            await super()._dispatch_message(message)  # type: ignore[misc]
        except Exception as error:  # every error becomes a notification
            report_error(self.app, error)  # type: ignore[attr-defined]


class WorkReported:
    """Mixed into a screen or widget that runs workers: one that fails is reported by
    `report_error`, titled with what it was doing (`WORK_TITLES`). A worker's state changes
    go to the node that runs it only, so each such node mixes this in."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            doing = WORK_TITLES.get(event.worker.name, event.worker.name or "a task")
            report_error(self.app, event.worker.error, f"{doing} failed")  # type: ignore[attr-defined]
