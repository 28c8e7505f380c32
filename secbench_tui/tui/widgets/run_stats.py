"""The running tally of a run drawn: progress, ETA, accuracy, tokens and cost so far."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import ProgressBar

from secbench_tui.tui import format as fmt
from secbench_tui.tui.tally import RunTally
from secbench_tui.tui.widgets.live_line import LiveLine

GAP = "   "  # between the tally's groups


def tally_groups(tally: RunTally) -> list[Text]:
    """The tally in groups that are never broken across lines: accuracy, the outcomes, tokens,
    cost, reuse, concurrency and retries."""
    c = tally.counts
    groups = [
        Text.assemble(
            ("accuracy ", "dim"), (fmt.pct(tally.accuracy), "bold"), (f" of {tally.graded}", "dim")
        ),
        Text.assemble(
            ("correct ", "dim"),
            (str(c["correct"]), fmt.OUTCOME_STYLES["correct"]),
            ("  wrong ", "dim"),
            (str(c["wrong"]), fmt.OUTCOME_STYLES["wrong"]),
            ("  unparsed ", "dim"),
            (str(c["unparsed"]), fmt.OUTCOME_STYLES["unparsed"]),
            ("  errors ", "dim"),
            (str(c["error"]), fmt.OUTCOME_STYLES["error"]),
        ),
        Text.assemble(
            ("tokens ", "dim"),
            f"{fmt.tokens(tally.prompt_tokens)} in / {fmt.tokens(tally.completion_tokens)} out",
        ),
        Text.assemble(("cost ", "dim"), fmt.money(tally.cost)),
    ]
    if tally.reused:
        groups.append(Text(f"reused {tally.reused}", style="dim"))
    if tally.concurrency > 1 or tally.retries:
        groups.append(
            Text.assemble(
                ("concurrency ", "dim"),
                f"{tally.limit}/{tally.concurrency}",
                ("  retries ", "dim"),
                (str(tally.retries), "bold yellow" if tally.retries else ""),
            )
        )
    return groups


def pack(groups: Sequence[Text], width: int) -> Text:
    """Groups on as few lines as `width` cells allow, a line breaking only between groups,
    so a narrow terminal never cuts `tokens 1,234 in / 56 out` in two."""
    packed = Text(no_wrap=True, overflow="ellipsis")
    used = 0
    for group in groups:
        size = group.cell_len
        if used and used + len(GAP) + size > width:
            packed.append("\n")
            used = 0
        elif used:
            packed.append(GAP)
            used += len(GAP)
        packed.append_text(group)
        used += size
    return packed


class RunStats(Vertical):
    """Progress bar with counts and ETA, then accuracy, outcomes, tokens and cost."""

    _groups: list[Text] | None = None  # the tally last shown, packed again on a resize

    def compose(self) -> ComposeResult:
        with Horizontal(id="progress-row"):
            yield ProgressBar(show_eta=False, id="progress")
            yield LiveLine(id="progress-text")
        yield LiveLine(id="tally")

    def show(self, tally: RunTally, state: str) -> None:
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=max(1, tally.total), progress=tally.done)
        if tally.ended is not None:
            eta: str = tally.state  # done, stopped or aborted: never `done` for a stopped run
        elif tally.started is None:
            eta = "queued"
        else:
            eta = f"ETA {fmt.clock(tally.eta)}"
        self.query_one("#progress-text", LiveLine).redraw(
            Text.assemble(
                (f" {tally.done}/{tally.total}", "bold"),
                # an ended run's state is said once, after its time
                f"  {eta + '  ' if eta != state else ''}elapsed {fmt.clock(tally.elapsed)}  ",
                (state, "bold yellow" if state != "running" else "bold green"),
            )
        )
        self._groups = tally_groups(tally)
        self._pack()

    def on_resize(self) -> None:
        self._pack()

    def _pack(self) -> None:
        if self._groups is not None:
            width = self.size.width or self.app.size.width - 2  # the content: padding out
            self.query_one("#tally", LiveLine).redraw(pack(self._groups, width))
