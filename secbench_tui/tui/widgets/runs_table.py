"""The results screen's runs: every run in the database, newest first, each with its P-C, right
reason and accuracy (from its stored answers, by the computation the summary and the report
read: `tui.figure_book`), marks for export and comparison, and names cut to the width the
table has.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.widgets import DataTable

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.results.summary import RunSummary
from secbench_tui.core.store.runs import RunRecord
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui import format as fmt
from secbench_tui.tui.errors import Guarded, WorkReported
from secbench_tui.tui.figure_book import FigureBook, RunAnswers
from secbench_tui.tui.plain import plain_line
from secbench_tui.tui.widgets.results_table import shrink_columns, widen_columns


def suite_label(run: RunRecord) -> str:
    """What a run asked: `VDB task1,3`, or the suite folder and how many apps were chosen."""
    settings = run.settings
    if run.suite_kind == "vuldetectbench":
        tasks = settings.tasks or []
        return "VDB " + ",".join(f"task{t}" if i == 0 else str(t) for i, t in enumerate(tasks))
    bundled = Path(run.suite_path) == bundled_cases_dir().resolve()
    name = "bundled" if bundled else Path(run.suite_path).name or run.suite_path
    apps = settings.apps
    return f"{name} ({len(apps)} apps)" if apps else name


RUN_COLUMNS: tuple[str, ...] = (" ", "run", "model", "prompt", "suite", "started", "status")
RUN_COLUMNS += ("cases", "P-C", "reason", "accuracy", "cost")
NARROW_RUNS = 110  # under this many columns the runs table leaves out the suite and start
# cells the runs table's columns other than model, prompt and suite take: the mark, an id,
# a start time, a status, counts, P-C, right reason, accuracy and cost, padding, the border
# and a scrollbar
RUN_OTHERS = 1 + 4 + len("11-26 15:01") + len("completed") + len("999/999") + len("100.0%")
RUN_OTHERS += len("100.0%") + len("accuracy")
RUN_OTHERS += len("$0.12") + 2 * len(RUN_COLUMNS) + 2 + 2
NARROW_OTHERS = RUN_OTHERS - len("11-26 15:01") - 2 - 2


def run_columns(width: int) -> tuple[str, ...]:
    if width >= NARROW_RUNS:
        return RUN_COLUMNS
    return tuple(c for c in RUN_COLUMNS if c not in ("suite", "started"))


def name_widths(width: int, wanted: tuple[int, int, int] = (0, 0, 0)) -> tuple[int, int, int]:
    """Model, prompt and suite widths for a runs table `width` cells wide: names that fit are
    whole, longer ones lose their middle (the highlighted run's are whole in the status).
    `wanted`: the longest model, prompt and suite shown; when all three fit, each column gets
    what it needs (and the model what is left), else the shares below."""
    if width < NARROW_RUNS:
        free = max(20, width - NARROW_OTHERS)
        model, prompt = wanted[0], max(wanted[1], len("prompt"))
        if model and model + prompt <= free:
            return free - prompt, prompt, 0
        prompt = max(8, min(16, free // 3))
        return free - prompt, prompt, 0
    free = max(24, width - RUN_OTHERS)
    prompt, suite = max(wanted[1], len("prompt")), max(wanted[2], len("suite"))
    if wanted[0] and wanted[0] + prompt + suite <= free:
        return free - prompt - suite, prompt, suite
    prompt = max(6, min(20, free // 4))
    suite = max(6, min(24, free // 4))
    return max(10, free - prompt - suite), prompt, suite


def mark_cell(marked: bool) -> Text:
    return Text("✓" if marked else " ", style="bold green")


def run_cells(
    run: RunRecord,
    marked: bool,
    widths: tuple[int, int, int] = (34, 20, 24),
    figures: RunSummary | None = None,
) -> tuple[str | Text, ...]:
    """A run's row; with no suite width (a narrow terminal), without suite and start time.
    `figures`: the run's (`figure_book`), P-C (the figure the tool leads with), right reason
    and accuracy; `…` while they are computed, `n/a` where one does not apply."""
    model, prompt, suite = widths
    where: tuple[str | Text, ...] = ()
    if suite:
        started = run.started_at[5:16].replace("T", " ")  # the year is in the detail
        where = (plain_line(fmt.middle(inert_line(suite_label(run)), suite)), started)
    lead: tuple[str, str, str] = ("…", "…", "…")
    if figures is not None:
        pairs, reason = figures.pairwise, figures.reason
        lead = (
            fmt.pct(pairs.p_c if pairs is not None and pairs.pairs else None),
            fmt.pct(reason.right_rule if reason is not None and reason.bad_cases else None),
            fmt.pct(figures.accuracy),
        )
    return (
        mark_cell(marked),
        str(run.id),
        plain_line(fmt.middle(inert_line(run.model_name), model)),
        plain_line(fmt.middle(inert_line(run.prompt_name or "-"), prompt)),
        *where,
        run.status,
        f"{run.finished}/{run.total_cases}",
        Text(lead[0], style="bold"),
        lead[1],
        lead[2],
        fmt.money(run.cost if run.cost else None),
    )


class RunsTable(Guarded, WorkReported, DataTable[Text | str]):
    """A row per run (keyed by its id); `marked` are the runs marked with space (the app's:
    they stay marked while the app is open, whichever screen shows the runs)."""

    def __init__(
        self,
        store: Callable[[], Awaitable[RunAnswers]],
        book: FigureBook,
        marked: set[int],
        **kwargs: Any,
    ) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self.store = store
        self.book = book
        self.runs: dict[int, RunRecord] = {}
        self.marked = marked
        self._columns: tuple[str, ...] = ()  # the columns shown (a narrow table has fewer)
        self._width = -1  # the width the rows were last drawn at
        self.border_title = "Runs (Enter shows a run's results, space marks it for export)"

    def show(self, runs: list[RunRecord]) -> None:
        self.runs = {r.id: r for r in runs}
        self.draw()

    def first_screen(self, runs: Sequence[RunRecord]) -> list[RunRecord]:
        """Those of `runs` the table shows first, newest first (their figures are read before
        the table is drawn, so what shows first never shows `…`)."""
        ordered = sorted(runs, key=lambda r: r.id, reverse=True)
        return ordered[: max(1, self.size.height or self.screen.size.height)]

    @property
    def running(self) -> bool:
        """Whether a run shown is still being written (by this app or by others: another
        process, the workers of a shared run), so the screen follows the store."""
        return any(r.status == "running" for r in self.runs.values())

    def draw(self) -> None:
        """Every run's row again, at the table's width; the figures of those whose results
        changed are computed after."""
        row = self.cursor_row
        self.clear()
        width = self.size.width or self.screen.size.width
        self._width = self.size.width
        columns = run_columns(width)
        if columns != self._columns:  # a narrow terminal leaves some out
            self.clear(columns=True)
            self.add_columns(*columns)
            self._columns = columns
        scrollbar = len(self.runs) >= self.size.height - 3  # its border and header
        shown = self.runs.values()
        wanted = (
            max((len(inert_line(r.model_name)) for r in shown), default=0),
            max((len(inert_line(r.prompt_name or "-")) for r in shown), default=0),
            max((len(inert_line(suite_label(r))) for r in shown), default=0),
        )
        widths = name_widths(width + (0 if scrollbar else 2), wanted)
        rows: dict[str, tuple[str | Text, ...]] = {}
        for run in sorted(self.runs.values(), key=lambda r: r.id, reverse=True):
            figures = self.book.get(run)
            rows[str(run.id)] = run_cells(run, run.id in self.marked, widths, figures)
        shrink_columns(self)
        widen_columns(self, list(rows.values()))
        for key, cells in rows.items():
            self.add_row(*cells, key=key)
        if self.row_count:
            self.move_cursor(row=min(row, self.row_count - 1), animate=False)
        reading = any(w.group == "figures" and not w.is_finished for w in self.workers)
        if self.book.missing(list(self.runs.values())) and not reading:  # one at a time
            self.read_figures()

    def on_resize(self) -> None:
        """Laid out at another width than its rows were drawn for (they may have been drawn
        before the layout gave it its width, and the names stayed cut to a few letters)."""
        if self.size.width != self._width:
            self.call_after_refresh(self.draw)

    @work(group="figures", exit_on_error=False)
    async def read_figures(self) -> None:
        """The figures of each run whose results changed since they were computed, then the
        runs drawn again."""
        store = await self.store()
        while missing := self.book.missing(list(self.runs.values())):
            await self.book.read(store, missing)
        self.draw()

    def run(self, run_id: int) -> RunRecord | None:
        return self.runs.get(run_id)

    def highlighted(self) -> int | None:
        """The run id under the cursor."""
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return int(key) if key is not None else None

    def select(self, run_id: int | None) -> None:
        """The cursor on that run, if it is listed."""
        if run_id is not None and str(run_id) in self.rows:
            self.move_cursor(row=self.get_row_index(str(run_id)), animate=False)

    def toggle_mark(self) -> None:
        """The highlighted run marked, or no longer."""
        run_id = self.highlighted()
        if run_id is None:
            return
        self.marked.symmetric_difference_update({run_id})
        column = self.ordered_columns[0].key
        self.update_cell(str(run_id), column, mark_cell(run_id in self.marked))
