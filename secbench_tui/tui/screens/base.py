"""What every screen shares: worker failures become notifications, in this one place."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from secbench_tui.core.store import StoreError
from secbench_tui.session import UsageError

if TYPE_CHECKING:
    from secbench_tui.tui.app import SecbenchApp


def describe_error(error: BaseException) -> str:
    """A one-line message for a notification: our own errors already say what to do."""
    if isinstance(error, UsageError | StoreError) or type(error).__module__.startswith(
        "secbench_tui."
    ):
        return str(error)
    return f"{type(error).__name__}: {error}"


class BaseScreen(Screen[Any]):
    @property
    def secbench(self) -> SecbenchApp:
        from secbench_tui.tui.app import SecbenchApp

        assert isinstance(self.app, SecbenchApp)
        return self.app

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            self.notify(
                describe_error(event.worker.error),
                title=f"{event.worker.name or 'task'} failed",
                severity="error",
                timeout=12,
            )

    def export_selection(self) -> list[int]:
        """Run ids `e` should export from this screen; empty means all runs."""
        return []
