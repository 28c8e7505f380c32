"""The results screen's runs: every run in the database, newest first, each with its P-C
(computed from its stored answers, as the summary and the report compute it), marks for
export and comparison, and names cut to the width the table has.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from rich.text import Text
from textual import work
from textual.widgets import DataTable

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.results.pairwise import pair_figures
from secbench_tui.core.results.reasons import first_answers
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.runs import RunRecord
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui import format as fmt
from secbench_tui.tui.errors import Guarded, WorkReported
from secbench_tui.tui.plain import plain_line
from secbench_tui.tui.widgets.results_table import shrink_columns, widen_columns


class RunAnswers(Protocol):
    """What the runs table reads: a run's answers, for its P-C."""

    async def run_results(self, run_id: int, with_text: bool = True) -> list[ResultRow]: ...


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
RUN_COLUMNS += ("cases", "P-C", "accuracy", "cost")
NARROW_RUNS = 110  # under this many columns the runs table leaves out the suite and start
# cells the runs table's columns other than model, prompt and suite take: the mark, an id,
# a start time, a status, counts, accuracy and cost, padding, the border and a scrollbar
RUN_OTHERS = 1 + 4 + len("11-26 15:01") + len("completed") + len("999/999") + len("100.0%")
RUN_OTHERS += len("accuracy")
RUN_OTHERS += len("$0.12") + 2 * len(RUN_COLUMNS) + 2 + 2
NARROW_OTHERS = RUN_OTHERS - len("11-26 15:01") - 2 - 2


def run_columns(width: int) -> tuple[str, ...]:
    if width >= NARROW_RUNS:
        return RUN_COLUMNS
    return tuple(c for c in RUN_COLUMNS if c not in ("suite", "started"))


def name_widths(width: int) -> tuple[int, int, int]:
    """Model, prompt and suite widths for a runs table `width` cells wide: names that fit are
    whole, longer ones lose their middle (the highlighted run's are whole in the status)."""
    if width < NARROW_RUNS:
        free = max(20, width - NARROW_OTHERS)
        prompt = max(8, min(16, free // 3))
        return free - prompt, prompt, 0
    free = max(24, width - RUN_OTHERS)
    prompt = max(6, min(20, free // 4))
    suite = max(6, min(24, free // 4))
    return max(10, free - prompt - suite), prompt, suite


def mark_cell(marked: bool) -> Text:
    return Text("✓" if marked else " ", style="bold green")


def run_cells(
    run: RunRecord,
    marked: bool,
    widths: tuple[int, int, int] = (34, 20, 24),
    pair_correct: str = "…",
) -> tuple[str | Text, ...]:
    """A run's row; with no suite width (a narrow terminal), without suite and start time.
    `pair_correct`: the run's P-C as shown (the figure the tool leads with; `…` while it is
    computed, `n/a` for a run without pairs), beside its accuracy."""
    model, prompt, suite = widths
    where: tuple[str | Text, ...] = ()
    if suite:
        started = run.started_at[5:16].replace("T", " ")  # the year is in the detail
        where = (plain_line(fmt.middle(inert_line(suite_label(run)), suite)), started)
    return (
        mark_cell(marked),
        str(run.id),
        plain_line(fmt.middle(inert_line(run.model_name), model)),
        plain_line(fmt.middle(inert_line(run.prompt_name or "-"), prompt)),
        *where,
        run.status,
        f"{run.finished}/{run.total_cases}",
        Text(pair_correct, style="bold"),
        fmt.pct(run.accuracy),
        fmt.money(run.cost if run.cost else None),
    )


class RunsTable(Guarded, WorkReported, DataTable[Text | str]):
    """A row per run (keyed by its id); `marked` are the runs marked with space."""

    def __init__(self, store: Callable[[], Awaitable[RunAnswers]], **kwargs: Any) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self.store = store
        self.runs: dict[int, RunRecord] = {}
        self.marked: set[int] = set()
        # each run's P-C, with the count of results it was computed from (kept while it holds)
        self.pair_scores: dict[int, tuple[int, float | None]] = {}
        self._columns: tuple[str, ...] = ()  # the columns shown (a narrow table has fewer)
        self._width = -1  # the width the rows were last drawn at
        self.border_title = "Runs (Enter shows a run's results, space marks it for export)"

    def show(self, runs: list[RunRecord]) -> None:
        self.runs = {r.id: r for r in runs}
        self.draw()

    def draw(self) -> None:
        """Every run's row again, at the table's width; the P-C of those whose results
        changed is computed after."""
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
        widths = name_widths(width + (0 if scrollbar else 2))
        rows: dict[str, tuple[str | Text, ...]] = {}
        for run in sorted(self.runs.values(), key=lambda r: r.id, reverse=True):
            scored = self.pair_scores.get(run.id)
            pair_correct = fmt.pct(scored[1]) if scored is not None else "…"
            rows[str(run.id)] = run_cells(run, run.id in self.marked, widths, pair_correct)
        shrink_columns(self)
        widen_columns(self, list(rows.values()))
        for key, cells in rows.items():
            self.add_row(*cells, key=key)
        if self.row_count:
            self.move_cursor(row=min(row, self.row_count - 1), animate=False)
        scoring = any(w.group == "pairs" and not w.is_finished for w in self.workers)
        if self._unscored() and not scoring:  # one at a time: it scores all that changed
            self.score_pairs()

    def on_resize(self) -> None:
        """Laid out at another width than its rows were drawn for (they may have been drawn
        before the layout gave it its width, and the names stayed cut to a few letters)."""
        if self.size.width != self._width:
            self.call_after_refresh(self.draw)

    def _unscored(self) -> list[RunRecord]:
        """Runs whose P-C is not known for the results they have now."""
        return [
            run
            for run in self.runs.values()
            if self.pair_scores.get(run.id, (-1,))[0] != run.finished
        ]

    @work(group="pairs", exit_on_error=False)
    async def score_pairs(self) -> None:
        """P-C of each run whose results changed since it was computed, from its stored
        answers (as the summary and the report compute it), then the runs drawn again."""
        store = await self.store()
        while unscored := self._unscored():
            for run in unscored:
                rows = await store.run_results(run.id, with_text=False)
                tally = pair_figures(first_answers(rows))
                self.pair_scores[run.id] = (run.finished, tally.rate("p_c"))
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
