"""Run: the evaluation streams in, case by case, from the same engine `--no-ui` uses.

The runs (one per model x prompt, as `--no-ui` plans them) go on in the engine's thread
(`tui.engine_thread`), which turns their events into messages. This screen routes them: what
they say goes on its scoreboard (`tui.scoreboard`), and each part of the screen draws its
share of it: the runs of the matrix and its line (`widgets.matrix`), the followed run's stats
(`widgets.run_stats`), the retry and in-flight lines (`widgets.run_lines`), its latest cases
(`widgets.latest_cases`), the case asked last (`widgets.current_case`), and how the runs ended
(`widgets.run_end`). With several runs, the one highlighted in the runs table is followed.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.notifications import Notification, Notify
from textual.reactive import reactive
from textual.widgets import DataTable, Header
from textual.worker import Worker, WorkerState

from secbench_tui.config import Settings
from secbench_tui.core.models import RunStatus
from secbench_tui.core.results.summary import worst_status
from secbench_tui.core.run.catalog import Catalog
from secbench_tui.core.run.events import RunFinished
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui.engine_thread import EngineThread
from secbench_tui.tui.messages import (
    BatchWaiting,
    CaseBegan,
    ProvingRewrites,
    RetryWaiting,
    RowsArrived,
    RunBegan,
    RunEnded,
    RunFailed,
    RunPlanned,
)
from secbench_tui.tui.scoreboard import Scoreboard
from secbench_tui.tui.screens.base import BaseScreen, describe_error
from secbench_tui.tui.screens.confirm import ConfirmScreen
from secbench_tui.tui.tally import RunTally
from secbench_tui.tui.widgets.batch_progress import BatchPanel
from secbench_tui.tui.widgets.current_case import CurrentCase
from secbench_tui.tui.widgets.footer import KeyFooter
from secbench_tui.tui.widgets.latest_cases import LatestCases
from secbench_tui.tui.widgets.matrix import MatrixLine, MatrixTable
from secbench_tui.tui.widgets.run_end import RunEnd
from secbench_tui.tui.widgets.run_lines import InFlightLine, RetryLine
from secbench_tui.tui.widgets.run_stats import RunStats


class RunScreen(BaseScreen):
    BINDINGS = [
        Binding("ctrl+c", "request_stop", "Stop", id="run.stop", priority=True),
        Binding("escape", "request_stop", "Stop", id="run.stop_escape"),
        Binding("escape", "new_run", "Back to setup", id="run.back"),
        Binding("n", "new_run", "New run", id="run.new"),
        Binding("m", "maximize_pane", "Maximise", id="run.maximise"),
    ]

    state: reactive[str] = reactive("starting")

    def __init__(self, settings: Settings, catalog: Catalog | None = None) -> None:
        """`catalog`: the setup screen's (the one its estimate priced); None: read once."""
        super().__init__()
        self.settings = settings
        self.board = Scoreboard(clock=self.secbench.clock)
        self.engine = EngineThread(settings, self.secbench, self, catalog)
        self.finished: RunFinished | None = None  # the followed run's end, once all have ended
        self._stopping_notice: Notification | None = None

    @property
    def active(self) -> bool:
        return self.state in ("starting", "running", "stopping")

    @property
    def focus_slot(self) -> int:
        """The slot of the run whose cases the screen shows."""
        return self.board.focus

    @property
    def tally(self) -> RunTally:
        """The followed run's tally."""
        return self.board.tally()

    @property
    def run_id(self) -> int | None:
        """The followed run's id."""
        return self.board.run_ids.get(self.board.focus)

    def compose(self) -> ComposeResult:
        yield Header()
        yield MatrixTable(self.board, id="matrix-table")
        yield MatrixLine(self.board, id="matrix-progress")
        yield RunStats(id="run-stats")
        yield RetryLine(id="retry-line")
        yield InFlightLine(id="in-flight")
        yield BatchPanel(id="batch-progress")
        with Horizontal(id="run-panes"):
            yield LatestCases(self.board, id="run-table")
            yield CurrentCase(self.secbench.intervals.current, id="current-pane")
        yield RunEnd(id="run-summary")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = f"run: {inert_line(next(iter(self.settings.models), ''))}"
        self.query_one(LatestCases).focus()  # the runs' table takes it when there are several
        self._redraw_stats()
        self.set_interval(self.secbench.intervals.tick, self._tick)
        self.engine.start()

    def on_unmount(self) -> None:
        self.engine.cancel()

    # --- drawing what the scoreboard says -------------------------------------------------

    def _draw_run(self, slot: int) -> None:
        """A run's row in the matrix, and the matrix's line."""
        self.query_one(MatrixTable).update_run(slot)
        self.query_one(MatrixLine).draw()

    def _redraw_stats(self) -> None:
        self.query_one(RunStats).show(self.board.tally(), self.state)

    def _draw_in_flight(self) -> None:
        flights = self.board.flights.get(self.board.focus)
        self.query_one(InFlightLine).show(flights if self.active else None)

    def _tick(self) -> None:
        self.query_one(RetryLine).tick()
        if self.active:
            self._draw_in_flight()
            self._redraw_stats()
            matrix = self.query_one(MatrixTable)
            for slot, tally in self.board.tallies.items():
                if tally.state == "running":
                    matrix.update_run(slot)
            self.query_one(MatrixLine).draw()

    def on_resize(self) -> None:
        self.call_after_refresh(self.query_one(LatestCases).refit)
        self.call_after_refresh(self.query_one(MatrixTable).refit)

    # --- the engine's messages ------------------------------------------------------------

    def on_proving_rewrites(self, message: ProvingRewrites) -> None:
        """Before the runs start: how far the proving of `--rewrites` is, in the header."""
        self.sub_title = f"run: {inert_line(next(iter(self.settings.models), ''))} ({message.line})"

    def on_run_planned(self, message: RunPlanned) -> None:
        self.sub_title = f"run: {inert_line(next(iter(self.settings.models), ''))}"
        self.board.planned = message.runs
        self.query_one(MatrixTable).show_plan()

    def on_run_began(self, message: RunBegan) -> None:
        event = message.event
        self.board.begin(message.slot, event)
        self._draw_run(message.slot)
        if self.state == "starting":
            self.state = "running"
        what = "resumed" if event.resumed else "started"
        if not self.board.several:
            self.notify(
                f"run {event.run_id} {what}: {event.total} cases, {event.pending} to ask"
                + (f", {event.reused} reused" if event.reused else ""),
                timeout=4,
            )
        if message.slot != self.board.focus:
            return
        if event.skipped:
            shown = "\n".join(s.removeprefix("skipped ") for s in event.skipped[:3])
            more = len(event.skipped) - 3
            self.notify(
                shown + (f"\n… and {more} more" if more > 0 else "") + "\n(--lint explains)",
                title=f"{len(event.skipped)} files skipped",  # case files, or prompt files
                severity="warning",
                timeout=8,
            )
        self._redraw_stats()

    def on_case_began(self, message: CaseBegan) -> None:
        followed = message.slot == self.board.focus
        if self.board.cases_began(message.slot, message.events):  # it leaves the queue
            self._draw_run(message.slot)
            if followed:
                self._redraw_stats()
        if followed:
            self._draw_in_flight()
            self.query_one(CurrentCase).asked(message.event.case)

    def on_rows_arrived(self, message: RowsArrived) -> None:
        self.board.rows_arrived(message.slot, message.events)
        if message.slot == self.board.focus:
            latest = self.query_one(LatestCases).add(message.events)
            if latest is not None:
                self.query_one(CurrentCase).show_answer(latest, latest=True)
        self._draw_run(message.slot)
        if message.slot == self.board.focus:
            self._draw_in_flight()
            self._redraw_stats()

    def on_retry_waiting(self, message: RetryWaiting) -> None:
        self.board.retrying(message.slot, message.event)
        if message.slot == self.board.focus:
            self.query_one(RetryLine).retrying(message.event)
            self._draw_in_flight()
            self._redraw_stats()

    def on_batch_waiting(self, message: BatchWaiting) -> None:
        self.query_one(BatchPanel).show(message.event, message.slot)

    def on_run_ended(self, message: RunEnded) -> None:
        self.board.end(message.slot, message.event)
        self._draw_run(message.slot)
        if message.event.status is RunStatus.ABORTED and self.board.several:
            self.notify(
                message.event.message or "the run was aborted",
                title=f"run {message.event.run_id} aborted",
                severity="error",
                timeout=15,
            )
        if not self.board.all_ended:
            return  # the others go on
        event = self.board.ended.get(self.board.focus, message.event)
        self.finished = event
        self.query_one(CurrentCase).draw()  # the last case asked, not one from a second before
        self.state = worst_status([e.status for e in self.board.ended.values()])
        self._quiet()
        self.query_one(RunEnd).ended(self.board.ended, event)
        # the summary says how each run ended (an abort with its reason): notifications
        # still up from the run would cover it, so they go (after those still on their way:
        # the runs' events come from another thread, and a run that ends at once ends before
        # the app has shown that it started)
        self.app.call_later(self.app.clear_notifications)
        self._redraw_stats()

    def on_run_failed(self, message: RunFailed) -> None:
        self.notify(message.reason, title="cannot start", severity="error", timeout=15)
        self._fail("The run could not start: ", message.reason)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The engine raised before the run's end (it could not open the run, most likely):
        the run is over, so escape leads back to setup. (`BaseScreen`'s handler, which
        Textual calls too, reports the error.)"""
        error = event.worker.error
        failed = event.state is WorkerState.ERROR and event.worker.group == "eval"
        if failed and error is not None and self.active:
            self._fail("The run failed: ", describe_error(error))

    def _fail(self, headline: str, reason: str) -> None:
        self.state = "failed"
        self.board.tally().end("failed")
        self._quiet()
        self.query_one(RunEnd).failed(headline, reason)

    def _quiet(self) -> None:
        """The runs are over: nothing waits, nothing is in flight."""
        self._end_stopping_notice()
        self.query_one(RetryLine).hide()
        self.query_one(InFlightLine).display = False

    def watch_state(self) -> None:
        self.board.stopping = self.state == "stopping"
        if self.is_mounted:
            self._redraw_stats()
            self.refresh_bindings()
        question = self._stop_question
        if question is not None and not self.active:  # ended meanwhile: nothing to stop
            self._stop_question = None
            if self.app.screen is question:
                question.dismiss(False)

    @on(DataTable.RowHighlighted, "#matrix-table")
    def _run_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Follow another run: its latest cases replace the table, its tally the stats."""
        slot = int(str(event.row_key.value))
        if slot == self.board.focus:
            return
        self.board.focus = slot
        self.query_one(LatestCases).show_run(self.board.recent.get(slot, ()))
        self.query_one(CurrentCase).clear()
        if self.board.planned:
            self.sub_title = f"run: {inert_line(self.board.planned[slot].label)}"
        self._draw_in_flight()
        self._redraw_stats()

    @on(DataTable.RowHighlighted, "#run-table")
    def _case_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Moving up the table shows that case's answer (and stops following new rows)."""
        table = self.query_one(LatestCases)
        answer = table.answer(event.row_key.value)
        if answer is not None:
            latest = event.cursor_row == table.row_count - 1
            self.query_one(CurrentCase).show_answer(answer, latest=latest)

    # --- keys ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "new_run":
            return not self.active
        if action == "request_stop":
            return self.active  # when idle, ctrl+c and escape keep their usual meaning
        return True

    def stop(self, quitting: bool = False) -> None:
        """Let the cases in flight finish, keep every finished one, then end the run
        (`quitting`: the app is closing, so the runs end without their summaries)."""
        if not self.active:
            return
        self.engine.stop(quitting)
        self.state = "stopping"

    def notify_stopping(self, text: str) -> None:
        """Shown until the run has stopped (not for a fixed time), then taken down."""
        self._end_stopping_notice()
        self._stopping_notice = Notification(text, "", "information", 600)
        self.app.post_message(Notify(self._stopping_notice))

    def _end_stopping_notice(self) -> None:
        if self._stopping_notice is not None:
            self.app._unnotify(self._stopping_notice)  # Textual's own way to take one down
            self._stopping_notice = None

    _stop_question: ConfirmScreen | None = None  # "Stop the run?", while it is asked

    def action_request_stop(self) -> None:
        if self.state == "stopping":
            self.notify_stopping("stopping: waiting for the cases in flight")
            return

        def answered(yes: bool | None) -> None:
            if yes and self.active:
                self.stop()
                retrying = self.query_one(RetryLine).waiting
                waiting = " (one waiting to retry finishes its wait)" if retrying else ""
                grace = self.settings.stop_grace
                self.notify_stopping(
                    f"stopping: the cases in flight finish first (up to {grace:g}s; any "
                    f"still waiting then are asked again when the run is resumed){waiting}"
                )

        grace = self.settings.stop_grace
        self._stop_question = ConfirmScreen(
            f"Stop the run?\n\nCases in flight get up to {grace:g}s to finish and are "
            "saved; every finished case is kept: the same run started again reuses them.",
            yes="Stop",
            no="Keep running",
        )
        self.app.push_screen(self._stop_question, answered)

    def action_maximize_pane(self) -> None:
        """The focused pane takes the screen; from the cases table in a narrow terminal,
        where the current case's pane is hidden, that pane. Again (or escape): back."""
        if self.maximized is not None:
            self.minimize()
            return
        table = self.query_one(LatestCases)
        pane = self.query_one(CurrentCase)
        target = pane if self.focused is pane or not pane.display else table
        self.maximized = target
        target.focus()

    @on(DataTable.RowSelected, "#run-table")
    def _case_selected(self) -> None:
        if not self.query_one(CurrentCase).display:
            self.action_maximize_pane()

    def watch_maximized(self, maximized: object) -> None:
        pane = self.query_one(CurrentCase)
        if maximized is None and self.focused is pane and not pane.display:
            self.query_one(LatestCases).focus()

    def action_new_run(self) -> None:
        if not self.active:
            self.dismiss()

    def export_selection(self) -> list[int]:
        return sorted(self.board.run_ids.values())
