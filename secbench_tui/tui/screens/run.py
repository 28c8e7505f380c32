"""Run: the evaluation streams in, case by case, from the same engine `--no-ui` uses.

The runs (one per model x prompt, as `--no-ui` plans them) go in the `eval` worker group; the
worker only turns their events into messages, and the handlers here draw them. With several
runs, a table lists each with its progress; the one highlighted there is the focused run,
whose cases stream into the case table. The case table keeps the latest `MAX_ROWS` cases of
the focused run (every case is in the database; the results screen pages through them all).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.coordinate import Coordinate
from textual.reactive import reactive
from textual.widgets import DataTable, Footer, Header, Static
from textual.worker import Worker, WorkerState

from secbench_tui.config import Settings
from secbench_tui.core.engine import STOP_GRACE
from secbench_tui.core.events import CaseFinished, CaseStarted, Retrying, RunFinished, RunStarted
from secbench_tui.core.matrix import Matrix, PlannedRun, worst_status
from secbench_tui.core.models import Evaluation
from secbench_tui.core.untrusted import inert, inert_line
from secbench_tui.session import plan_matrix, resolve_matrix_defaults
from secbench_tui.tui import format as fmt
from secbench_tui.tui.messages import (
    CaseBegan,
    RetryWaiting,
    RowsArrived,
    RunBegan,
    RunEnded,
    RunFailed,
)
from secbench_tui.tui.plain import plain_line
from secbench_tui.tui.screens.base import BaseScreen, describe_error
from secbench_tui.tui.screens.confirm import ConfirmScreen
from secbench_tui.tui.widgets.case_detail import code_language
from secbench_tui.tui.widgets.run_stats import RunStats, RunTally

MAX_ROWS = 1000
CASE_WIDTH = 28  # the end of a case id, at most; less in a narrow pane
VERDICT_WIDTH = 10  # expected and actual are cut here (VulDetectBench answers are long)


def other_widths(total: int, vuldetectbench: bool, scrollbar: bool) -> int:
    """Cells the run table's columns other than the case take: #, expected, actual, outcome,
    latency, a cell of padding each side of each column, and the scrollbar if there is one."""
    verdicts = 2 * VERDICT_WIDTH if vuldetectbench else len("expected") + len("actual")
    numbers = len(str(max(total, 1)))
    return numbers + verdicts + len("unparsed") + len("latency") + 6 * 2 + 2 * scrollbar


def summary_text(event: RunFinished) -> Text:
    """The run's figures as the headless summary gives them, wall time aside (it is above)."""
    s = event.summary
    text = Text.assemble(
        (f"Run {event.run_id} {event.status}", "bold"), f": {inert_line(s.get('model'))}"
    )
    if event.message:
        text.append(f"\n  {inert_line(event.message)}")
    if "cases" in s:
        text.append(
            f"\n  cases {s['cases']}  correct {s['correct']}  wrong {s['wrong']}"
            f"  unparsed {s['unparsed']}  errors {s['errors']}"
        )
    if s.get("accuracy") is not None:
        low, high = s["accuracy_ci"]
        text.append(
            f"\n  accuracy {fmt.pct(s['accuracy'])} (95% CI {fmt.pct(low)}-{fmt.pct(high)})"
            f"  balanced {fmt.pct(s.get('balanced_accuracy'))}"
        )
        for app, stats in s.get("apps", {}).items():
            text.append(
                f"\n    {inert_line(app)}: {fmt.pct(stats['accuracy'])} of {stats['cases']}"
            )
    for task, metrics in (s.get("vuldetectbench") or {}).items():
        if isinstance(metrics, dict):
            shown = "  ".join(
                f"{k} {fmt.pct(v)}" for k, v in metrics.items() if isinstance(v, float)
            )
            text.append(f"\n    {inert_line(task)}: {shown}")
    if s.get("reused"):
        text.append(
            f"\n  reused {s['reused']} results asked before with the same settings"
            " (--force asks again)",
            style="dim",
        )
    text.append(
        f"\n  tokens {fmt.count(s.get('prompt_tokens'))} in /"
        f" {fmt.count(s.get('completion_tokens'))} out  cost {fmt.money(s.get('cost'))}"
    )
    if s.get("reasoning_tokens"):
        text.append(f"  ({fmt.count(s['reasoning_tokens'])} of the out tokens reasoning)")
    return text


def matrix_text(ended: dict[int, RunFinished]) -> Text:
    """Every run of the matrix in one line each: model, prompt, accuracy, status."""
    text = Text("Runs ended:", style="bold")
    for slot in sorted(ended):
        event = ended[slot]
        s = event.summary
        text.append(
            f"\n  run {event.run_id} {event.status}: {inert_line(s.get('model'))}"
            f" · {inert_line(s.get('prompt'))}  accuracy {fmt.pct(s.get('accuracy'))}"
            f"  balanced {fmt.pct(s.get('balanced_accuracy'))}"
            f"  cost {fmt.money(s.get('cost'))}"
        )
        if event.message:
            text.append(f"\n    {inert_line(event.message)}", style="dim")
    return text


class RunScreen(BaseScreen):
    BINDINGS = [
        Binding("ctrl+c", "request_stop", "Stop", id="run.stop", priority=True),
        Binding("escape", "request_stop", "Stop", id="run.stop_escape"),
        Binding("escape", "new_run", "Back to setup", id="run.back"),
        Binding("n", "new_run", "New run", id="run.new"),
    ]

    state: reactive[str] = reactive("starting")

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        self.matrix: Matrix | None = None
        self.planned: list[PlannedRun] = []
        self.focus_slot = 0  # the slot of the run whose cases the table shows
        self.tallies: dict[int, RunTally] = {0: RunTally()}
        self.run_ids: dict[int, int] = {}  # slot -> run id, once started
        self.ended: dict[int, RunFinished] = {}  # slot -> how it ended
        self.finished: RunFinished | None = None  # the focused run's end, once all have ended
        self._recent: dict[int, deque[CaseFinished]] = {}  # slot -> its latest rows
        self._retry_until: float | None = None
        self._last_retry: Retrying | None = None
        self._stop_asked = False  # stop() came before the engine existed
        self._case_width = CASE_WIDTH
        self._answers: dict[str, Evaluation] = {}  # by row key, for the rows in the table

    @property
    def active(self) -> bool:
        return self.state in ("starting", "running", "stopping")

    @property
    def tally(self) -> RunTally:
        """The focused run's tally."""
        return self.tallies.setdefault(self.focus_slot, RunTally())

    @property
    def run_id(self) -> int | None:
        """The focused run's id."""
        return self.run_ids.get(self.focus_slot)

    def compose(self) -> ComposeResult:
        yield Header()
        runs: DataTable[Text | str] = DataTable(id="matrix-table", cursor_type="row")
        runs.border_title = "Runs (highlight one to follow its cases)"
        yield runs
        yield RunStats(id="run-stats")
        yield Static(id="retry-line")
        with Horizontal(id="run-panes"):
            table: DataTable[Text | str] = DataTable(id="run-table", cursor_type="row")
            table.border_title = "Cases"
            yield table
            with VerticalScroll(id="current-pane") as pane:
                pane.border_title = "Current case"
                yield Static(id="current-case")
                yield Static(id="last-explanation")
        yield Static(id="run-summary")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"run: {inert_line(self.settings.model)}"
        table = self.query_one("#run-table", DataTable)
        table.add_columns("#", "case", "expected", "actual", "outcome", "latency")
        matrix = self.query_one("#matrix-table", DataTable)
        matrix.add_columns("run", "model", "prompt", "progress", "accuracy", "status")
        table.focus()  # the list of runs shows (and takes the focus) only for several runs
        self.query_one("#retry-line").display = False
        self.query_one("#run-summary").display = False
        self._redraw_stats()
        self.set_interval(1.0, self._tick)
        self.run_engine()

    # --- the worker -----------------------------------------------------------------

    @work(exclusive=True, group="eval", exit_on_error=False)
    async def run_engine(self) -> None:
        settings = self.settings
        try:
            resolved = await resolve_matrix_defaults(
                settings, self.secbench.cache_dir, fetch=not self.secbench.offline_catalog
            )
            plan = await asyncio.to_thread(plan_matrix, settings, True, resolved)
        except Exception as exc:
            self.post_message(RunFailed(describe_error(exc)))
            return
        try:
            store = await self.secbench.store()
        except Exception as exc:
            await plan.aclose()
            self.post_message(RunFailed(describe_error(exc)))
            return
        self.planned = plan.runs
        self.matrix = Matrix(plan.runs, store)
        self._draw_matrix()
        if self._stop_asked:
            self.matrix.stop()
        try:
            async for tagged in self.matrix.events():
                self._post_event(tagged.event, tagged.slot)
        finally:
            await plan.aclose()

    def _post_event(self, event: object, slot: int = 0) -> None:
        if isinstance(event, RunStarted):
            self.post_message(RunBegan(event, slot))
        elif isinstance(event, CaseFinished):
            self.post_message(RowsArrived([event], slot))
        elif isinstance(event, CaseStarted):
            self.post_message(CaseBegan(event, slot))
        elif isinstance(event, Retrying):
            self.post_message(RetryWaiting(event, slot))
        elif isinstance(event, RunFinished):
            self.post_message(RunEnded(event, slot))

    # --- the runs of the matrix ---------------------------------------------------------

    def _matrix_cells(self, slot: int) -> tuple[str | Text, ...]:
        run = self.planned[slot]
        tally = self.tallies.get(slot) or RunTally()
        ended = self.ended.get(slot)
        status = ended.status if ended else ("running" if slot in self.run_ids else "waiting")
        graded = sum(tally.counts.values())
        accuracy = tally.counts.get("correct", 0) / graded if graded else None
        return (
            str(self.run_ids.get(slot, "")),
            plain_line(inert_line(run.model)[:34]),
            plain_line(inert_line(run.prompt)[:20]),
            f"{tally.done}/{tally.total}" if tally.total else "-",
            fmt.pct(accuracy),
            Text(
                status, style=fmt.OUTCOME_STYLES.get("correct", "") if status == "completed" else ""
            ),
        )

    def _draw_matrix(self) -> None:
        """The list of runs: shown when the plan has more than one."""
        table = self.query_one("#matrix-table", DataTable)
        if len(self.planned) < 2:
            return
        table.display = True
        for slot in range(len(self.planned)):
            self.tallies.setdefault(slot, RunTally())
            table.add_row(*self._matrix_cells(slot), key=str(slot))
        table.focus()

    def _update_matrix_row(self, slot: int) -> None:
        if len(self.planned) < 2:
            return
        table = self.query_one("#matrix-table", DataTable)
        for column, value in enumerate(self._matrix_cells(slot)):
            table.update_cell_at(Coordinate(slot, column), value)

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
        self.query_one("#last-explanation", Static).update("")
        if self.planned:
            self.sub_title = f"run: {inert_line(self.planned[slot].label)}"
        self._redraw_stats()

    # --- drawing events ---------------------------------------------------------------

    def on_run_began(self, message: RunBegan) -> None:
        event = message.event
        self.run_ids[message.slot] = event.run_id
        self.tallies.setdefault(message.slot, RunTally()).start(event)
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
                title=f"{len(event.skipped)} case files skipped",
                severity="warning",
                timeout=8,
            )
        self._redraw_stats()

    def on_case_began(self, message: CaseBegan) -> None:
        if message.slot != self.focus_slot:
            return
        case = message.event.case
        self.query_one("#current-case", Static).update(
            Group(
                Text.assemble(
                    ("case ", "dim"),
                    (inert_line(case.case_id), "bold"),
                    (f"  ({inert_line(case.app)})", "dim"),
                ),
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
                ),
            )
        )

    def on_rows_arrived(self, message: RowsArrived) -> None:
        recent = self._recent.setdefault(message.slot, deque(maxlen=MAX_ROWS))
        recent.extend(message.events)
        if message.slot != self.focus_slot:
            tally = self.tallies.setdefault(message.slot, RunTally())
            for event in message.events:
                tally.add(event)
            self._update_matrix_row(message.slot)
            return
        table = self.query_one("#run-table", DataTable)
        follow = table.cursor_row >= table.row_count - 2
        if message.events:
            vdb = message.events[0].evaluation.case.kind.value == "vuldetectbench"
            scrollbar = self.tally.total >= table.size.height  # the header takes a line
            others = other_widths(self.tally.total, vdb, scrollbar)
            self._case_width = fmt.fitting(table.size.width, others, CASE_WIDTH)
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
        self._redraw_stats()

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
        repeat = f" #{ev.repeat + 1}" if ev.repeat else ""
        return (
            str(event.done),
            plain_line(fmt.tail(inert_line(ev.case.case_id) + repeat, self._case_width)),
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
        if message.slot != self.focus_slot:
            self.tallies.setdefault(message.slot, RunTally()).retry(message.event)
            return
        self._retry_until = time.monotonic() + message.event.notice.wait_seconds
        self.tally.retry(message.event)
        self._draw_retry(message.event)
        self._redraw_stats()

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
            self._redraw_stats()

    def on_run_ended(self, message: RunEnded) -> None:
        self.ended[message.slot] = message.event
        self.tallies.setdefault(message.slot, RunTally()).ended = time.monotonic()
        self._update_matrix_row(message.slot)
        if message.event.status == "aborted" and len(self.planned) > 1:
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
        self.state = worst_status([e.status for e in self.ended.values()])
        self._retry_until = None
        self.query_one("#retry-line").display = False
        summary = self.query_one("#run-summary", Static)
        summary.update(
            Text.assemble(
                summary_text(event) if len(self.ended) == 1 else matrix_text(self.ended),
                ("\nr browse results · e export the report · n new run · q quit", "bold"),
            )
        )
        summary.display = True
        if event.status == "aborted" and len(self.ended) == 1:
            self.notify(
                event.message or "the run was aborted",
                title="run aborted",
                severity="error",
                timeout=15,
            )
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
        self.tally.ended = time.monotonic()
        self._retry_until = None
        self.query_one("#retry-line").display = False
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
        if self.matrix is not None:
            self.matrix.stop()
        self.state = "stopping"

    def action_request_stop(self) -> None:
        if self.state == "stopping":
            self.notify("stopping: waiting for the cases in flight", timeout=3)
            return

        def answered(yes: bool | None) -> None:
            if yes and self.active:
                self.stop()
                self.notify(
                    f"stopping: the cases in flight finish first (up to {STOP_GRACE:g}s; any "
                    "still waiting then are asked again when the run is resumed)",
                    timeout=6,
                )

        self.app.push_screen(
            ConfirmScreen(
                "Stop the run?\n\nCases in flight get a few seconds to finish and are saved; "
                "every finished case is kept: the same run started again reuses them.",
                yes="Stop",
                no="Keep running",
            ),
            answered,
        )

    def action_new_run(self) -> None:
        if not self.active:
            self.dismiss()

    def export_selection(self) -> list[int]:
        return sorted(self.run_ids.values())
