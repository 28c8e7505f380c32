"""How the runs ended, under the run screen: the summary `--no-ui` prints (core.results.summary
renders its lines once, for both front ends; the app styles their tags), or why they could not
start. Hidden while the runs go on.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from secbench_tui.core.results.lines import Line
from secbench_tui.core.results.summary import matrix_lines, summary_lines
from secbench_tui.core.run.events import RunFinished
from secbench_tui.core.untrusted import inert
from secbench_tui.tui import format as fmt

# How the app styles the summary's tags.
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


class RunEnd(Static):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.display = False

    def ended(self, ended: dict[int, RunFinished], followed: RunFinished) -> None:
        """One run: its summary (`followed`); several: a line each."""
        self.update(
            Text.assemble(
                summary_text(followed) if len(ended) == 1 else matrix_text(ended),
                ("\nr browse results · e export the report · n new run · q quit", "bold"),
            )
        )
        self.display = True

    def failed(self, headline: str, reason: str) -> None:
        self.update(
            Text.assemble(
                (headline, "bold red"), inert(reason), ("\nescape goes back to setup", "bold")
            )
        )
        self.display = True
