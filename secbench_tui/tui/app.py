"""The terminal app: setup -> run -> results, with export and help on top.

`make_app(settings)` builds it (the tests use the same factory); `run_app(settings)` runs it
and returns the exit code. The app owns one `Store` for the session, opened on first use, so
the results screen can browse while a run writes. Every way out (`q`, Textual's own `ctrl+q`)
asks first while a run is active, and errors become notifications (`tui.errors`).
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen

from secbench_tui.config import Settings
from secbench_tui.core.run import catalog
from secbench_tui.core.run.catalog import Catalog
from secbench_tui.core.store.database import Store
from secbench_tui.core.untrusted import inert, inert_line
from secbench_tui.results_db import open_results
from secbench_tui.tui.commands import SecbenchCommands
from secbench_tui.tui.engine_thread import EngineThread
from secbench_tui.tui.errors import LOG_NAME, Guarded, report_error
from secbench_tui.tui.figure_book import FigureBook
from secbench_tui.tui.host import Intervals
from secbench_tui.tui.screens.base import BaseScreen
from secbench_tui.tui.screens.compare import CompareScreen, DiffScreen, diff_pair, grid_runs
from secbench_tui.tui.screens.confirm import ConfirmScreen
from secbench_tui.tui.screens.export import ExportScreen, write_report
from secbench_tui.tui.screens.help import HelpScreen
from secbench_tui.tui.screens.results import ResultsScreen
from secbench_tui.tui.screens.run import RunScreen
from secbench_tui.tui.screens.setup import SetupScreen

ENDING_SLACK = 5.0  # seconds past a stop's grace a quit waits for the runs to close


class SecbenchApp(Guarded, App[int]):
    TITLE = "secbench-tui"
    CSS_PATH = "app.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    COMMANDS = App.COMMANDS | {SecbenchCommands}
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
        clock: Callable[[], float] = time.monotonic,
        intervals: Intervals | None = None,
    ) -> None:
        super().__init__()
        self.clock = clock  # what run screens time with (the snapshots freeze it)
        self.intervals = intervals or Intervals()  # how often screens look again
        self.last_report: Path | None = None
        self.stopping: list[EngineThread] = []  # runs stopped by a quit, ending as it closes
        self.figures = FigureBook()  # each stored run's figures, computed once per count
        self.marked: set[int] = set()  # runs marked with space: kept until the app quits
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
                self._store = await open_results(
                    self.settings.db,
                    create=True,
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

    def start_run(self, settings: Settings, catalog: Catalog | None = None) -> None:
        self.push_screen(RunScreen(settings, catalog))

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
        """The results screen: opened, or come back to from a view opened on top of it.
        From the run screen, it opens on the run in view there (the one just finished)."""
        run = self.run_screen()
        run_id = run.run_id if run is not None and self.screen is run else None
        if run_id is None:
            self._back_to_results()
            return
        results = self._back_to_results(show_run=run_id)
        if results is not None:
            results.show_run(run_id)

    def _back_to_results(self, **fresh: Any) -> ResultsScreen | None:
        """Pop back to the results screen; None when a new one was pushed (with `fresh`).

        A run screen above it is never popped: that would end its run."""
        results = self.results_screen()
        above = self.screen_stack[self.screen_stack.index(results) + 1 :] if results else []
        if results is None or any(isinstance(s, RunScreen) for s in above):
            self.push_screen(ResultsScreen(**fresh))
            return None
        while self.screen is not results:
            self.pop_screen()
        return results

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
                self.stop_and_exit(run)

        self.push_screen(
            ConfirmScreen(
                "A run is in progress. Stop it and quit?\n\nCases in flight finish and are "
                "saved as the app closes; every finished case is kept.",
                yes="Stop and quit",
                no="Keep running",
            ),
            answered,
        )

    # --- comparison views and the palette's commands -----------------------------------

    def results_screen(self) -> ResultsScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, ResultsScreen)), None)

    def selection(self) -> tuple[list[int], int | None]:
        """Marked runs and the run in view (highlighted, filtered on, or being run)."""
        results = self.results_screen()
        if results is not None:
            return sorted(results.marked), results.run_in_view()
        run = self.run_screen()
        return [], run.run_id if run is not None else None

    def _work(self, job: Any, name: str) -> None:
        async def guarded() -> None:
            try:
                await job
            except Exception as error:
                report_error(self, error, f"{name} failed")

        self.run_worker(guarded(), name=name, group=name, exclusive=True, exit_on_error=False)

    def action_compare(self) -> None:
        self._work(self._open_compare(), "compare")

    async def _open_compare(self) -> None:
        runs = await (await self.store()).runs()
        run_ids = grid_runs(runs, *self.selection())
        if len(run_ids) < 2:
            self.notify(
                "Nothing to compare: the grid needs two runs of one suite. Mark runs with "
                "space on the results screen (r), then c.",
                severity="warning",
            )
            return
        self.push_screen(CompareScreen(runs, run_ids))

    def action_diff(self) -> None:
        self._work(self._open_diff(), "diff")

    async def _open_diff(self) -> None:
        runs = await (await self.store()).runs()
        marked, anchor = self.selection()
        pair = diff_pair(runs, marked, anchor)
        if pair is None or len(marked) > 2:
            self.notify(
                "A diff needs two runs of one suite: mark exactly two with space on the "
                "results screen (r), then d.",
                severity="warning",
            )
            return
        self.push_screen(DiffScreen(runs, *pair))

    def action_start(self) -> None:
        """The palette's "Start a run": the setup screen's choices, as ctrl+r there."""
        if self.run_active:
            self.notify("A run is in progress: stop it first (escape on the run screen)")
            return
        setup = next((s for s in self.screen_stack if isinstance(s, SetupScreen)), None)
        if setup is not None:
            setup.action_start()

    def action_jump_to_run(self, run_id: int) -> None:
        results = self._back_to_results(show_run=run_id)
        if results is not None:
            results.show_run(run_id)

    def action_set_filter(self, kind: str, value: str) -> None:
        """`outcome`, `model` or `app` = value on the results screen; no kind clears them."""
        results = self._back_to_results(filters={kind: value} if kind else {})
        if results is not None:
            results.set_filter(kind, value)

    def _current(self) -> tuple[str | None, int | None]:
        """The case id in view, and the result id when one result is highlighted."""
        screen = self.screen
        case = getattr(screen, "current_case", None)
        result = getattr(screen, "current_result", None)
        return (case() if callable(case) else None, result() if callable(result) else None)

    def action_copy_case(self) -> None:
        case, _ = self._current()
        if case is None:
            self.notify("No case highlighted here", severity="warning")
            return
        self.copy_to_clipboard(case)
        self.notify("case id copied to the clipboard", timeout=3)

    def action_copy_reply(self) -> None:
        self._work(self._copy_reply(), "copy")

    async def _copy_reply(self) -> None:
        row_of = getattr(self.screen, "current_row", None)
        row = row_of() if callable(row_of) else None
        _, result_id = self._current()
        if row is None and result_id is not None:
            row = await (await self.store()).result(result_id)
        if row is None:
            self.notify("No result highlighted here", severity="warning")
            return
        self.copy_to_clipboard(str(row.get("raw_reply") or ""))
        self.notify(f"raw reply of result {row.get('id')} copied to the clipboard", timeout=3)

    def action_copy_report_path(self) -> None:
        if self.last_report is None:
            self.notify("No report written yet: export one first (e)", severity="warning")
            return
        self.copy_to_clipboard(str(self.last_report))
        self.notify("report path copied to the clipboard", timeout=3)

    def action_open_report(self) -> None:
        self._work(self._open_report(), "report")

    async def _open_report(self) -> None:
        screen = self.screen
        runs = screen.export_selection() if isinstance(screen, BaseScreen) else []
        path = await write_report(await self.store(), self.settings, runs)
        self.last_report = path
        if has_display() and webbrowser.open(path.as_uri()):
            self.notify(f"report opened in the browser: {path}", timeout=8, markup=False)
        else:
            self.notify(
                f"report written (no display to open it on): {path}", timeout=15, markup=False
            )

    def stop_and_exit(self, run: RunScreen) -> None:
        """Quit during a run: the runs stop (no case starts; those in flight get their grace,
        as on Ctrl+C headless) and the app closes at once, while they finish: the engine's
        thread is not cancelled after a stop, and `run_app` waits for it to end (every
        answered case stored) before the process does."""
        run.stop(quitting=True)
        self.stopping.append(run.engine)
        self.exit(0)

    def wait_for_stopped_runs(self) -> bool:
        """Block until the runs a quit stopped have ended (their grace, and a margin); True
        when they all have."""
        grace = self.settings.stop_grace + ENDING_SLACK
        return all(engine.ended.wait(grace) for engine in self.stopping)


def make_app(
    settings: Settings,
    cache_dir: Path | None = None,
    offline_catalog: bool = False,
    clock: Callable[[], float] = time.monotonic,
    intervals: Intervals | None = None,
) -> SecbenchApp:
    return SecbenchApp(
        settings,
        cache_dir=cache_dir,
        offline_catalog=offline_catalog,
        clock=clock,
        intervals=intervals,
    )


def has_display() -> bool:
    """A browser can be shown: a desktop session, or macOS / Windows."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run_app(settings: Settings) -> int:
    app = make_app(settings)
    result = app.run()
    app.wait_for_stopped_runs()  # a quit during a run: its cases in flight end and are stored
    # The interpreter's last garbage collections, over every object Textual made, took half
    # a second of a quit on a busy machine (0.53 s, against 0.04 s with this); everything is
    # about to go anyway, so they are spared.
    gc.freeze()
    return int(result or 0) if app.return_code is None else app.return_code
