"""The run screen's table of cases: the latest `scoreboard.MAX_ROWS` finished cases of the run
the screen follows, newest last, the cursor following new rows until it is moved up. Every case
is in the database; the results screen pages through them all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from secbench_tui.core.models import Evaluation
from secbench_tui.core.run.events import CaseFinished
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui import format as fmt
from secbench_tui.tui import scoreboard
from secbench_tui.tui.case_labels import ShownLabels
from secbench_tui.tui.plain import plain_line
from secbench_tui.tui.scoreboard import Scoreboard

CASE_WIDTH = 10_000  # no cap: the case column takes what the other columns leave
VERDICT_WIDTH = 10  # expected and actual are cut here (VulDetectBench answers are long)


def other_widths(total: int, vuldetectbench: bool, scrollbar: bool) -> int:
    """Cells the run table's columns other than the case take: #, expected, actual, outcome,
    latency, a cell of padding each side of each column, and the scrollbar if there is one."""
    verdicts = 2 * VERDICT_WIDTH if vuldetectbench else len("expected") + len("actual")
    numbers = len(str(max(total, 1)))
    return numbers + verdicts + len("unparsed") + len("latency") + 6 * 2 + 2 * scrollbar


class LatestCases(DataTable[Text | str]):
    """A row per finished case (keyed by its number in the run), its answer kept by key."""

    def __init__(self, board: Scoreboard, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self.board = board
        self.case_width = 12
        self._case_column: ColumnKey | None = None
        self._vuldetectbench = False  # long verdicts: expected and actual are cut
        self._answers: dict[str, Evaluation] = {}  # by row key, for the rows shown
        self._labels = ShownLabels()  # of the cases shown, told apart in the case column
        self.border_title = "Cases"

    def on_mount(self) -> None:
        keys = self.add_columns("#", "case", "expected", "actual", "outcome", "latency")
        self._case_column = keys[1]

    def label(self, case_id: str) -> str:
        """The case column's label of `case_id` (one of the cases shown)."""
        return self._labels[case_id]

    def answer(self, key: object) -> Evaluation | None:
        return self._answers.get(str(key))

    def add(self, events: Sequence[CaseFinished]) -> Evaluation | None:
        """New rows at the end (past `scoreboard.MAX_ROWS`, the oldest go, as on the board).
        Returns the newest answer when the cursor follows the rows (it was at the end), None
        when it was moved up."""
        follow = self.cursor_row >= self.row_count - 2
        if events:
            kind = events[0].evaluation.case.kind.value
            self._vuldetectbench = kind == "vuldetectbench"
            self.case_width = self._fitting_case_width()
        self._add_rows(events)
        while self.row_count > scoreboard.MAX_ROWS:
            oldest = next(iter(self.rows))
            self.remove_row(oldest)
            self._answers.pop(str(oldest.value), None)
        if follow and self.row_count:
            self.move_cursor(row=self.row_count - 1, animate=False)
            if events:
                return events[-1].evaluation
        return None

    def show_run(self, recent: Iterable[CaseFinished]) -> None:
        """Another run's latest rows replace these, the cursor on the newest."""
        self.clear()
        self._answers.clear()
        self._labels = ShownLabels()
        self._add_rows(recent)
        if self.row_count:
            self.move_cursor(row=self.row_count - 1, animate=False)

    def _add_rows(self, events: Iterable[CaseFinished]) -> None:
        events = list(events)
        drawn = dict(self._answers)
        self._answers.update((str(event.done), event.evaluation) for event in events)
        self._relabel(drawn)
        for event in events:
            self.add_row(*self._row(event), key=str(event.done))

    def _relabel(self, drawn: dict[str, Evaluation]) -> None:
        """Labels for every case shown at the case column's width; the rows in `drawn` whose
        label changed (a new row would otherwise look like one of them) are drawn again."""
        repeats = max((len(_repeat(ev)) for ev in self._answers.values()), default=0)
        changed = self._labels.update(
            (ev.case.case_id for ev in self._answers.values()), self.case_width - repeats
        )
        if not changed or self._case_column is None:
            return
        for key, ev in drawn.items():
            if ev.case.case_id in changed:
                self.update_cell(key, self._case_column, self._case_cell(ev), update_width=True)

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

    def _case_cell(self, ev: Evaluation) -> Text:
        return Text(self._labels[ev.case.case_id] + _repeat(ev))

    def _fitting_case_width(self) -> int:
        total = self.board.tally().total
        scrollbar = total >= self.size.height  # the header takes a line
        others = other_widths(total, self._vuldetectbench, scrollbar)
        return fmt.fitting(self.size.width, others, CASE_WIDTH)

    def on_resize(self) -> None:
        """Resized (with the screen, or by maximising a pane or showing the current case):
        once laid out, the case column takes the new free width."""
        self.call_after_refresh(self.refit)

    def refit(self) -> None:
        """The case column takes the free width: its cells are cut again."""
        width = self._fitting_case_width()
        if width == self.case_width or self._case_column is None:
            return
        self.case_width = width
        self._relabel({})
        cells = {key: self._case_cell(evaluation) for key, evaluation in self._answers.items()}
        column = self.columns[self._case_column]
        # as wide as the cells below, at once: measured only when the table is idle, a frame
        # drawn before would keep them cut
        column.content_width = max([column.label.cell_len, *(c.cell_len for c in cells.values())])
        for key, cell in cells.items():
            self.update_cell(key, self._case_column, cell, update_width=True)


def _repeat(ev: Evaluation) -> str:
    """` #2` after the case of a repeat's second try (nothing on the first)."""
    return f" #{ev.repeat + 1}" if ev.repeat else ""
