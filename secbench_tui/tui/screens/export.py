"""Export: write the HTML report for the chosen runs (or the report's default) and say where.

The report is written by `secbench_tui.reporting.write_outputs`, the same function behind
`secbench-tui --report`, so the file is the same whichever front end wrote it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from secbench_tui.config import Settings
from secbench_tui.core.store.database import Store
from secbench_tui.core.untrusted import inert
from secbench_tui.tui.errors import Guarded, describe_error
from secbench_tui.tui.screens.base import host_of


async def write_report(store: Store, settings: Settings, run_ids: Sequence[int]) -> Path:
    """Write `reports/report_<time>.html`; an empty selection means the report's default."""
    from secbench_tui.reporting import write_outputs

    outputs = await write_outputs(
        store,
        report=True,
        export=None,
        out=None,
        runs=list(run_ids) or None,
        models=None,
        reports_dir=settings.reports_dir,
    )
    assert outputs.report is not None
    return outputs.report.resolve()


class ExportScreen(Guarded, ModalScreen[Path | None]):
    BINDINGS = [Binding("escape,enter,e", "close", "Close", id="export.close")]

    def __init__(self, settings: Settings, run_ids: Sequence[int]) -> None:
        super().__init__()
        self.settings = settings
        self.run_ids = list(run_ids)
        self.path: Path | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box") as box:
            box.border_title = "Export"
            yield Static(f"Writing the HTML report of {self.which}…", id="export-status")

    @property
    def which(self) -> str:
        if self.run_ids:
            return ("run " if len(self.run_ids) == 1 else "runs ") + ", ".join(
                str(r) for r in self.run_ids
            )
        return "the latest run of each model"

    def on_mount(self) -> None:
        self.export()

    @work(exclusive=True, group="export", exit_on_error=False)
    async def export(self) -> Path:
        return await write_report(await host_of(self).store(), self.settings, self.run_ids)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        status = self.query_one("#export-status", Static)
        if event.state is WorkerState.SUCCESS and isinstance(event.worker.result, Path):
            self.path = event.worker.result
            if hasattr(self.app, "last_report"):  # the palette's "Copy report path"
                self.app.last_report = self.path
            status.update(
                Text.assemble(
                    (f"Report of {self.which} written:\n", "bold green"),
                    (inert(self.path), "bold"),
                    ("\n\nOpen it in a browser. Enter closes.", "dim"),
                )
            )
            self.notify(f"report written: {self.path}", timeout=8)
        elif event.state is WorkerState.ERROR and event.worker.error is not None:
            message = describe_error(event.worker.error)
            status.update(
                Text.assemble(
                    ("No report written:\n", "bold red"),
                    inert(message),
                    ("\n\nEnter closes.", "dim"),
                )
            )
            self.notify(message, title="export failed", severity="error", timeout=12)

    def action_close(self) -> None:
        self.dismiss(self.path)
