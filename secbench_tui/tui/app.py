"""The terminal app: setup -> run -> results, with export and help on top.

`make_app(settings)` builds it (the tests use the same factory); `run_app(settings)` runs it
and returns the exit code. The app owns one `Store` for the session, opened on first use, so
the results screen can browse while a run writes. Every way out (`q`, Textual's own `ctrl+q`)
asks first while a run is active, and errors become notifications (`tui.errors`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.app import App
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen

from secbench_tui.config import Settings
from secbench_tui.core import catalog
from secbench_tui.core.store import Store
from secbench_tui.core.untrusted import inert, inert_line
from secbench_tui.tui.errors import LOG_NAME, Guarded, report_error
from secbench_tui.tui.screens.base import BaseScreen
from secbench_tui.tui.screens.confirm import ConfirmScreen
from secbench_tui.tui.screens.export import ExportScreen
from secbench_tui.tui.screens.help import HelpScreen
from secbench_tui.tui.screens.results import ResultsScreen
from secbench_tui.tui.screens.run import RunScreen
from secbench_tui.tui.screens.setup import SetupScreen


class SecbenchApp(Guarded, App[int]):
    TITLE = "secbench-tui"
    CSS_PATH = "app.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    BINDINGS = [
        Binding("q", "quit_app", "Quit", id="app.quit"),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("r", "results", "Results", id="app.results"),
        Binding("e", "export", "Export", id="app.export"),
    ]

    def __init__(
        self,
        settings: Settings,
        cache_dir: Path | None = None,
        offline_catalog: bool = False,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.cache_dir = cache_dir  # None: $XDG_CACHE_HOME/secbench-tui
        self.offline_catalog = offline_catalog  # True: never ask GET /models (snapshots)
        self._store: Store | None = None
        self._store_lock = asyncio.Lock()
        self.errors: list[BaseException] = []  # unexpected ones, shown as notifications
        self.error_log = (cache_dir or catalog.cache_dir()) / LOG_NAME

    def _handle_exception(self, error: Exception) -> None:
        """What escapes `Guarded` (a timer, drawing) is a notification too, once running."""
        if self.is_running and not self._exit and len(self.screen_stack) > 1:
            report_error(self, error)
        else:
            super()._handle_exception(error)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification (widgets' and screens' too) shows its text literally: messages
        carry server errors, model names and file names, so never markup, never escapes."""
        shown, heading = inert(message), inert_line(title)
        super().notify(shown, title=heading, severity=severity, timeout=timeout, markup=False)

    async def store(self) -> Store:
        """The session's database, opened on first use (raises StoreError with the fix)."""
        async with self._store_lock:
            if self._store is None:
                self._store = await Store.open(
                    self.settings.db,
                    on_notice=lambda text: self.notify(text, title="Database", timeout=20),
                )
            return self._store

    def on_mount(self) -> None:
        self.push_screen(SetupScreen(self.settings))

    async def on_unmount(self) -> None:
        if self._store is not None:
            await self._store.close()
            self._store = None

    # --- navigation --------------------------------------------------------------------

    def start_run(self, settings: Settings) -> None:
        self.push_screen(RunScreen(settings))

    def run_screen(self) -> RunScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, RunScreen)), None)

    @property
    def run_active(self) -> bool:
        screen = self.run_screen()
        return screen is not None and screen.active

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide keys that do nothing here: `r` on the results, screens under a dialog."""
        if isinstance(self.screen, ModalScreen) and action in ("results", "export", "quit_app"):
            return False
        if action == "results" and isinstance(self.screen, ResultsScreen):
            return False
        return True

    def action_results(self) -> None:
        if not any(isinstance(s, ResultsScreen) for s in self.screen_stack):
            self.push_screen(ResultsScreen())

    def action_export(self) -> None:
        screen = self.screen
        runs = screen.export_selection() if isinstance(screen, BaseScreen) else []
        settings = self.settings
        self.push_screen(ExportScreen(settings, runs))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    async def action_quit(self) -> None:
        """Textual's `ctrl+q`: the same question as `q` while a run is active."""
        self.action_quit_app()

    def action_quit_app(self) -> None:
        run = self.run_screen()
        if run is None or not run.active:
            self.exit(0)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(self._stop_then_exit(run), group="quit", exit_on_error=False)

        self.push_screen(
            ConfirmScreen(
                "A run is in progress. Stop it and quit?\n\nCases in flight finish and are "
                "saved first; every finished case is kept.",
                yes="Stop and quit",
                no="Keep running",
            ),
            answered,
        )

    async def _stop_then_exit(self, run: RunScreen) -> None:
        run.stop()
        self.notify("stopping: waiting for the cases in flight…", timeout=30)
        for worker in [w for w in self.workers if w.group == "eval"]:
            try:
                await worker.wait()
            except Exception:  # its failure was already shown; quitting anyway
                pass
        self.exit(0)


def make_app(
    settings: Settings, cache_dir: Path | None = None, offline_catalog: bool = False
) -> SecbenchApp:
    return SecbenchApp(settings, cache_dir=cache_dir, offline_catalog=offline_catalog)


def run_app(settings: Settings) -> int:
    app = make_app(settings)
    result = app.run()
    return int(result or 0) if app.return_code is None else app.return_code
