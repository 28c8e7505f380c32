"""Run: the evaluation streams in, case by case, from the same engine `--no-ui` uses.

The runs (one per model x prompt, as `--no-ui` plans them) go in the `eval` worker group; the
worker only turns their events into messages, and the handlers here draw them. With several
runs, a table lists each with its progress; the one highlighted there is the focused run,
whose cases stream into the case table. The case table keeps the latest `MAX_ROWS` cases of
the focused run (every case is in the database; the results screen pages through them all).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.syntax import Syntax
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.coordinate import Coordinate
from textual.notifications import Notification, Notify
from textual.reactive import reactive
from textual.widgets import DataTable, Header, Static
from textual.worker import Worker, WorkerState

from secbench_tui.config import Settings
from secbench_tui.core.models import Case, Evaluation, RunStatus
from secbench_tui.core.results.summary import Line, matrix_lines, summary_lines, worst_status
from secbench_tui.core.run.events import (
    CaseFinished,
    CaseStarted,
    Retrying,
    RunFinished,
    RunStarted,
)
from secbench_tui.core.run.matrix import PlannedRun
from secbench_tui.core.untrusted import inert, inert_line
from secbench_tui.lifecycle import MatrixRun
from secbench_tui.planning.plan import catalog_for
from secbench_tui.planning.plan import plan as make_plan
from secbench_tui.tui import format as fmt
from secbench_tui.tui.inflight import InFlight
from secbench_tui.tui.messages import (
    CaseBegan,
    RetryWaiting,
    RowsArrived,
    RunBegan,
    RunEnded,
    RunFailed,
    RunPlanned,
)
from secbench_tui.tui.plain import plain_line
from secbench_tui.tui.screens.base import BaseScreen, describe_error
from secbench_tui.tui.screens.confirm import ConfirmScreen
from secbench_tui.tui.tally import MatrixProgress, RunTally
from secbench_tui.tui.widgets.case_detail import code_language
from secbench_tui.tui.widgets.footer import KeyFooter
from secbench_tui.tui.widgets.live_line import LiveLine
from secbench_tui.tui.widgets.results_table import shrink_columns
from secbench_tui.tui.widgets.run_stats import RunStats

if TYPE_CHECKING:
    from secbench_tui.core.run.catalog import Catalog

MAX_ROWS = 1000
# How often the engine's reports and the current case are drawn: `tui.host.Intervals`.
CASE_WIDTH = 10_000  # no cap: the case column takes what the other columns leave
VERDICT_WIDTH = 10  # expected and actual are cut here (VulDetectBench answers are long)


def other_widths(total: int, vuldetectbench: bool, scrollbar: bool) -> int:
    """Cells the run table's columns other than the case take: #, expected, actual, outcome,
    latency, a cell of padding each side of each column, and the scrollbar if there is one."""
    verdicts = 2 * VERDICT_WIDTH if vuldetectbench else len("expected") + len("actual")
    numbers = len(str(max(total, 1)))
    return numbers + verdicts + len("unparsed") + len("latency") + 6 * 2 + 2 * scrollbar


MATRIX_COLUMNS = ("run", "model", "prompt", "state", "progress", "elapsed", "accuracy")
# cells the matrix table's columns other than model and prompt take: run, state, progress,
# elapsed and accuracy at their widest, two of padding per column, the border and a scrollbar
MATRIX_OTHERS = len("run") + len("stopping") + len("999/999") + len("elapsed") + len("accuracy")
MATRIX_OTHERS += 2 * len(MATRIX_COLUMNS) + 2 + 2
STATE_ORDER = ("running", "queued", "done", "stopped", "aborted", "failed")
STATE_STYLES = {
    "queued": "dim",
    "running": "bold green",
    "stopping": "bold yellow",
    "done": "green",
    "stopped": "yellow",
    "aborted": "bold red",
    "failed": "bold red",
}

# How the app styles the summary's tags (core.summary renders the lines once, for both).
TAG_STYLES = {
    "heading": "bold",
    "status": "bold",
    "dim": "dim",
    "warning": "yellow",
    **fmt.OUTCOME_STYLES,
}


def styled(lines: list[Line]) -> Text:
    text = Text()
    for n, line in enumerate(lines):
        if n:
            text.append("\n")
        for segment in line:
            text.append(segment.text, style=TAG_STYLES.get(segment.tag, ""))
    return text


def summary_text(event: RunFinished) -> Text:
    """The run's summary, the lines `--no-ui` prints, styled; wall time aside (it is above)."""
    return styled(summary_lines(event.summary, event.status, event.message, wall=False))


def matrix_text(ended: dict[int, RunFinished]) -> Text:
    """Every run of the matrix in one line each, as `--no-ui` prints them after the runs."""
    runs = [(e.status, e.message, e.summary) for _, e in sorted(ended.items())]
    return styled(matrix_lines(runs))


class DrawnOnce:
    """A renderable drawn once per width. The current case's code is drawn again at each
    layout of the screen (several a second while a run goes on), and highlighting it each
    time cost more than all the rest of a drawing; its lines at a width do not change."""

    def __init__(self, renderable: Syntax) -> None:
        self.renderable = renderable
        self._drawn: dict[tuple[int, int | None], list[Segment]] = {}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        key = (options.max_width, options.height)
        if key not in self._drawn:
            self._drawn[key] = list(console.render(self.renderable, options))
        yield from self._drawn[key]

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


class FittedTable(DataTable[Text | str]):
    """A table whose screen recuts its elastic column when the table itself is resized
    (the screen's own resize comes before its panes are laid out again, and maximising a
    pane or showing the current case resizes the table without resizing the screen)."""

    def on_resize(self) -> None:
        screen = self.screen
        if isinstance(screen, RunScreen):
            screen.call_after_refresh(screen.refit)


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
        super().__init__()
        self.settings = settings
        self.catalog = catalog  # the setup screen's (its estimate's); None: read once here
        self.lifecycle: MatrixRun | None = None
        self._stop_asked = False  # stop() came before the runs' lifecycle existed
        self._engine_loop: asyncio.AbstractEventLoop | None = None  # the runs' own, in a thread
        self._engine_task: asyncio.Task[Any] | None = None
        self.planned: list[PlannedRun] = []
        self.focus_slot = 0  # the slot of the run whose cases the table shows
        self.tallies: dict[int, RunTally] = {}
        self.run_ids: dict[int, int] = {}  # slot -> run id, once started
        self.ended: dict[int, RunFinished] = {}  # slot -> how it ended
        self.finished: RunFinished | None = None  # the focused run's end, once all have ended
        self._recent: dict[int, deque[CaseFinished]] = {}  # slot -> its latest rows
        self._retry_until: float | None = None
        self._last_retry: Retrying | None = None
        self._case_width = 12
        self._case_column: Any = None  # the case column's key
        self._vdb = False
        self._answers: dict[str, Evaluation] = {}  # by row key, for the rows in the table
        self._stopping_notice: Notification | None = None
        self.flights: dict[int, InFlight] = {}  # slot -> its cases started and not finished
        self.progress = MatrixProgress(clock=self.secbench.clock)
        self._current: Case | None = None  # the case drawn as the current one
        self._asked: Case | None = None  # the latest case asked, drawn by `_draw_current`
        self._current_pending = False
        self._current_drawn = 0.0  # when (time.monotonic)
        self._gathered: list[tuple[int, CaseStarted | CaseFinished]] = []  # not yet drawn
        self._draw_pending = False
        self._names_width: tuple[int, int] | None = None

    @property
    def active(self) -> bool:
        return self.state in ("starting", "running", "stopping")

    @property
    def tally(self) -> RunTally:
        """The focused run's tally."""
        return self._tally(self.focus_slot)

    def _tally(self, slot: int) -> RunTally:
        """A run's tally, made on first use with the app's clock (frozen in snapshot tests)."""
        return self.tallies.setdefault(slot, RunTally(clock=self.secbench.clock))

    @property
    def run_id(self) -> int | None:
        """The focused run's id."""
        return self.run_ids.get(self.focus_slot)

    def compose(self) -> ComposeResult:
        yield Header()
        runs = FittedTable(id="matrix-table", cursor_type="row")
        runs.border_title = "Runs (highlight one to follow its cases)"
        yield runs
        yield LiveLine(id="matrix-progress")
        yield RunStats(id="run-stats")
        yield Static(id="retry-line")
        yield LiveLine(id="in-flight")
        with Horizontal(id="run-panes"):
            table = FittedTable(id="run-table", cursor_type="row")
            table.border_title = "Cases"
            yield table
            with VerticalScroll(id="current-pane") as pane:
                pane.border_title = "Current case"
                yield Static(id="current-case")
                yield Static(id="last-explanation")
        yield Static(id="run-summary")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = f"run: {inert_line(next(iter(self.settings.models), ''))}"
        table = self.query_one("#run-table", DataTable)
        keys = table.add_columns("#", "case", "expected", "actual", "outcome", "latency")
        self._case_column = keys[1]
        matrix = self.query_one("#matrix-table", DataTable)
        matrix.add_columns(*MATRIX_COLUMNS)
        self.query_one("#matrix-progress").display = False
        table.focus()  # the list of runs shows (and takes the focus) only for several runs
        self.query_one("#retry-line").display = False
        self.query_one("#in-flight").display = False
        self.query_one("#run-summary").display = False
        self._redraw_stats()
        self.set_interval(self.secbench.intervals.tick, self._tick)
        self._draw_every = self.secbench.intervals.draw  # read here: the engine's thread uses it
        self.run_engine()

    def on_unmount(self) -> None:
        """Leaving (the app quits) while the runs go on: they are cancelled, as an async
        worker's would be (the thread would otherwise keep the process alive)."""
        loop, task = self._engine_loop, self._engine_task
        if loop is not None and task is not None and not task.done():
            with contextlib.suppress(RuntimeError):  # its loop has closed meanwhile
                loop.call_soon_threadsafe(task.cancel)

    # --- the worker -----------------------------------------------------------------

    @work(exclusive=True, group="eval", exit_on_error=False, thread=True)
    async def run_engine(self) -> None:
        """The runs, on an event loop of their own in the worker's thread: a drawing of the
        screen (tens of milliseconds) then never stands between a reply and its reading, and
        the engine's thread, which uses little processor time, is scheduled as soon as its
        socket is ready even when the machine is busy (`MatrixRun.events` also shortens the
        GIL's switch interval while the runs go on, so a drawing does not keep the engine's
        thread waiting for the GIL). Messages go to the screen with `post_message`
        (thread-safe); a stop reaches the runs through `call_soon_threadsafe`. The runs write
        through a store of their own, opened and closed on this loop (`MatrixRun`); the
        screens read through the app's, on theirs."""
        self._engine_loop = asyncio.get_running_loop()
        self._engine_task = asyncio.current_task()
        app = self.app

        def notice(text: str) -> None:  # from opening the store: shown as the app's are
            app.call_from_thread(app.notify, text, title="Database", timeout=20)

        try:
            run = self.lifecycle = await self._planned_run(notice)
            if self._stop_asked:
                run.stop()
            if not run.plan.refused:  # a prompt larger than the model's context
                await run.open_store()
        except Exception as exc:
            self.post_message(RunFailed(describe_error(exc)))
            return
        if run.plan.refused:
            await run.aclose()
            self.post_message(RunFailed("; ".join(o.message() for o in run.plan.refused)))
            return
        self.post_message(RunPlanned(run.runs))
        try:
            async for tagged in run.events():  # closes the store on this loop, however it ends
                self._post_event(tagged.event, tagged.slot)
        finally:
            self._post_gathered()

    async def _planned_run(self, notice: Callable[[str], None]) -> MatrixRun:
        """The plan of the settings, made as `--no-ui` makes it, with the setup screen's
        catalog (the one its estimate priced) or, started without one, the catalog read once."""
        catalog = self.catalog
        if catalog is None:
            catalog = await catalog_for(
                self.settings,
                directory=self.secbench.cache_dir,
                offline=self.secbench.offline_catalog,
            )
        plan = await asyncio.to_thread(make_plan, self.settings, catalog)
        return MatrixRun(plan, on_notice=notice)

    def _post_event(self, event: object, slot: int = 0) -> None:
        """In the engine's thread: cases started and finished are gathered and posted every
        `intervals.draw` seconds; other events at once, after what was gathered."""
        if isinstance(event, CaseStarted | CaseFinished):
            self._gathered.append((slot, event))
            if not self._draw_pending:
                self._draw_pending = True
                asyncio.get_running_loop().call_later(self._draw_every, self._post_gathered)
            return
        self._post_gathered()  # what came before goes first
        if isinstance(event, RunStarted):
            self.post_message(RunBegan(event, slot))
        elif isinstance(event, Retrying):
            self.post_message(RetryWaiting(event, slot))
        elif isinstance(event, RunFinished):
            self.post_message(RunEnded(event, slot))

    def on_run_planned(self, message: RunPlanned) -> None:
        self.planned = message.runs
        self._draw_matrix()

    def _post_gathered(self) -> None:
        """The cases started and finished since the last drawing: per run, one message with
        the cases started, then one with the cases finished (a case's start always comes
        before its end, so the cases in flight add up either way)."""
        self._draw_pending = False
        gathered, self._gathered = self._gathered, []
        began: dict[int, CaseBegan] = {}
        arrived: dict[int, RowsArrived] = {}
        for slot, event in gathered:
            if isinstance(event, CaseStarted):
                if slot in began:
                    began[slot].events.append(event)
                    began[slot].event = event
                else:
                    began[slot] = CaseBegan(event, slot)
            elif slot in arrived:
                arrived[slot].events.append(event)
            else:
                arrived[slot] = RowsArrived([event], slot)
        for message in (*began.values(), *arrived.values()):
            self.post_message(message)

    # --- the runs of the matrix ---------------------------------------------------------

    def _matrix_cells(self, slot: int) -> tuple[str | Text, ...]:
        run = self.planned[slot]
        tally = self.tallies.get(slot) or RunTally()
        state = tally.state
        if state in ("queued", "running") and self.state == "stopping":
            state_cell = Text("stopping", style=STATE_STYLES["stopping"])
        else:
            state_cell = Text(state, style=STATE_STYLES.get(state, ""))
        model_width, prompt_width = self._name_widths()
        return (
            str(self.run_ids.get(slot, "")),
            plain_line(fmt.middle(inert_line(run.model), model_width)),
            plain_line(fmt.middle(inert_line(run.prompt), prompt_width)),
            state_cell,
            f"{tally.done}/{tally.total}" if tally.opened else "-",
            fmt.clock(tally.elapsed) if tally.started is not None else "-",
            fmt.pct(tally.accuracy),
        )

    def _name_widths(self) -> tuple[int, int]:
        """The model and prompt columns take what the others leave, the prompt up to a third
        (names that fit are shown whole; longer ones lose their middle, the highlighted
        run's full name is in the title)."""
        models = max((len(inert_line(r.model)) for r in self.planned), default=5)
        prompts = max((len(inert_line(r.prompt)) for r in self.planned), default=6)
        table = self.query_one("#matrix-table", DataTable)
        total = max(table.size.width, self.size.width)
        free = max(16, total - MATRIX_OTHERS)
        prompt = min(prompts, max(6, free // 3))
        model = max(len("model"), min(models, free - prompt))
        return model, max(len("prompt"), prompt)

    def _draw_matrix(self) -> None:
        """The list of runs: shown when the plan has more than one."""
        table = self.query_one("#matrix-table", DataTable)
        if len(self.planned) < 2:
            return
        table.display = True
        for slot in range(len(self.planned)):
            self._tally(slot)
            table.add_row(*self._matrix_cells(slot), key=str(slot))
        table.focus()

    def _update_matrix_row(self, slot: int) -> None:
        if len(self.planned) < 2:
            return
        table = self.query_one("#matrix-table", DataTable)
        for column, value in enumerate(self._matrix_cells(slot)):
            table.update_cell_at(Coordinate(slot, column), value, update_width=True)
        self._draw_matrix_progress()

    def _draw_matrix_progress(self) -> None:
        """One line for the whole matrix: runs by state, cases, one ETA, elapsed."""
        if len(self.planned) < 2:
            return
        line = self.query_one("#matrix-progress", LiveLine)
        line.display = True
        line.redraw(self.matrix_line())

    def matrix_line(self) -> Text:
        tallies = [self._tally(slot) for slot in range(len(self.planned))]
        states: dict[str, int] = {}
        for tally in tallies:
            states[tally.state] = states.get(tally.state, 0) + 1
        done = sum(t.done for t in tallies)
        total = sum(
            t.total if t.opened else len(r.spec.cases) * r.spec.repeats
            for t, r in zip(tallies, self.planned, strict=True)
        )
        runs = [(r.model, t) for r, t in zip(self.planned, tallies, strict=True)]
        ended = all(t.status is not None for t in tallies)
        started = [t.started for t in tallies if t.started is not None]
        finish = max((t.ended or self.secbench.clock()) for t in tallies) if started else None
        elapsed = finish - min(started) if started and finish is not None else None
        text = Text.assemble(("matrix ", "bold"), f"{len(tallies)} runs: ")
        for n, state in enumerate(STATE_ORDER):
            if states.get(state):
                text.append(", " if n and text.plain[-2:] != ": " else "")
                text.append(f"{states[state]} {state}", style=STATE_STYLES.get(state, ""))
        text.append(f"  ·  {done}/{total} cases  ·  ")
        if ended:
            text.append("finished", style="bold")
        else:
            text.append(f"ETA {fmt.clock(self.progress.eta(runs))}", style="bold")
        text.append(f"  ·  elapsed {fmt.clock(elapsed)}", style="dim")
        return text

    @on(DataTable.RowHighlighted, "#matrix-table")
    def _run_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Follow another run: its latest cases replace the table, its tally the stats."""
        slot = int(str(event.row_key.value))
        if slot == self.focus_slot:
            return
        self.focus_slot = slot
        table = self.query_one("#run-table", DataTable)
        table.clear()
        self._answers.clear()
        for finished in self._recent.get(slot, ()):
            key = str(finished.done)
            table.add_row(*self._row(finished), key=key)
            self._answers[key] = finished.evaluation
        if table.row_count:
            table.move_cursor(row=table.row_count - 1, animate=False)
        self.query_one("#current-case", Static).update("")
        self._current = self._asked = None
        self.query_one("#last-explanation", Static).update("")
        if self.planned:
            self.sub_title = f"run: {inert_line(self.planned[slot].label)}"
        self._draw_in_flight()
        self._redraw_stats()

    # --- drawing events ---------------------------------------------------------------

    def on_run_began(self, message: RunBegan) -> None:
        event = message.event
        self.run_ids[message.slot] = event.run_id
        self._tally(message.slot).start(event)
        self._update_matrix_row(message.slot)
        if self.state == "starting":
            self.state = "running"
        what = "resumed" if event.resumed else "started"
        if len(self.planned) < 2:
            self.notify(
                f"run {event.run_id} {what}: {event.total} cases, {event.pending} to ask"
                + (f", {event.reused} reused" if event.reused else ""),
                timeout=4,
            )
        if message.slot != self.focus_slot:
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
        flights = self.flights.setdefault(message.slot, InFlight())
        for started in message.events:
            flights.start(started)
        tally = self._tally(message.slot)
        if tally.started is None:  # its first case: the run leaves the queue
            tally.begin()
            if self.planned:
                self.progress.begin(self.planned[message.slot].model)
            self._update_matrix_row(message.slot)
            if message.slot == self.focus_slot:
                self._redraw_stats()
        if message.slot != self.focus_slot:
            return
        self._draw_in_flight()
        self._asked = message.event.case
        if not self._current_pending:
            # highlighting a case's code costs more than the rest of a drawing: the current
            # case is drawn again at most every `intervals.current` seconds, the latest one asked
            wait = self._current_drawn + self.secbench.intervals.current - time.monotonic()
            if wait <= 0:
                self._draw_current()
            else:
                self._current_pending = True
                self.set_timer(wait, self._draw_current)

    def _draw_current(self) -> None:
        self._current_pending = False
        case = self._asked
        if case is None or case is self._current:
            return
        self._current = case
        self._current_drawn = time.monotonic()
        self.query_one("#current-case", Static).update(
            Group(
                Text.assemble(
                    ("case ", "dim"),
                    (inert_line(case.case_id), "bold"),
                    (f"  ({inert_line(case.app)})", "dim"),
                ),
                DrawnOnce(
                    Syntax(
                        inert(case.code),
                        code_language(
                            {
                                "suite_kind": case.kind.value,
                                "test_file": case.test_file,
                                "code": case.code,
                            }
                        ),
                        line_numbers=True,
                        word_wrap=True,
                        background_color="default",
                    )
                ),
            )
        )

    def on_rows_arrived(self, message: RowsArrived) -> None:
        recent = self._recent.setdefault(message.slot, deque(maxlen=MAX_ROWS))
        recent.extend(message.events)
        flights = self.flights.setdefault(message.slot, InFlight())
        for event in message.events:
            flights.finish(event)
            if self.planned and not event.evaluation.reused:
                self.progress.answered(self.planned[message.slot].model)
        if message.slot != self.focus_slot:
            tally = self._tally(message.slot)
            for event in message.events:
                tally.add(event)
            self._update_matrix_row(message.slot)
            return
        table = self.query_one("#run-table", DataTable)
        follow = table.cursor_row >= table.row_count - 2
        if message.events:
            self._vdb = message.events[0].evaluation.case.kind.value == "vuldetectbench"
            self._case_width = self._fitting_case_width()
        for event in message.events:
            self.tally.add(event)
            key = str(event.done)
            table.add_row(*self._row(event), key=key)
            self._answers[key] = event.evaluation
        while table.row_count > MAX_ROWS:
            oldest = next(iter(table.rows))
            table.remove_row(oldest)
            self._answers.pop(str(oldest.value), None)
        if follow and table.row_count:
            table.move_cursor(row=table.row_count - 1, animate=False)
            if message.events:
                self._show_explanation(message.events[-1].evaluation, latest=True)
        self._update_matrix_row(message.slot)
        self._draw_in_flight()
        self._redraw_stats()

    def _fitting_case_width(self) -> int:
        table = self.query_one("#run-table", DataTable)
        scrollbar = self.tally.total >= table.size.height  # the header takes a line
        others = other_widths(self.tally.total, self._vdb, scrollbar)
        return fmt.fitting(table.size.width, others, CASE_WIDTH)

    def on_resize(self) -> None:
        self.call_after_refresh(self.refit)

    def refit(self) -> None:
        self._refit_cases()
        self._redraw_matrix()

    def _redraw_matrix(self) -> None:
        """Names are cut to the width: a resize draws every run's row again."""
        if len(self.planned) < 2:
            return
        table = self.query_one("#matrix-table", DataTable)
        if table.row_count != len(self.planned) or self._names_width == self._name_widths():
            return
        self._names_width = self._name_widths()
        shrink_columns(table)
        for slot in range(len(self.planned)):
            self._update_matrix_row(slot)

    def _refit_cases(self) -> None:
        """After a resize the case column takes the new free width: its cells are cut again."""
        width = self._fitting_case_width()
        if width == self._case_width or self._case_column is None:
            return
        self._case_width = width
        table = self.query_one("#run-table", DataTable)
        column = table.columns[self._case_column]
        column.content_width = column.label.cell_len  # it grows back with the cells below
        for key, evaluation in self._answers.items():
            table.update_cell(
                key, self._case_column, self._case_cell(evaluation), update_width=True
            )

    def _case_cell(self, ev: Evaluation) -> Text:
        repeat = f" #{ev.repeat + 1}" if ev.repeat else ""
        width = self._case_width - len(repeat)
        return Text(fmt.case_id(inert_line(ev.case.case_id), width) + repeat)

    @on(DataTable.RowHighlighted, "#run-table")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Moving up the table shows that case's answer (and stops following new rows)."""
        table = self.query_one("#run-table", DataTable)
        answer = self._answers.get(str(event.row_key.value))
        if answer is not None:
            self._show_explanation(answer, latest=event.cursor_row == table.row_count - 1)

    def _row(self, event: CaseFinished) -> tuple[str | Text, ...]:
        ev = event.evaluation
        outcome = ev.scored.outcome.value
        return (
            str(event.done),
            self._case_cell(ev),
            plain_line(inert_line(ev.case.expected)[:VERDICT_WIDTH]),
            plain_line(inert_line(ev.scored.actual or "-")[:VERDICT_WIDTH]),
            Text(outcome, style=fmt.OUTCOME_STYLES[outcome]),
            fmt.latency(ev.completion.latency_ms),
        )

    def _show_explanation(self, ev: Evaluation, latest: bool) -> None:
        text = Text.assemble(
            ("\nlast answer " if latest else "\nanswer (highlighted row) ", "dim"),
            (inert_line(ev.case.case_id), "bold"),
            ("  ", ""),
            (ev.scored.outcome.value, fmt.OUTCOME_STYLES[ev.scored.outcome.value]),
            (
                f"\nexpected {inert_line(ev.case.expected[:60])}"
                f"  actual {inert_line((ev.scored.actual or '-')[:60])}",
                "dim",
            ),
            "\n",
            inert(
                ev.completion.error or ev.scored.explanation or ev.completion.text or "(no reply)"
            ),
        )
        self.query_one("#last-explanation", Static).update(text)

    def on_retry_waiting(self, message: RetryWaiting) -> None:
        self.flights.setdefault(message.slot, InFlight()).retry(message.event)
        if message.slot != self.focus_slot:
            self._tally(message.slot).retry(message.event)
            return
        self._retry_until = time.monotonic() + message.event.notice.wait_seconds
        self.tally.retry(message.event)
        self._draw_retry(message.event)
        self._draw_in_flight()
        self._redraw_stats()

    def _draw_in_flight(self) -> None:
        """The focused run's cases asked and not finished, retrying ones with their wait."""
        flights = self.flights.get(self.focus_slot)
        line = self.query_one("#in-flight", LiveLine)
        # two lines at most, wrapped between words; the slack is what a wrap may leave
        width = 2 * max(20, (line.size.width or self.size.width) - 2) - 12
        text = flights.line(width) if flights is not None and self.active else None
        if text is not None:
            line.redraw(text)
        line.display = text is not None

    def _draw_retry(self, event: Retrying) -> None:
        n = event.notice
        left = max(0.0, (self._retry_until or 0) - time.monotonic())
        # the wait first: a narrow terminal cuts the end of the line, where the case id is
        if n.rate_limited:
            text = Text.assemble(
                ("waiting on rate limit", "bold yellow"),
                f": retry in {left:.0f}s (attempt {n.attempt}), concurrency now {event.limit}",
                (f" · {inert_line(n.case_id)}", "dim"),
            )
        else:
            text = Text.assemble(
                ("retrying", "bold yellow"),
                f" in {left:.0f}s (attempt {n.attempt}): {inert_line(n.reason[:120])}",
                (f" · {inert_line(n.case_id)}", "dim"),
            )
        line = self.query_one("#retry-line", Static)
        line.update(text)
        line.display = True
        self._last_retry = event

    def _tick(self) -> None:
        if self._retry_until is not None:
            if time.monotonic() > self._retry_until + 1:
                self._retry_until = None
                self.query_one("#retry-line").display = False
            elif self._last_retry is not None:
                self._draw_retry(self._last_retry)
        if self.active:
            self._draw_in_flight()
            self._redraw_stats()
            for slot, tally in self.tallies.items():
                if tally.state == "running":
                    self._update_matrix_row(slot)
            self._draw_matrix_progress()

    def on_run_ended(self, message: RunEnded) -> None:
        self.ended[message.slot] = message.event
        self._tally(message.slot).end(message.event.status.value)
        self._update_matrix_row(message.slot)
        if message.event.status is RunStatus.ABORTED and len(self.planned) > 1:
            self.notify(
                message.event.message or "the run was aborted",
                title=f"run {message.event.run_id} aborted",
                severity="error",
                timeout=15,
            )
        if len(self.ended) < max(1, len(self.planned)):
            return  # the others go on
        event = self.ended.get(self.focus_slot, message.event)
        self.finished = event
        self._draw_current()  # the last case asked, not one from up to a second before
        self.state = worst_status([e.status for e in self.ended.values()])
        self._end_stopping_notice()
        self._retry_until = None
        self.query_one("#retry-line").display = False
        self.query_one("#in-flight").display = False
        summary = self.query_one("#run-summary", Static)
        summary.update(
            Text.assemble(
                summary_text(event) if len(self.ended) == 1 else matrix_text(self.ended),
                ("\nr browse results · e export the report · n new run · q quit", "bold"),
            )
        )
        summary.display = True
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
        self.tally.end("failed")
        self._end_stopping_notice()
        self._retry_until = None
        self.query_one("#retry-line").display = False
        self.query_one("#in-flight").display = False
        summary = self.query_one("#run-summary", Static)
        summary.update(
            Text.assemble(
                (headline, "bold red"), inert(reason), ("\nescape goes back to setup", "bold")
            )
        )
        summary.display = True

    def _redraw_stats(self) -> None:
        self.query_one(RunStats).show(self.tally, self.state)

    def watch_state(self) -> None:
        if self.is_mounted:
            self._redraw_stats()
            self.refresh_bindings()
        question = self._stop_question
        if question is not None and not self.active:  # ended meanwhile: nothing to stop
            self._stop_question = None
            if self.app.screen is question:
                question.dismiss(False)

    # --- keys ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "new_run":
            return not self.active
        if action == "request_stop":
            return self.active  # when idle, ctrl+c and escape keep their usual meaning
        return True

    def stop(self) -> None:
        """Let the cases in flight finish, keep every finished one, then end the run."""
        if not self.active:
            return
        self._stop_asked = True
        if self.lifecycle is not None and self._engine_loop is not None:
            with contextlib.suppress(RuntimeError):  # its loop has closed: the runs are over
                self._engine_loop.call_soon_threadsafe(self.lifecycle.stop)
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
                retrying = self._retry_until is not None
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
        table = self.query_one("#run-table", DataTable)
        pane = self.query_one("#current-pane")
        target = pane if self.focused is pane or not pane.display else table
        self.maximized = target
        target.focus()

    @on(DataTable.RowSelected, "#run-table")
    def _case_selected(self) -> None:
        if not self.query_one("#current-pane").display:
            self.action_maximize_pane()

    def watch_maximized(self, maximized: object) -> None:
        pane = self.query_one("#current-pane")
        if maximized is None and self.focused is pane and not pane.display:
            self.query_one("#run-table", DataTable).focus()

    def action_new_run(self) -> None:
        if not self.active:
            self.dismiss()

    def export_selection(self) -> list[int]:
        return sorted(self.run_ids.values())
