"""The comparison views' tables: a case x run grid and the cases that flipped between two runs.

Both read SQLite a page at a time by case id (the store's `grid_page`, `flips_page`), keep
what they show so they can draw it again, and give the case column whatever width the other
columns leave, recomputed when the terminal is resized. Case ids, model names and verdicts
came from files and models: every cell is a `Text` of `inert_line` text, never markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from secbench_tui.core.case_names import scenario_of
from secbench_tui.core.results.pairwise import PairTally, scenario_tally
from secbench_tui.core.results.reasons import Answer
from secbench_tui.core.results.summary import RunSummary
from secbench_tui.core.store.comparison import FlipRow, GridRow, Verdict
from secbench_tui.core.store.runs import RunRecord
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui import format as fmt
from secbench_tui.tui.case_labels import ShownLabels
from secbench_tui.tui.errors import Guarded
from secbench_tui.tui.widgets.results_table import shrink_columns, widen_columns

PAGE = 200
PREFETCH = 40
VERDICT_WIDTH = 8
DISAGREE_STYLE = "bold yellow"
FLIP_STYLES = {"fixed": "green", "broke": "red", "changed": "yellow"}


class CasePages(Protocol):
    """What the tables read: pages of cases, by case id, with each run's verdict."""

    async def grid_page(
        self,
        run_ids: Sequence[int],
        after_case: str | None = None,
        limit: int = 200,
        *,
        only_disagreements: bool = False,
        only_failures: bool = False,
    ) -> list[GridRow]: ...

    async def flips_page(
        self,
        before: int,
        after: int,
        after_case: str | None = None,
        limit: int = 200,
        only: str | None = None,
    ) -> list[FlipRow]: ...


def prompt_of(run: RunRecord | None) -> str | None:
    if run is None:
        return None
    return run.prompt_name or run.settings.prompt_name


def run_label(run: RunRecord | None, run_id: int, width: int = 24, with_prompt: bool = True) -> str:
    """`model-name #12` (with the prompt's name when runs carry one and `with_prompt`): the
    model without its vendor, a long one cut from the middle (its start and variant stay)."""
    if run is None:
        return f"#{run_id}"
    prompt = prompt_of(run) if with_prompt else None
    name = inert_line(run.model_name).rsplit("/", 1)[-1]
    if prompt:
        name += f" · {inert_line(prompt)}"
    return fmt.middle(name, max(4, width - len(str(run_id)) - 2)) + f" #{run_id}"


def verdict_cell(verdict: Verdict | None, expected: str = "") -> Text:
    """A run's verdict coloured by its outcome; the outcome itself where no verdict was read
    (or the verdict is long free text, as VulDetectBench answers are)."""
    if verdict is None:
        return Text("·", style="dim")
    actual = verdict.actual
    shown = actual if actual and len(actual) <= VERDICT_WIDTH else verdict.outcome
    return Text(inert_line(shown), style=fmt.OUTCOME_STYLES.get(verdict.outcome, ""))


class CaseTable(Guarded, DataTable[Text]):
    """A DataTable of rows keyed by case id, read in pages, whose case column is elastic."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self.items: list[Any] = []
        self.last_case: str | None = None
        self.exhausted = False
        self.fetching = False
        self.case_width = 12
        self.labels_shown = ShownLabels()  # the case column's labels, told apart
        self.mark_width = 0  # cells of the case column before its label

    # what a subclass says
    def other_widths(self) -> int:
        raise NotImplementedError

    def cells(self, item: Any) -> tuple[Text, ...]:
        raise NotImplementedError

    async def fetch(self, store: CasePages, after: str | None) -> Sequence[Any]:
        raise NotImplementedError

    # paging
    async def reload(self, store: CasePages) -> None:
        self.fetching = True
        try:
            items = await self.fetch(store, None)
        finally:
            self.fetching = False
        self.clear()
        shrink_columns(self)
        self.items, self.last_case, self.exhausted = [], None, False
        self.labels_shown = ShownLabels(scenarios=self.labels_shown.scenarios)
        self.case_width = self._fit()
        self._append(items)

    async def load_more(self, store: CasePages) -> int:
        if self.exhausted or self.fetching:
            return 0
        self.fetching = True
        try:
            items = await self.fetch(store, self.last_case)
        finally:
            self.fetching = False
        self._append(items)
        return len(items)

    def near_end(self) -> bool:
        return not self.exhausted and self.cursor_row >= self.row_count - PREFETCH

    def _append(self, items: Sequence[Any]) -> None:
        if len(items) < PAGE:
            self.exhausted = True
        if items:
            self.last_case = items[-1].case_id
        drawn = self.items[:]
        self.items.extend(items)
        self._relabel(drawn)
        self._draw(items)

    def _draw(self, items: Sequence[Any]) -> None:
        """Add a row per item, each column at once as wide as its new cells: DataTable
        measures them only when its queue is empty, and a frame drawn before that (the
        status line's, on a loaded machine) showed the case column at its header's width."""
        rows = [self.cells(item) for item in items]
        widen_columns(self, rows)
        for item, cells in zip(items, rows, strict=True):
            self.add_row(*cells, key=item.case_id)

    def _relabel(self, drawn: Sequence[Any]) -> None:
        """Labels for every row shown at the case column's width; the rows in `drawn` whose
        label changed (a new row would otherwise look like one of them) are drawn again."""
        changed = self.labels_shown.update(
            (item.case_id for item in self.items), self.case_width - self.mark_width
        )
        cells = {item.case_id: self.cells(item)[0] for item in drawn if item.case_id in changed}
        widen_columns(self, [(cell,) for cell in cells.values()])  # the case column is first
        for case_id, cell in cells.items():
            self.update_cell(case_id, "case", cell, update_width=True)

    def label(self, case_id: str) -> str:
        """The case column's label of `case_id` (one of the rows shown)."""
        return self.labels_shown[case_id]

    def current(self) -> Any | None:
        if not self.row_count or not 0 <= self.cursor_row < len(self.items):
            return None
        return self.items[self.cursor_row]

    # width
    def _fit(self) -> int:
        return fmt.fitting(self.size.width, self.other_widths(), 10_000)

    def on_resize(self) -> None:
        """The case column takes what the other columns leave: draw the rows again."""
        width = self._fit()
        if width == self.case_width:
            return
        self.case_width = width
        if not self.items:
            return
        cursor = self.cursor_coordinate
        self.clear()
        shrink_columns(self)
        self._relabel(())
        self._draw(self.items)
        self.move_cursor(row=cursor.row, column=cursor.column, animate=False)


def run_name(run: RunRecord | None, run_id: int, with_prompt: bool = True) -> str:
    """`openai/gpt-4o-mini · default #12`: a run's whole name (inert), for headers with room
    and for the status line of the column in focus."""
    if run is None:
        return f"#{run_id}"
    prompt = prompt_of(run) if with_prompt else None
    name = inert_line(run.model_name)
    if prompt:
        name += f" · {inert_line(prompt)}"
    return f"{name} #{run_id}"


def pass_rate(run: RunRecord | None) -> str:
    """`82.1% correct`: the run's share of correct answers, as its summary counts it."""
    if run is None or run.accuracy is None:
        return "no answers"
    return f"{fmt.pct(run.accuracy)} correct"


CASE_MIN = 24  # the case column keeps at least this much when run names want the room


class GridTable(CaseTable):
    """Cases down, runs across, one verdict per cell; cases the runs disagree on stand out.

    Each run's header names its model and prompt in full where there is room, else loses
    the middle of the name (the vendor and the variant stay), with the run's pass rate on a
    second line; the column under the cursor is named in full on the status line."""

    def __init__(self, runs: Sequence[RunRecord], run_ids: Sequence[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cursor_type = "cell"
        self.mark_width = 2  # `≠ ` where the runs disagree
        self.run_ids = list(run_ids)
        self.runs = {r.id: r for r in runs}
        self.only_disagreements = False
        self.only_failures = False
        # the prompt is named only where the runs in view were asked with different ones
        prompts = {prompt_of(self.runs.get(r)) for r in self.run_ids}
        with_prompt = len(prompts) > 1
        self.names = [run_name(self.runs.get(r), r, with_prompt) for r in self.run_ids]
        # the header's lines: the model, then the prompt (where they differ) and the run id,
        # then the pass rate; each line is cut from the middle to the column's width
        self.heads: list[list[str]] = []
        for run_id in self.run_ids:
            run = self.runs.get(run_id)
            model = inert_line(run.model_name) if run is not None else "?"
            prompt = inert_line(prompt_of(run) or "") if with_prompt else ""
            self.heads.append([model, f"{prompt} #{run_id}".strip(), pass_rate(run)])
        self.header_height = 3
        self.label_width = 0

    @property
    def labels(self) -> list[str]:
        """Each run's header as shown, its lines joined by ` · `."""
        return [
            " · ".join(fmt.middle(line, self.label_width) for line in head[:2])
            for head in self.heads
        ]

    def _label_width(self) -> int:
        """Each run's column: as wide as its widest header line if every one fits beside a
        `CASE_MIN` case column, else an equal share of what is left (at least a verdict)."""
        width = self.size.width or 120
        room = width - CASE_MIN - 2 - (len("expected") + 2) - 2 - 2
        share = room // max(1, len(self.run_ids)) - 2
        widest = max((len(line) for head in self.heads for line in head), default=0)
        return max(VERDICT_WIDTH, min(widest, share))

    def _header(self, index: int) -> Text:
        model, prompt, rate = self.heads[index]
        if len(model) > self.label_width:  # the model's own name before its vendor's
            model = model.rsplit("/", 1)[-1]
        label = Text(fmt.middle(model, self.label_width), style="bold")
        label.append("\n" + fmt.middle(prompt, self.label_width))
        if len(rate) > self.label_width:  # `58.3% correct` -> `58.3%`, `no answers` -> `-`
            rate = rate.split()[0] if "%" in rate else "-"
        label.append("\n" + rate, style="dim")
        return label

    def on_mount(self) -> None:
        self.label_width = self._label_width()
        self.add_columns_of_view()

    def add_columns_of_view(self) -> None:
        """The case and expected columns, then a column per run."""
        self.add_column(Text("case"), key="case")
        self.add_column(Text("expected"), key="expected")
        for index, run_id in enumerate(self.run_ids):
            self.add_column(self._header(index), key=f"run-{run_id}", width=self._run_width(index))

    def _run_width(self, index: int) -> int:
        return max(self.label_width, VERDICT_WIDTH)

    def on_resize(self) -> None:
        width = self._label_width()
        if width != self.label_width:
            self.label_width = width
            for index, run_id in enumerate(self.run_ids):
                column = self.columns[ColumnKey(f"run-{run_id}")]
                column.label = self._header(index)
                column.width = self._run_width(index)
            self.case_width = -1  # the run columns changed: draw the rows again
        super().on_resize()

    def other_widths(self) -> int:
        runs = sum(self._run_width(index) + 2 for index in range(len(self.run_ids)))
        return len("expected") + 2 + runs + 2 + 2  # padding of the case column, scrollbar

    def column_name(self, column: int) -> str | None:
        """The whole name of the run in `column` (None for the case and expected columns)."""
        index = column - 2
        return self.names[index] if 0 <= index < len(self.names) else None

    async def fetch(self, store: CasePages, after: str | None) -> Sequence[Any]:
        """A page of `GridRow`s (`PairGridTable`: of scenarios)."""
        return await store.grid_page(
            self.run_ids,
            after,
            PAGE,
            only_disagreements=self.only_disagreements,
            only_failures=self.only_failures,
        )

    def cells(self, item: Any) -> tuple[Text, ...]:
        """A `GridRow`'s cells (`PairGridTable`: a scenario's)."""
        mark, style = ("≠ ", DISAGREE_STYLE) if item.disagree else ("  ", "")
        case = Text(mark + self.label(item.case_id), style=style)
        expected = Text(inert_line(item.expected)[:VERDICT_WIDTH], style="dim")
        verdicts = [verdict_cell(item.verdicts.get(r)) for r in self.run_ids]
        if item.disagree:
            for cell in verdicts:
                cell.stylize("bold")
        return (case, expected, *verdicts)


class FlipTable(CaseTable):
    """The cases whose outcome changed from one run to another, in case order."""

    def __init__(self, before: int, after: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.before = before
        self.after = after
        self.only: str | None = None  # fixed | broke | changed

    def on_mount(self) -> None:
        self.add_column(Text("case"), key="case")
        self.add_column(Text("expected"), key="expected")
        self.add_column(Text(f"run {self.before}"), key="before")
        self.add_column(Text(f"run {self.after}"), key="after")
        self.add_column(Text("flip"), key="flip")

    def other_widths(self) -> int:
        verdict = max(VERDICT_WIDTH, len(f"run {max(self.before, self.after)}"))
        return len("expected") + 2 * verdict + len("changed") + 5 * 2 + 2

    async def fetch(self, store: CasePages, after: str | None) -> Sequence[FlipRow]:
        return await store.flips_page(self.before, self.after, after, PAGE, self.only)

    def cells(self, item: FlipRow) -> tuple[Text, ...]:
        flip = item.flip.value
        return (
            Text(self.label(item.case_id)),
            Text(inert_line(item.expected)[:VERDICT_WIDTH], style="dim"),
            verdict_cell(item.before),
            verdict_cell(item.after),
            Text(flip, style=f"bold {FLIP_STYLES[flip]}"),
        )


@dataclass
class ScenarioRow:
    """One scenario of the grid grouped by pair: its cases, each with every run's verdict."""

    case_id: str  # the scenario (the row key); named so for `CaseTable`
    cases: list[GridRow]

    def tally(self, run_id: int) -> PairTally:
        answers = []
        for row in self.cases:
            verdict = row.verdicts.get(run_id)
            said = None
            if verdict is not None and verdict.outcome in ("correct", "wrong") and verdict.actual:
                said = verdict.actual.strip().lower()
            answers.append(Answer(row.case_id, row.expected.strip().lower(), said))
        return scenario_tally(answers)


PAIR_KINDS = (("V", "p_v"), ("B", "p_b"), ("R", "p_r"))  # the pairs not both right


def pair_cell(tally: PairTally, width: int = 0) -> Text:
    """`3/4 ✓`: a scenario's pairs both right (P-C) of its pairs in one run, ✓ when every case
    is right; where `width` allows, the other pairs by kind (`V1`: both called bad, `B`: both
    called good, `R`: both wrong)."""
    if not tally.pairs:
        return Text("·", style="dim")
    style = "green" if tally.solved else ("red" if not tally.p_c else "yellow")
    text = f"{tally.p_c}/{tally.pairs}" + (" ✓" if tally.solved else "")
    others = " ".join(f"{k}{getattr(tally, n)}" for k, n in PAIR_KINDS if getattr(tally, n))
    if others and len(text) + 1 + len(others) <= width:
        text += " " + others
    return Text(text, style=style)


PAIR_MIN = 7  # a run's column in the pair view: `12/20 ✓`


class PairGridTable(GridTable):
    """The grid grouped by pair: one row per scenario, each run's P-C over its pairs (both
    cases of a good/bad pair right), ✓ when the run solved the scenario (every case right).
    Each run's header ends with its totals (P-C, scenarios solved, from the app's figure
    book: the numbers every front end shows); `only_failures` keeps the scenarios some run
    did not solve."""

    def __init__(self, runs: Sequence[RunRecord], run_ids: Sequence[int], **kwargs: Any) -> None:
        super().__init__(runs, run_ids, **kwargs)
        self.mark_width = 0
        self.labels_shown = ShownLabels(scenarios=True)
        self.totals: dict[int, str] = {}  # run id -> its pairs right and scenarios solved
        for head in self.heads:
            head[2] = "…"
        self._after: str | None = None  # the last case read (a scenario may span pages)
        self._done = False

    def set_totals(self, figures: dict[int, RunSummary | None]) -> None:
        """Each run's totals, in its header's last line and for the status line."""
        for index, run_id in enumerate(self.run_ids):
            summary = figures.get(run_id)
            pairs = summary.pairwise if summary is not None else None
            scenarios = summary.scenarios if summary is not None else None
            if pairs is None or scenarios is None or not pairs.pairs:
                self.heads[index][2] = "-"
                self.totals[run_id] = "no pairs"
                continue
            right = round((pairs.p_c or 0) * pairs.pairs)
            self.heads[index][2] = f"{fmt.pct(pairs.p_c)} {scenarios.solved}✓"
            self.totals[run_id] = (
                f"pairs right {right} of {pairs.pairs} (P-C {fmt.pct(pairs.p_c)}), "
                f"scenarios solved {scenarios.solved} of {scenarios.count}"
            )
        if self.is_mounted:
            for index, run_id in enumerate(self.run_ids):
                self.columns[ColumnKey(f"run-{run_id}")].label = self._header(index)
            self.refresh()

    def add_columns_of_view(self) -> None:
        """The scenario and its count of cases, then a column per run."""
        self.add_column(Text("scenario"), key="case")
        self.add_column(Text("cases"), key="expected")
        for index, run_id in enumerate(self.run_ids):
            self.add_column(self._header(index), key=f"run-{run_id}", width=self._run_width(index))

    def _label_width(self) -> int:
        return max(PAIR_MIN, super()._label_width())

    def _run_width(self, index: int) -> int:
        return max(self.label_width, PAIR_MIN)

    def other_widths(self) -> int:
        runs = sum(self._run_width(index) + 2 for index in range(len(self.run_ids)))
        return len("cases") + 2 + runs + 2 + 2

    async def reload(self, store: CasePages) -> None:
        self._after, self._done = None, False
        await super().reload(store)

    async def fetch(self, store: CasePages, after: str | None) -> Sequence[ScenarioRow]:
        found: list[ScenarioRow] = []
        while not found and not self._done:  # a page of scenarios all solved: read on
            rows = list(await store.grid_page(self.run_ids, self._after, PAGE))
            self._done = len(rows) < PAGE
            groups: dict[str, list[GridRow]] = {}
            for row in rows:
                groups.setdefault(scenario_of(row.case_id) or row.case_id, []).append(row)
            page = [ScenarioRow(name, cases) for name, cases in groups.items()]
            if not self._done and len(page) > 1:  # the last scenario may go on in the next page
                page.pop()
            taken = [case for item in page for case in item.cases]
            self._after = taken[-1].case_id if taken else self._after
            found = [item for item in page if not self.only_failures or self._failed(item)]
        return found

    def _failed(self, item: ScenarioRow) -> bool:
        """Some run did not solve the scenario (got one of its cases wrong)."""
        return not all(item.tally(run_id).solved for run_id in self.run_ids)

    def _append(self, items: Sequence[Any]) -> None:
        super()._append(items)
        self.exhausted = self._done

    def cells(self, item: ScenarioRow) -> tuple[Text, ...]:
        case = Text(self.label(item.case_id))
        count = Text(str(len(item.cases)), style="dim")
        width = self._run_width(0)
        return (case, count, *(pair_cell(item.tally(r), width) for r in self.run_ids))
