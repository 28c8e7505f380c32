"""The runs of a matrix (one per model x prompt) on the run screen: a table with a row per
run and its progress, and one line for the whole matrix. Both are shown only when the plan
has more than one run; highlighting a run there makes the screen follow its cases.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui import format as fmt
from secbench_tui.tui.plain import plain_line
from secbench_tui.tui.scoreboard import Scoreboard
from secbench_tui.tui.widgets.live_line import LiveLine
from secbench_tui.tui.widgets.results_table import shrink_columns, widen_columns

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


class MatrixTable(DataTable[Text | str]):
    """A row per run of the plan: its id, names, state, progress, elapsed time, accuracy."""

    def __init__(self, board: Scoreboard, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self.board = board
        self._names_width: tuple[int, int] | None = None  # the names' widths drawn last
        self.border_title = "Runs (highlight one to follow its cases)"

    def on_mount(self) -> None:
        self.add_columns(*MATRIX_COLUMNS)

    def show_plan(self) -> None:
        """The runs planned, one row each, and the focus (only when there are several)."""
        if not self.board.several:
            return
        self.display = True
        for slot in range(len(self.board.planned)):
            self.add_row(*self._cells(slot), key=str(slot))
        self.focus()

    def update_run(self, slot: int, cells: tuple[str | Text, ...] | None = None) -> None:
        if not self.board.several:
            return
        for column, value in enumerate(cells or self._cells(slot)):
            self.update_cell_at(Coordinate(slot, column), value, update_width=True)

    def _cells(self, slot: int) -> tuple[str | Text, ...]:
        run = self.board.planned[slot]
        tally = self.board.tally(slot)
        state = tally.state
        if state in ("queued", "running") and self.board.stopping:
            state_cell = Text("stopping", style=STATE_STYLES["stopping"])
        else:
            state_cell = Text(state, style=STATE_STYLES.get(state, ""))
        model_width, prompt_width = self._name_widths()
        return (
            str(self.board.run_ids.get(slot, "")),
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
        planned = self.board.planned
        models = max((len(inert_line(r.model)) for r in planned), default=5)
        prompts = max((len(inert_line(r.prompt)) for r in planned), default=6)
        total = max(self.size.width, self.screen.size.width)
        free = max(16, total - MATRIX_OTHERS)
        prompt = min(prompts, max(6, free // 3))
        model = max(len("model"), min(models, free - prompt))
        return model, max(len("prompt"), prompt)

    def on_resize(self) -> None:
        """Laid out at another width (the screen's own resize comes before its panes are
        laid out again): the names are cut again once it is drawn at the new one."""
        self.call_after_refresh(self.refit)

    def refit(self) -> None:
        """Names are cut to the width: a new width draws every run's row again."""
        if not self.board.several or self.row_count != len(self.board.planned):
            return
        if self._names_width == self._name_widths():
            return
        self._names_width = self._name_widths()
        rows = [self._cells(slot) for slot in range(len(self.board.planned))]
        shrink_columns(self)
        widen_columns(self, rows)
        for slot, cells in enumerate(rows):
            self.update_run(slot, cells)


class MatrixLine(LiveLine):
    """One line for the whole matrix: runs by state, cases, one ETA, elapsed."""

    def __init__(self, board: Scoreboard, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.board = board
        self.display = False

    def draw(self) -> None:
        if self.board.several:
            self.display = True
            self.redraw(matrix_line(self.board))


def matrix_line(board: Scoreboard) -> Text:
    tallies = [board.tally(slot) for slot in range(len(board.planned))]
    states: dict[str, int] = {}
    for tally in tallies:
        states[tally.state] = states.get(tally.state, 0) + 1
    done, total = board.cases()
    text = Text.assemble(("matrix ", "bold"), f"{len(tallies)} runs: ")
    for n, state in enumerate(STATE_ORDER):
        if states.get(state):
            text.append(", " if n and text.plain[-2:] != ": " else "")
            text.append(f"{states[state]} {state}", style=STATE_STYLES.get(state, ""))
    text.append(f"  ·  {done}/{total} cases  ·  ")
    if all(t.status is not None for t in tallies):
        text.append("finished", style="bold")
    else:
        text.append(f"ETA {fmt.clock(board.eta())}", style="bold")
    text.append(f"  ·  elapsed {fmt.clock(board.elapsed())}", style="dim")
    return text
