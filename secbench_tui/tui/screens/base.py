"""What every screen shares: failures become notifications (`tui.errors`), in one place."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from secbench_tui.tui.errors import Guarded, describe_error, report_error
from secbench_tui.tui.host import Host

__all__ = ["BaseScreen", "describe_error", "host_of"]

# What each worker was doing, in the words a notification's title uses.
WORK_TITLES = {
    "load_catalog": "model list",
    "run_engine": "run",
    "load_runs": "reading the runs",
    "reload_results": "reading the results",
    "load_more": "reading more results",
    "follow_run": "following the run",
    "show_detail": "reading a result",
    "score_pairs": "scoring the runs' pairs",
    "run_verify": "verifying labels",
}


def host_of(screen: Screen[Any]) -> Host:
    app = screen.app
    assert isinstance(app, Host), f"{type(app).__name__} is not a secbench-tui host"
    return app


class BaseScreen(Guarded, Screen[Any]):
    @property
    def secbench(self) -> Host:
        """The app, as far as a screen needs it (`tui.host`)."""
        return host_of(self)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            doing = WORK_TITLES.get(event.worker.name, event.worker.name or "a task")
            report_error(self.app, event.worker.error, f"{doing} failed")

    def export_selection(self) -> list[int]:
        """Run ids `e` should export from this screen; empty means the report's default."""
        return []
