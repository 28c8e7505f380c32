"""The run screen's pane beside the cases: the case asked last (its code, highlighted), and
under it the latest answer, or the answer of the case highlighted in the table.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from secbench_tui.core.models import Case, Evaluation
from secbench_tui.core.untrusted import inert, inert_line
from secbench_tui.tui import format as fmt
from secbench_tui.tui.widgets.case_detail import code_language


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


def case_view(case: Case) -> Group:
    """The case's id and app over its code, with line numbers."""
    language = code_language(
        {"suite_kind": case.kind.value, "test_file": case.test_file, "code": case.code}
    )
    return Group(
        Text.assemble(
            ("case ", "dim"),
            (inert_line(case.case_id), "bold"),
            (f"  ({inert_line(case.app)})", "dim"),
        ),
        DrawnOnce(
            Syntax(
                inert(case.code),
                language,
                line_numbers=True,
                word_wrap=True,
                background_color="default",
            )
        ),
    )


def answer_view(ev: Evaluation, latest: bool) -> Text:
    """An answer: its case, outcome, verdicts, then the explanation (or error, or reply)."""
    return Text.assemble(
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
        inert(ev.completion.error or ev.scored.explanation or ev.completion.text or "(no reply)"),
    )


class CurrentCase(VerticalScroll):
    """Highlighting a case's code costs more than the rest of a drawing: the case asked last
    is drawn at most every `every` seconds (and at once when the runs end)."""

    def __init__(self, every: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.every = every
        self.border_title = "Current case"
        self._shown: Case | None = None  # the case drawn
        self._asked: Case | None = None  # the latest case asked, drawn by `draw`
        self._pending = False  # a drawing is due
        self._drawn_at = 0.0  # when (time.monotonic)

    def compose(self) -> ComposeResult:
        yield Static(id="current-case")
        yield Static(id="last-explanation")

    def asked(self, case: Case) -> None:
        self._asked = case
        if self._pending:
            return
        wait = self._drawn_at + self.every - time.monotonic()
        if wait <= 0:
            self.draw()
        else:
            self._pending = True
            self.set_timer(wait, self.draw)

    def draw(self) -> None:
        """The case asked last, unless it is drawn already."""
        self._pending = False
        case = self._asked
        if case is None or case is self._shown:
            return
        self._shown = case
        self._drawn_at = time.monotonic()
        self.query_one("#current-case", Static).update(case_view(case))

    def show_answer(self, ev: Evaluation, latest: bool) -> None:
        self.query_one("#last-explanation", Static).update(answer_view(ev, latest))

    def clear(self) -> None:
        """Another run is followed: nothing of this one stays."""
        self.query_one("#current-case", Static).update("")
        self.query_one("#last-explanation", Static).update("")
        self._shown = self._asked = None
