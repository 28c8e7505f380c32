"""A results table that reads SQLite a page at a time.

Textual's DataTable renders lazily but adds rows eagerly, so loading 100,000 results into it
blocks the app for seconds. This table asks the store's `results_page` for `PAGE` rows (keyset
pagination on the id, oldest or newest first; on (column, id) when sorted by another column,
`results_page_sorted`), and for the next page only when the cursor comes near the end.
The case column takes the width the other columns leave, recomputed on resize.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from secbench_tui.core.results.reasons import rule_text, stored_reason
from secbench_tui.core.store.queries import SORT_COLUMNS, ResultFilter
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.rows import column as row_column
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui import format as fmt
from secbench_tui.tui.case_labels import ShownLabels
from secbench_tui.tui.errors import Guarded
from secbench_tui.tui.plain import plain_line

PAGE = 200
PREFETCH = 40  # rows from the end at which the next page is read
CASE_WIDTH = 10_000  # no cap: the case column takes what the other columns leave
VERDICT_WIDTH = 10  # expected and actual are cut here (VulDetectBench answers are long)
COLUMNS = (
    ("id", "id"),
    ("run_id", "run"),
    ("case_id", "case"),
    ("expected", "expected"),
    ("actual", "actual"),
    ("rule", "rule"),
    ("outcome", "outcome"),
)
SORTS = ("id", *SORT_COLUMNS)  # what `s` cycles through, by column key


class ResultPages(Protocol):
    """What the table reads: a count and pages of the results a filter matches."""

    async def count_results(self, flt: ResultFilter | None = None) -> int: ...

    async def results_page(
        self,
        flt: ResultFilter | None = None,
        after_id: int | None = None,
        limit: int = 200,
        *,
        newest_first: bool = False,
    ) -> list[ResultRow]: ...

    async def results_page_sorted(
        self,
        flt: ResultFilter | None,
        sort: str,
        after: tuple[Any, int] | None = None,
        limit: int = 200,
        *,
        descending: bool = False,
    ) -> list[ResultRow]: ...


def shrink_columns(table: DataTable[Any]) -> None:
    """After `clear()`: columns as wide as their headers, to grow again with the rows drawn
    (DataTable only ever widens a column, so a narrower terminal would keep the old width)."""
    for column in table.columns.values():
        column.content_width = column.label.cell_len
    table.refresh()


def widen_columns(table: DataTable[Any], rows: Sequence[Sequence[str | Text]]) -> None:
    """Before `rows` are added (or their cells updated): columns at least as wide as those
    cells. DataTable measures new cells only once it is idle, and a frame drawn before that
    keeps them cut to the columns' old widths for good (its render caches do not depend on
    the widths): after `shrink_columns`, a table drawn while the app was busy stayed cut to
    its headers."""
    columns = table.ordered_columns
    for row in rows:
        for column, cell in zip(columns, row, strict=False):
            width = cell.cell_len if isinstance(cell, Text) else cell_len(cell)
            column.content_width = max(column.content_width, width)
    table.refresh()


class ResultsTable(Guarded, DataTable[Text | str]):
    BINDINGS = [
        Binding("home", "scroll_top", "First", id="results.first", show=False),
        Binding("end", "scroll_bottom", "Last loaded", id="results.last", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self.filter = ResultFilter()
        self.newest_first = False
        self.total = 0
        self.last_id: int | None = None
        self.exhausted = False
        self.fetching = False  # a page is being read (not `loading`: that is Widget's spinner)
        self.case_width = 12
        self.sort_key = "id"  # a column key of SORTS; `newest_first` reverses the order
        self._others = 0  # cells the columns other than the case take
        self._rows: list[ResultRow] = []  # what is shown, to draw again at a new width
        self._labels = ShownLabels()  # of the cases shown, told apart in the case column

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            self.add_column(Text(label), key=key)
        self._label_sort()

    def _label_sort(self) -> None:
        """The sorted column's header carries an arrow (up: ascending)."""
        for key, label in COLUMNS:
            arrow = (" ▼" if self.newest_first else " ▲") if key == self.sort_key else ""
            column = self.columns[ColumnKey(key)]
            column.label = Text(label + arrow)
            column.content_width = max(column.content_width, column.label.cell_len)
        self._require_update_dimensions = True
        self.refresh()

    async def _page(self, store: ResultPages, after: ResultRow | None) -> list[ResultRow]:
        if self.sort_key == "id":
            last = int(after["id"]) if after else None
            return await store.results_page(self.filter, last, PAGE, newest_first=self.newest_first)
        key = (row_column(after, self.sort_key), int(after["id"])) if after else None
        return await store.results_page_sorted(
            self.filter, self.sort_key, key, PAGE, descending=self.newest_first
        )

    async def reload(self, store: ResultPages, flt: ResultFilter) -> None:
        """Start over with a new filter: count, then the first page."""
        self.filter = flt
        self.fetching = True
        try:
            total = await store.count_results(flt)
            rows = await self._page(store, None)
        finally:
            self.fetching = False
        self.clear()
        shrink_columns(self)
        self._label_sort()
        self._rows = []
        self._labels = ShownLabels()
        scrollbar = total >= self.size.height - 1  # the header takes a line
        self._others = self._other_widths(rows, self.sort_key) - (0 if scrollbar else 2)
        self.case_width = fmt.fitting(self.size.width, self._others, CASE_WIDTH)
        self.total = total
        self.last_id = None
        self.exhausted = False
        self._append(rows)

    async def load_more(self, store: ResultPages, again: bool = False) -> int:
        """The next page after the last id shown; returns how many rows came.

        `again` looks past the end found before: a run may have written more since."""
        if (self.exhausted and not again) or self.fetching:
            return 0
        self.fetching = True
        try:
            rows = await self._page(store, self._rows[-1] if self._rows else None)
        finally:
            self.fetching = False
        self._append(rows)
        return len(rows)

    async def follow(self, store: ResultPages) -> int:
        """While a run writes (oldest first): recount, and append rows newer than the last."""
        self.total = await store.count_results(self.filter)
        if self.newest_first or self.sort_key != "id" or not self.exhausted:
            return 0  # not read to the end yet: paging down reaches the new rows anyway
        return await self.load_more(store, again=True)

    def near_end(self) -> bool:
        return not self.exhausted and self.cursor_row >= self.row_count - PREFETCH

    @staticmethod
    def _other_widths(rows: list[ResultRow], sort_key: str = "id") -> int:
        """Cells the columns other than the case need for `rows` (the first page)."""
        keys = {"id": "id", "run_id": "run_id", "expected_result": "expected"}
        keys.update({"actual_result": "actual", "outcome": "outcome"})

        def widest(key: str, header: str, cap: int = 100) -> int:
            shown = (
                str("-" if row_column(r, key) is None else row_column(r, key))[:cap] for r in rows
            )
            arrow = 2 if keys.get(key) == sort_key else 0  # the sorted column's " ▲"
            return max([len(header) + arrow, *(len(v) for v in shown)])

        return (
            widest("id", "id") + 1  # later pages may count one more digit
            + widest("run_id", "run")
            + widest("expected_result", "expected", VERDICT_WIDTH)
            + widest("actual_result", "actual", VERDICT_WIDTH)
            + max([4, *(len(_rule(r)) for r in rows)])
            + widest("outcome", "unparsed")
            + 7 * 2  # a cell of padding each side of each column
            + 2  # the scrollbar
        )  # fmt: skip

    def on_resize(self) -> None:
        """Fit the case column to the new width: the rows shown are drawn again."""
        width = fmt.fitting(self.size.width, self._others, CASE_WIDTH)
        if width == self.case_width or not self._rows:
            self.case_width = width
            return
        self.case_width = width
        cursor = self.cursor_row
        rows, self._rows = self._rows, []
        self._labels = ShownLabels()
        self.clear()
        shrink_columns(self)
        self._draw(rows)
        self.move_cursor(row=cursor, animate=False)

    def _append(self, rows: list[ResultRow]) -> None:
        if len(rows) < PAGE:
            self.exhausted = True
        if rows:
            self.last_id = int(rows[-1]["id"])
        self._draw(rows)

    def _draw(self, rows: list[ResultRow]) -> None:
        """Add `rows`; the case labels of the rows already drawn change where a new row
        would otherwise look like one of them."""
        self._rows.extend(rows)
        repeats = max((len(_repeat(row)) for row in self._rows), default=0)
        changed = self._labels.update(
            (str(row["case_id"]) for row in self._rows), self.case_width - repeats
        )
        if changed:
            for row in self._rows[: len(self._rows) - len(rows)]:
                if str(row["case_id"]) in changed:
                    self.update_cell(
                        str(row["id"]), "case_id", self._case_cell(row), update_width=True
                    )
        cells = [self._cells(row, self._case_cell(row)) for row in rows]
        widen_columns(self, cells)
        for row, row_cells in zip(rows, cells, strict=True):
            self.add_row(*row_cells, key=str(row["id"]))

    def _case_cell(self, row: ResultRow) -> Text:
        return plain_line(self._labels[str(row["case_id"])] + _repeat(row))

    def shows(self, result_id: int) -> bool:
        """Whether result `result_id` is one of the rows listed now."""
        return str(result_id) in self.rows

    def case_of(self, index: int) -> str | None:
        """The case id on row `index`, as stored."""
        return str(self._rows[index]["case_id"]) if 0 <= index < len(self._rows) else None

    def row_id(self, index: int) -> int | None:
        """The result id shown on row `index`."""
        if not 0 <= index < self.row_count:
            return None
        key = self.ordered_rows[index].key.value
        return int(key) if key is not None else None

    @staticmethod
    def _cells(row: ResultRow, case: Text) -> tuple[str | Text, ...]:
        outcome = str(row["outcome"])
        return (
            str(row["id"]),
            str(row["run_id"]),
            case,
            plain_line(inert_line(row["expected_result"])[:VERDICT_WIDTH]),
            plain_line(inert_line(row["actual_result"] or "-")[:VERDICT_WIDTH]),
            Text(_rule(row), style=_RULE_STYLES.get(_rule(row)[-1:], "")),
            Text(outcome, style=fmt.OUTCOME_STYLES.get(outcome, "")),
        )


_RULE_STYLES = {"✓": "green", "✗": "red"}


def _repeat(row: ResultRow) -> str:
    """` #2` after the case of a repeat's second try (nothing on the first)."""
    return f" #{row['repeat'] + 1}" if row.get("repeat") else ""


def _rule(row: ResultRow) -> str:
    """The rules the reply cited, ✓ or ✗ (`core.results.reasons.rule_text`)."""
    return rule_text(stored_reason(row.get("reasons")))
