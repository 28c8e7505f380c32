"""Run: the evaluation streams in, case by case, from the same engine `--no-ui` uses.

The engine runs in the `eval` worker group; the worker only turns engine events into
messages, and the handlers here draw them. The table keeps the latest `MAX_ROWS` cases (every
case is in the database; the results screen pages through them all).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.notifications import Notification, Notify
from textual.reactive import reactive
from textual.widgets import DataTable, Footer, Header, Static
from textual.worker import Worker, WorkerState

from secbench_tui.config import Settings
from secbench_tui.core.engine import Engine
from secbench_tui.core.events import CaseFinished, CaseStarted, Retrying, RunFinished, RunStarted
from secbench_tui.core.models import Evaluation
from secbench_tui.core.untrusted import inert_line
from secbench_tui.session import build_spec, load_suite, make_provider
from secbench_tui.tui import format as fmt
from secbench_tui.tui.messages import (
    CaseBegan,
    RetryWaiting,
    RowsArrived,
    RunBegan,
    RunEnded,
    RunFailed,
)
from secbench_tui.tui.screens.base import BaseScreen, describe_error
from secbench_tui.tui.screens.confirm import ConfirmScreen
from secbench_tui.tui.widgets.case_detail import code_language
from secbench_tui.tui.widgets.run_stats import RunStats, RunTally

MAX_ROWS = 1000
CASE_WIDTH = 10_000  # no cap: the case column takes what the other columns leave
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
    text = Text.assemble((f"Run {event.run_id} {event.status}", "bold"), f": {s.get('model')}")
    if event.message:
        text.append(f"\n  {event.message}")
    if "cases" in s:
        text.append(
            f"\n  cases {s['cases']}  correct {s['correct']}  wrong {s['wrong']}"
            f"  unparsed {s['unparsed']}  errors {s['errors']}"
        )
    answered = s.get("cases", 0) - s.get("errors", 0)
    if "cases" in s and not answered:
        text.append("\n  accuracy - (no case was answered: every request failed)")
    elif s.get("accuracy") is not None:
        low, high = s["accuracy_ci"]
        text.append(
            f"\n  accuracy {fmt.pct(s['accuracy'])} (95% CI {fmt.pct(low)}-{fmt.pct(high)})"
            f"  balanced {fmt.pct(s.get('balanced_accuracy'))}"
        )
        for app, stats in s.get("apps", {}).items():
            text.append(f"\n    {app}: {fmt.pct(stats['accuracy'])} of {stats['cases']}")
    for task, metrics in (s.get("vuldetectbench") or {}).items():
        if isinstance(metrics, dict):
            shown = "  ".join(
                f"{k} {fmt.pct(v)}" for k, v in metrics.items() if isinstance(v, float)
            )
            text.append(f"\n    {task}: {shown}")
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
    return text


class RunScreen(BaseScreen):
    BINDINGS = [
        Binding("ctrl+c", "request_stop", "Stop", id="run.stop", priority=True),
        Binding("escape", "request_stop", "Stop", id="run.stop_escape"),
        Binding("escape", "new_run", "Back to setup", id="run.back"),
        Binding("n", "new_run", "New run", id="run.new"),
        Binding("m", "maximize_pane", "Maximise", id="run.maximise"),
    ]

    state: reactive[str] = reactive("starting")

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        self.engine: Engine | None = None
        self.run_id: int | None = None
        self.tally = RunTally()
        self.finished: RunFinished | None = None
        self._retry_until: float | None = None
        self._last_retry: Retrying | None = None
        self._stop_asked = False  # stop() came before the engine existed
        self._case_width = 12
        self._case_column: Any = None  # the case column's key
        self._vdb = False
        self._answers: dict[str, Evaluation] = {}  # by row key, for the rows in the table
        self._stopping_notice: Notification | None = None

    @property
    def active(self) -> bool:
        return self.state in ("starting", "running", "stopping")

    def compose(self) -> ComposeResult:
        yield Header()
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
        self.sub_title = f"run: {self.settings.model}"
        table = self.query_one("#run-table", DataTable)
        keys = table.add_columns("#", "case", "expected", "actual", "outcome", "latency")
        self._case_column = keys[1]
        self.tally.clock = self.secbench.clock
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
            suite = await asyncio.to_thread(load_suite, settings)
            provider = make_provider(settings)
        except Exception as exc:
            self.post_message(RunFailed(describe_error(exc)))
            return
        try:
            store = await self.secbench.store()
        except Exception as exc:
            await provider.aclose()
            self.post_message(RunFailed(describe_error(exc)))
            return
        self.engine = Engine(build_spec(settings, suite), provider, store)
        if self._stop_asked:
            self.engine.stop()
        try:
            async for event in self.engine.events():
                if isinstance(event, RunStarted):
                    self.post_message(RunBegan(event))
                else:
                    self._post_event(event)
        finally:
            await provider.aclose()

    def _post_event(self, event: object) -> None:
        if isinstance(event, CaseFinished):
            self.post_message(RowsArrived([event]))
        elif isinstance(event, CaseStarted):
            self.post_message(CaseBegan(event))
        elif isinstance(event, Retrying):
            self.post_message(RetryWaiting(event))
        elif isinstance(event, RunFinished):
            self.post_message(RunEnded(event))

    # --- drawing events ---------------------------------------------------------------

    def on_run_began(self, message: RunBegan) -> None:
        event = message.event
        self.run_id = event.run_id
        self.tally.start(event)
        if self.state == "starting":
            self.state = "running"
        what = "resumed" if event.resumed else "started"
        self.notify(
            f"run {event.run_id} {what}: {event.total} cases, {event.pending} to ask"
            + (f", {event.reused} reused" if event.reused else ""),
            timeout=4,
        )
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
        case = message.event.case
        self.query_one("#current-case", Static).update(
            Group(
                Text.assemble(
                    ("case ", "dim"),
                    (case.case_id, "bold"),
                    (f"  ({case.app})", "dim"),
                ),
                Syntax(
                    case.code,
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
        self._redraw_stats()

    def _fitting_case_width(self) -> int:
        table = self.query_one("#run-table", DataTable)
        scrollbar = self.tally.total >= table.size.height  # the header takes a line
        others = other_widths(self.tally.total, self._vdb, scrollbar)
        return fmt.fitting(table.size.width, others, CASE_WIDTH)

    def on_resize(self) -> None:
        self.call_after_refresh(self._refit_cases)

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
        return Text(fmt.tail(inert_line(ev.case.case_id) + repeat, self._case_width))

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
            ev.case.expected[:VERDICT_WIDTH],
            (ev.scored.actual or "-")[:VERDICT_WIDTH],
            Text(outcome, style=fmt.OUTCOME_STYLES[outcome]),
            fmt.latency(ev.completion.latency_ms),
        )

    def _show_explanation(self, ev: Evaluation, latest: bool) -> None:
        text = Text.assemble(
            ("\nlast answer " if latest else "\nanswer (highlighted row) ", "dim"),
            (ev.case.case_id, "bold"),
            ("  ", ""),
            (ev.scored.outcome.value, fmt.OUTCOME_STYLES[ev.scored.outcome.value]),
            (f"\nexpected {ev.case.expected[:60]}  actual {(ev.scored.actual or '-')[:60]}", "dim"),
            "\n",
            ev.completion.error or ev.scored.explanation or ev.completion.text or "(no reply)",
        )
        self.query_one("#last-explanation", Static).update(text)

    def on_retry_waiting(self, message: RetryWaiting) -> None:
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
                (f" · {n.case_id}", "dim"),
            )
        else:
            text = Text.assemble(
                ("retrying", "bold yellow"),
                f" in {left:.0f}s (attempt {n.attempt}): {n.reason[:120]}",
                (f" · {n.case_id}", "dim"),
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
        event = message.event
        self.finished = event
        self.tally.ended = self.tally.clock()
        self._end_stopping_notice()
        self.state = event.status
        self._retry_until = None
        self.query_one("#retry-line").display = False
        summary = self.query_one("#run-summary", Static)
        summary.update(
            Text.assemble(
                summary_text(event),
                ("\nr browse results · e export the report · n new run · q quit", "bold"),
            )
        )
        summary.display = True
        if event.status == "aborted":
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
        self.tally.ended = self.tally.clock()
        self._end_stopping_notice()
        self._retry_until = None
        self.query_one("#retry-line").display = False
        summary = self.query_one("#run-summary", Static)
        summary.update(
            Text.assemble((headline, "bold red"), reason, ("\nescape goes back to setup", "bold"))
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
        if self.engine is not None:
            self.engine.stop()
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

    def action_request_stop(self) -> None:
        if self.state == "stopping":
            self.notify_stopping("stopping: waiting for the cases in flight")
            return

        def answered(yes: bool | None) -> None:
            if yes and self.active:
                self.stop()
                retrying = self._retry_until is not None
                waiting = " (one waiting to retry finishes its wait)" if retrying else ""
                self.notify_stopping(f"stopping: the cases in flight finish first{waiting}")

        self.app.push_screen(
            ConfirmScreen(
                "Stop the run?\n\nCases in flight finish and are saved; every finished case "
                "is kept: the same run started again reuses them.",
                yes="Stop",
                no="Keep running",
            ),
            answered,
        )

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
        return [self.run_id] if self.run_id is not None else []
