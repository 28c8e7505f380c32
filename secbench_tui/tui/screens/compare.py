"""Comparison views: who said what, case by case, and which cases flipped between two runs.

`CompareScreen` is a case x run grid (one column per run: its model, and its prompt when runs
carry one), `DiffScreen` the cases whose outcome changed from one run to another, and
`AnswersScreen` one case with each run's answer side by side. All three read SQLite in pages
(the store's `grid_page`, `flips_page`, `case_answers`; each screen sees the store through
`CompareReads`, the few methods they use): nothing loads a whole run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import HorizontalScroll, VerticalScroll
from textual.widgets import DataTable, Header, Static

from secbench_tui.core.case_names import scenario_of
from secbench_tui.core.store.comparison import FlipCounts, GridCounts
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.runs import RunRecord
from secbench_tui.core.untrusted import inert, inert_line
from secbench_tui.tui import format as fmt
from secbench_tui.tui.host import Host
from secbench_tui.tui.screens.base import BaseScreen
from secbench_tui.tui.widgets.case_tables import (
    FLIP_STYLES,
    CasePages,
    CaseTable,
    FlipTable,
    GridTable,
    PairGridTable,
    run_label,
)
from secbench_tui.tui.widgets.footer import KeyFooter

MAX_GRID_RUNS = 12  # columns the grid shows by default: the latest run of each model
FLIP_FILTERS: tuple[str | None, ...] = (None, "fixed", "broke", "changed")


def same_suite(a: RunRecord, b: RunRecord) -> bool:
    return (a.suite_kind, a.suite_path) == (b.suite_kind, b.suite_path)


def grid_runs(runs: Sequence[RunRecord], marked: Sequence[int], anchor: int | None) -> list[int]:
    """The runs a grid compares: the marked ones (two or more), else the latest run of each
    model (and prompt) on the suite of `anchor` (the newest run when none), oldest first."""
    if len(marked) >= 2:
        return sorted(marked)
    by_id = {r.id: r for r in runs}
    if not by_id:
        return []
    base = by_id.get(anchor) if anchor is not None else None
    base = base or max(by_id.values(), key=lambda r: r.id)
    latest: dict[tuple[str, str], int] = {}
    for run in sorted(by_id.values(), key=lambda r: r.id):
        if same_suite(run, base) and run.finished:
            prompt = str(getattr(run, "prompt_name", None) or "")
            latest[(run.model_name, prompt)] = run.id
    return sorted(latest.values())[-MAX_GRID_RUNS:]


def diff_pair(
    runs: Sequence[RunRecord], marked: Sequence[int], anchor: int | None
) -> tuple[int, int] | None:
    """The two runs a diff compares, older first: two marked runs, else `anchor` (the newest
    run when none) and the run before it on the same suite (the same model preferred)."""
    if len(marked) == 2:
        first, second = sorted(marked)
        return first, second
    by_id = {r.id: r for r in runs}
    base = by_id.get(anchor) if anchor is not None else None
    if base is None and by_id:
        base = max(by_id.values(), key=lambda r: r.id)
    if base is None:
        return None
    earlier = [r for r in by_id.values() if r.id < base.id and same_suite(r, base) and r.finished]
    same_model = [r for r in earlier if r.model_name == base.model_name]
    pick = max(same_model or earlier, key=lambda r: r.id, default=None)
    return (pick.id, base.id) if pick is not None else None


class CompareReads(CasePages, Protocol):
    """What the comparison screens read: the tables' pages, the counts over them, and one
    case's answers in every run."""

    async def grid_counts(self, run_ids: Sequence[int]) -> GridCounts: ...

    async def flip_counts(self, before: int, after: int) -> FlipCounts: ...

    async def case_answers(self, run_ids: Sequence[int], case_id: str) -> list[ResultRow]: ...


async def compare_reads(host: Host) -> CompareReads:
    return await host.store()


class CompareBase(BaseScreen):
    """What the grid and the diff share: paging on the cursor, answers on enter."""

    TABLE = "#compare-table"

    def __init__(self, runs: Sequence[RunRecord]) -> None:
        super().__init__()
        self.runs = {r.id: r for r in runs}

    def answer_runs(self) -> list[int]:
        raise NotImplementedError

    @property
    def table(self) -> CaseTable:
        return self.query_one(self.TABLE, CaseTable)

    @work(exclusive=True, group="compare_page", exit_on_error=False)
    async def load_more(self) -> None:
        await self.table.load_more(await compare_reads(self.secbench))
        self.draw_status()

    def draw_status(self) -> None:
        raise NotImplementedError

    @on(DataTable.RowHighlighted)
    @on(DataTable.CellHighlighted)
    def _highlighted(self) -> None:
        if self.table.near_end():
            self.load_more()
        self.draw_status()

    @on(DataTable.RowSelected)
    @on(DataTable.CellSelected)
    def _selected(self) -> None:
        self.action_answers()

    def action_answers(self) -> None:
        item = self.table.current()
        if item is not None:
            self.app.push_screen(AnswersScreen(self.answer_runs(), self.runs, item.case_id))

    def current_case(self) -> str | None:
        item = self.table.current()
        return item.case_id if item is not None else None

    def action_back(self) -> None:
        if self.maximized is not None:
            self.minimize()
        else:
            self.dismiss()

    def action_maximize_pane(self) -> None:
        if self.maximized is not None:
            self.minimize()
        else:
            self.maximized = self.table

    def export_selection(self) -> list[int]:
        return self.answer_runs()


class CompareScreen(CompareBase):
    """Cases down, runs across; `d` shows only the cases the runs disagree on, `f` only
    those some run got wrong. The column under the cursor is named in full below."""

    BINDINGS = [
        Binding("escape", "back", "Back", id="compare.back"),
        Binding("d", "toggle_disagreements", "Only disagreements", id="compare.disagree"),
        Binding("f", "toggle_failures", "Only failures", id="compare.failures"),
        Binding("p", "toggle_pairs", "By pair", id="compare.pairs"),
        Binding("enter", "answers", "Answers side by side", id="compare.answers", show=False),
        Binding("m", "maximize_pane", "Maximise", id="compare.maximise"),
    ]

    def __init__(self, runs: Sequence[RunRecord], run_ids: Sequence[int]) -> None:
        super().__init__(runs)
        self.run_ids = list(run_ids)
        self.counts: GridCounts | None = None
        self.by_pair = False

    def answer_runs(self) -> list[int]:
        return self.run_ids

    @property
    def table(self) -> CaseTable:
        return self.query_one("#compare-pairs" if self.by_pair else self.TABLE, CaseTable)

    def compose(self) -> ComposeResult:
        yield Header()
        table = GridTable(list(self.runs.values()), self.run_ids, id="compare-table")
        table.border_title = "Cases x runs (enter: the answers side by side)"
        yield table
        pairs = PairGridTable(list(self.runs.values()), self.run_ids, id="compare-pairs")
        pairs.border_title = "Scenarios x runs: good/bad pairs both right (P-C), ✓ all right"
        pairs.display = False
        yield pairs
        yield Static(id="compare-status")
        yield KeyFooter()

    def action_toggle_pairs(self, scenario: str | None = None) -> None:
        """One row per scenario, each run's pairs both right, or back to one row per case
        (the cursor on `scenario`'s first case)."""
        self.by_pair = not self.by_pair
        self.query_one(GridTable).display = not self.by_pair
        self.query_one(PairGridTable).display = self.by_pair
        self.table.focus()
        self.reload(scenario)

    def action_answers(self) -> None:
        if self.by_pair:  # a scenario has no one answer: its cases, side by side by run
            item = self.table.current()
            self.action_toggle_pairs(item.case_id if item is not None else None)
            return
        super().action_answers()

    def on_mount(self) -> None:
        self.sub_title = "compare: " + ", ".join(f"run {r}" for r in self.run_ids)
        self.table.focus()
        self.reload()

    @work(exclusive=True, group="compare", exit_on_error=False)
    async def reload(self, scenario: str | None = None) -> None:
        store = await compare_reads(self.secbench)
        if self.counts is None:
            self.counts = await store.grid_counts(self.run_ids)
        if self.by_pair:  # each run's totals: the numbers every front end shows
            runs = [r for r in self.runs.values() if r.id in self.run_ids]
            await self.secbench.figures.read(await self.secbench.store(), runs)
            pairs = self.query_one(PairGridTable)
            pairs.set_totals({r.id: self.secbench.figures.get(r) for r in runs})
        table = self.table
        await table.reload(store)
        if scenario is not None:
            self._move_to(table, scenario)
        self.draw_status()

    def _move_to(self, table: CaseTable, scenario: str) -> None:
        """The cursor on the first case of `scenario` (among the rows read)."""
        for index, item in enumerate(table.items):
            if scenario_of(item.case_id) == scenario:
                table.move_cursor(row=index, animate=False)
                return

    def action_toggle_disagreements(self) -> None:
        if self.by_pair:
            return
        table = self.query_one(GridTable)
        table.only_disagreements = not table.only_disagreements
        self.reload()

    def action_toggle_failures(self) -> None:
        """Only the cases some run got wrong; by pair, the scenarios some run did not solve."""
        table = self.query_one(PairGridTable if self.by_pair else GridTable)
        table.only_failures = not table.only_failures
        self.reload()

    def draw_status(self) -> None:
        if not self.is_mounted:
            return
        if self.by_pair:
            self._draw_pair_status()
            return
        table = self.query_one(GridTable)
        counts = self.counts or GridCounts(0, 0)
        only = [
            *(["disagree"] if table.only_disagreements else []),
            *(["some run got wrong"] if table.only_failures else []),
        ]
        which = f"cases they {' and '.join(only)}" if only else "cases"
        which = which.replace("they some run", "some run")
        text = Text()
        column = table.column_name(table.cursor_column) if table.row_count else None
        if column is not None:  # the run in focus, named in full
            text.append(column, style="bold")
            text.append("  ·  ", style="dim")
        text.append(f"showing {table.row_count:,} {which}")
        text.append("  ·  ", style="dim")
        text.append(f"{counts.disagreements:,}", style="bold yellow")
        text.append(f" of {counts.cases:,} cases disagree, {counts.failures:,} have a failure")
        text.append("  ·  d ", style="dim")
        text.append("all" if table.only_disagreements else "disagreements", style="dim")
        text.append(", f ", style="dim")
        text.append("all" if table.only_failures else "failures", style="dim")
        if only and not table.row_count:
            good = "the runs agree on every case" if table.only_disagreements else "no failure"
            text.append(f"  ·  {good}", style="bold green")
        self.query_one("#compare-status", Static).update(text)

    def _draw_pair_status(self) -> None:
        pairs = self.query_one(PairGridTable)
        text = Text()
        column = pairs.cursor_column if pairs.row_count else -1
        name = pairs.column_name(column)
        if name is not None:  # the run in focus, named in full, with its totals
            run_id = pairs.run_ids[column - 2]
            text.append(name, style="bold")
            text.append(f": {pairs.totals.get(run_id, '…')}")
            text.append("  ·  ", style="dim")
        which = "scenarios some run did not solve" if pairs.only_failures else "scenarios"
        text.append(f"showing {pairs.row_count:,} {which}")
        text.append("  ·  a cell: pairs both right of pairs, ✓ all right", style="dim")
        text.append(", V both bad, B both good, R both wrong", style="dim")
        text.append("  ·  f ", style="dim")
        text.append("all" if pairs.only_failures else "unsolved", style="dim")
        text.append(", enter its cases, p one row per case", style="dim")
        self.query_one("#compare-status", Static).update(text)


class DiffScreen(CompareBase):
    """The cases that flipped between two runs, both ways, with counts; `f` picks a way."""

    BINDINGS = [
        Binding("escape", "back", "Back", id="diff.back"),
        Binding("f", "cycle_flips", "Fixed / broke / changed", id="diff.flips"),
        Binding("enter", "answers", "Answers side by side", id="diff.answers", show=False),
        Binding("m", "maximize_pane", "Maximise", id="diff.maximise"),
    ]

    def __init__(self, runs: Sequence[RunRecord], before: int, after: int) -> None:
        super().__init__(runs)
        self.before = before
        self.after = after
        self.counts: FlipCounts | None = None

    def answer_runs(self) -> list[int]:
        return [self.before, self.after]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="diff-counts")
        table = FlipTable(self.before, self.after, id="compare-table")
        table.border_title = "Flipped cases (enter: the two answers side by side)"
        yield table
        yield Static(id="compare-status")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = f"diff: run {self.before} -> run {self.after}"
        self.table.focus()
        self.reload()

    @work(exclusive=True, group="compare", exit_on_error=False)
    async def reload(self) -> None:
        store = await compare_reads(self.secbench)
        if self.counts is None:
            self.counts = await store.flip_counts(self.before, self.after)
            self.draw_counts()
        await self.table.reload(store)
        self.draw_status()

    def draw_counts(self) -> None:
        c = self.counts or FlipCounts()
        before = run_label(self.runs.get(self.before), self.before, 40)
        after = run_label(self.runs.get(self.after), self.after, 40)
        text = Text.assemble(
            (before, "bold"),
            ("  ->  ", "dim"),
            (after, "bold"),
            "\n",
            (f"{c.flipped:,} flipped: ", "bold"),
            (f"{c.fixed:,} fixed", FLIP_STYLES["fixed"]),
            (" (now correct)  ", "dim"),
            (f"{c.broke:,} broke", FLIP_STYLES["broke"]),
            (" (no longer correct)  ", "dim"),
            (f"{c.changed:,} changed", FLIP_STYLES["changed"]),
            (" (another wrong outcome)", "dim"),
            ("  ·  ", "dim"),
            f"{c.same:,} the same",
        )
        if c.only_before or c.only_after:
            text.append(
                f"  ·  only in run {self.before}: {c.only_before:,}, "
                f"only in run {self.after}: {c.only_after:,}",
                style="dim",
            )
        self.query_one("#diff-counts", Static).update(text)

    def action_cycle_flips(self) -> None:
        table = self.query_one(FlipTable)
        table.only = FLIP_FILTERS[(FLIP_FILTERS.index(table.only) + 1) % len(FLIP_FILTERS)]
        self.reload()

    def draw_status(self) -> None:
        table = self.query_one(FlipTable)
        which = f"{table.only} cases" if table.only else "flipped cases (all ways)"
        text = Text(f"showing {table.row_count:,} {which}  ·  f: fixed, broke, changed, all")
        if not table.row_count:
            text.append("  ·  nothing flipped this way", style="bold green")
        self.query_one("#compare-status", Static).update(text)


def answer_panel(run: RunRecord | None, run_id: int, row: ResultRow | None) -> RenderableType:
    """One run's answer to the case: verdict, outcome, explanation, raw reply (all inert)."""
    head = Text(run_label(run, run_id, 60), style="bold")
    if row is None:
        return Group(head, Text("(this run has no answer to this case)", style="dim"))
    outcome = str(row.get("outcome") or "")
    parts: list[RenderableType] = [
        head,
        Text.assemble(
            ("verdict ", "dim"),
            (inert_line(row.get("actual_result") or "-"), "bold"),
            ("  ", ""),
            (outcome, f"bold {fmt.OUTCOME_STYLES.get(outcome, '')}"),
        ),
    ]
    if row.get("error"):
        parts += [Text(inert(row["error"]), style="red")]
    parts += [
        Rule(Text("explanation", style="bold"), align="left", style="dim"),
        Text(inert(row.get("explanation") or "(none)")),
        Rule(Text("raw reply", style="bold"), align="left", style="dim"),
        Text(inert(row.get("raw_reply") or "(none)"), style="dim"),
    ]
    return Group(*parts)


class AnswersScreen(BaseScreen):
    """One case, each run's answer in a column of its own; tab moves between them."""

    BINDINGS = [
        Binding("escape", "back", "Back", id="answers.back"),
        Binding("m", "maximize_pane", "Maximise", id="answers.maximise"),
    ]

    def __init__(self, run_ids: Sequence[int], runs: dict[int, RunRecord], case_id: str) -> None:
        super().__init__()
        self.run_ids = list(run_ids)
        self.runs = runs
        self.case_id = case_id
        self.rows: dict[int, ResultRow] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(inert_line(self.case_id), style="bold"), id="answers-case")
        with HorizontalScroll(id="answers"):  # narrow terminals scroll to the next run
            for run_id in self.run_ids:
                with VerticalScroll(id=f"answer-{run_id}", classes="answer") as pane:
                    pane.border_title = f"run {run_id}"
                    yield Static(Text("reading…", style="dim"), classes="answer-text")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = "answers side by side"
        self.query(".answer").first().focus()
        self.load()

    @work(exclusive=True, group="answers", exit_on_error=False)
    async def load(self) -> None:
        store = await compare_reads(self.secbench)
        rows = await store.case_answers(self.run_ids, self.case_id)
        self.rows = {int(r["run_id"]): r for r in rows}
        first = rows[0] if rows else {}
        self.query_one("#answers-case", Static).update(
            Text.assemble(
                (inert_line(self.case_id), "bold"),
                ("  expected ", "dim"),
                (inert_line(first.get("expected_result") or "-"), "bold"),
                (f"  ·  {inert_line(first.get('app') or '')}", "dim"),
            )
        )
        for run_id in self.run_ids:
            pane = self.query_one(f"#answer-{run_id}", VerticalScroll)
            pane.query_one(".answer-text", Static).update(
                answer_panel(self.runs.get(run_id), run_id, self.rows.get(run_id))
            )

    def current_case(self) -> str | None:
        return self.case_id

    def current_row(self) -> ResultRow | None:
        focused = self.focused
        for run_id in self.run_ids:
            if focused is not None and focused.id == f"answer-{run_id}":
                return self.rows.get(run_id)
        return None

    def action_back(self) -> None:
        if self.maximized is not None:
            self.minimize()
        else:
            self.dismiss()

    def action_maximize_pane(self) -> None:
        if self.maximized is not None:
            self.minimize()
        elif self.focused is not None:
            self.maximized = self.focused

    def export_selection(self) -> list[int]:
        return self.run_ids
