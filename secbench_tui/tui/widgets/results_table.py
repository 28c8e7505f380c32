"""A results table that reads SQLite a page at a time.

Textual's DataTable renders lazily but adds rows eagerly, so loading 100,000 results into it
blocks the app for seconds. This table asks `Store.results_page` for `PAGE` rows (keyset
pagination on the id, oldest or newest first), and for the next page only when the cursor
comes near the end.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from secbench_tui.core.store import ResultFilter, Store
from secbench_tui.tui import format as fmt
from secbench_tui.tui.errors import Guarded

PAGE = 200
PREFETCH = 40  # rows from the end at which the next page is read


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

    def on_mount(self) -> None:
        self.add_columns("id", "run", "case", "expected", "actual", "outcome")

    async def reload(self, store: Store, flt: ResultFilter) -> None:
        """Start over with a new filter: count, then the first page."""
        self.filter = flt
        self.fetching = True
        try:
            total = await store.count_results(flt)
            rows = await store.results_page(flt, None, PAGE, newest_first=self.newest_first)
        finally:
            self.fetching = False  # a page is being read (not `loading`: that is Widget's spinner)
        self.clear()
        self.total = total
        self.last_id = None
        self.exhausted = False
        self._append(rows)

    async def load_more(self, store: Store, again: bool = False) -> int:
        """The next page after the last id shown; returns how many rows came.

        `again` looks past the end found before: a run may have written more since."""
        if (self.exhausted and not again) or self.fetching:
            return 0
        self.fetching = True
        try:
            rows = await store.results_page(
                self.filter, self.last_id, PAGE, newest_first=self.newest_first
            )
        finally:
            self.fetching = False  # a page is being read (not `loading`: that is Widget's spinner)
        self._append(rows)
        return len(rows)

    async def follow(self, store: Store) -> int:
        """While a run writes (oldest first): recount, and append rows newer than the last."""
        self.total = await store.count_results(self.filter)
        if self.newest_first or not self.exhausted:
            return 0  # not read to the end yet: paging down reaches the new rows anyway
        return await self.load_more(store, again=True)

    def near_end(self) -> bool:
        return not self.exhausted and self.cursor_row >= self.row_count - PREFETCH

    def _append(self, rows: list[dict[str, Any]]) -> None:
        if len(rows) < PAGE:
            self.exhausted = True
        if rows:
            self.last_id = int(rows[-1]["id"])
        for row in rows:
            self.add_row(*self._cells(row), key=str(row["id"]))

    def row_id(self, index: int) -> int | None:
        """The result id shown on row `index`."""
        if not 0 <= index < self.row_count:
            return None
        key = self.ordered_rows[index].key.value
        return int(key) if key is not None else None

    @staticmethod
    def _cells(row: dict[str, Any]) -> tuple[str | Text, ...]:
        outcome = str(row["outcome"])
        repeat = f" #{row['repeat'] + 1}" if row.get("repeat") else ""
        return (
            str(row["id"]),
            str(row["run_id"]),
            fmt.tail(str(row["case_id"]) + repeat, 28),
            str(row["expected_result"])[:10],
            str(row["actual_result"] or "-")[:10],
            Text(outcome, style=fmt.OUTCOME_STYLES.get(outcome, "")),
        )
