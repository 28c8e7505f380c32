"""Results: every run in the database, then its results, filtered, with one in full.

The screen composes its parts and routes between them: the runs (`widgets.runs_table`), the
filters (`widgets.result_filters`), the results read a page at a time
(`widgets.results_table`), one result in full (`widgets.result_detail`) and the status line
(`widgets.results_status`). Nothing here loads a whole table, so a database of 100,000
results opens as fast as a small one. While a run of this session is active, the runs and
the results follow it.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.events import DescendantFocus
from textual.widgets import DataTable, Header, Input, Select

from secbench_tui.core.store.runs import RunRecord
from secbench_tui.tui.figure_book import RunAnswers
from secbench_tui.tui.screens.base import BaseScreen
from secbench_tui.tui.widgets.footer import KeyFooter
from secbench_tui.tui.widgets.result_detail import ResultDetail
from secbench_tui.tui.widgets.result_filters import FilterBar
from secbench_tui.tui.widgets.results_status import ResultsStatus
from secbench_tui.tui.widgets.results_table import SORTS, ResultPages, ResultsTable
from secbench_tui.tui.widgets.runs_table import RunsTable


class ResultsStore(ResultPages, RunAnswers, Protocol):
    """What the screen reads itself: the runs and what the filters offer (its parts read
    the rest through their own protocols)."""

    async def runs(self) -> list[RunRecord]: ...

    async def distinct(self, column: str) -> list[str]: ...

    async def prompt_names(self) -> list[str]: ...


class ResultsScreen(BaseScreen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="results.back"),
        Binding("slash", "search", "Search", id="results.search"),
        Binding("a", "all_runs", "All runs", id="results.all_runs"),
        Binding("space", "mark_run", "Mark run", id="results.mark"),
        Binding("t", "show_request(True)", "Request sent", id="results.request"),
        Binding("t", "show_request(False)", "Result", id="results.result"),
        Binding("c", "compare", "Compare", id="results.compare"),
        Binding("d", "diff", "Diff runs", id="results.diff"),
        Binding("m", "maximize_pane", "Maximise", id="results.maximise"),
        Binding("o", "order(True)", "Newest first", id="results.newest"),
        Binding("o", "order(False)", "Oldest first", id="results.oldest"),
        Binding("s", "sort", "Sort", id="results.sort"),
        Binding("f5", "reload", "Reload", id="results.reload"),
    ]

    def __init__(self, show_run: int | None = None, filters: dict[str, str] | None = None) -> None:
        super().__init__()
        self.run_filter: int | None = show_run  # the one run whose results are shown
        self._initial_filters = dict(filters or {})  # set once their options are read
        self._following = False  # a run was active at the last look

    def compose(self) -> ComposeResult:
        yield Header()
        runs = RunsTable(
            self.secbench.store, self.secbench.figures, self.secbench.marked, id="runs-table"
        )
        yield runs
        yield FilterBar(id="filters")
        with Horizontal(id="results-panes"):
            table = ResultsTable(id="results-table")
            table.border_title = "Results"
            yield table
            yield ResultDetail(self.secbench.store, table.shows, runs.run, id="detail-pane")
        yield ResultsStatus(id="results-status")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = "results"
        outcome = self._initial_filters.get("outcome")
        if outcome is not None:
            self.query_one(FilterBar).choose("outcome", outcome, quietly=False)
        self.query_one(ResultsTable).focus()
        self.load_runs()
        self.set_interval(self.secbench.intervals.follow, self._follow_tick)

    # --- what the app and the palette ask -----------------------------------------------

    @property
    def marked(self) -> set[int]:
        """The runs marked with space (for export, a comparison or a diff)."""
        return self.query_one(RunsTable).marked

    @property
    def model_options(self) -> list[str]:
        return self.query_one(FilterBar).options["model"]

    @property
    def app_options(self) -> list[str]:
        return self.query_one(FilterBar).options["app"]

    def run_in_view(self) -> int | None:
        """The run the user is looking at: highlighted in the runs table, else filtered on."""
        highlighted = self.query_one(RunsTable).highlighted() if self.focused_runs() else None
        return highlighted if highlighted is not None else self.run_filter

    def current_result(self) -> int | None:
        table = self.query_one(ResultsTable)
        return table.row_id(table.cursor_row) if table.row_count else None

    def current_case(self) -> str | None:
        table = self.query_one(ResultsTable)
        return table.case_of(table.cursor_row)

    def export_selection(self) -> list[int]:
        if self.marked:
            return sorted(self.marked)
        return [self.run_filter] if self.run_filter is not None else []

    def focused_runs(self) -> bool:
        return self.query_one(RunsTable).has_focus

    # --- reading ------------------------------------------------------------------------

    async def _store(self) -> ResultsStore:
        return await self.secbench.store()

    @work(exclusive=True, group="runs", exit_on_error=False)
    async def load_runs(self) -> None:
        store = await self._store()
        runs = await store.runs()
        table = self.query_one(RunsTable)
        await self.secbench.figures.read(store, table.first_screen(runs))
        models, apps = await asyncio.gather(store.distinct("model_name"), store.distinct("app"))
        table.show(runs)
        filters = self.query_one(FilterBar)
        filters.offer("model", models)
        filters.offer("prompt", await store.prompt_names())
        filters.offer("app", [a for a in apps if a])
        for kind in ("model", "app"):
            value = self._initial_filters.pop(kind, None)
            if value is not None and value in filters.options[kind]:
                filters.choose(kind, value)
        self.query_one(RunsTable).select(self.run_filter)
        await self._reload_results()

    @work(exclusive=True, group="results", exit_on_error=False)
    async def reload_results(self, debounce: float = 0.0) -> None:
        if debounce:
            await asyncio.sleep(debounce)
        await self._reload_results()

    async def _reload_results(self) -> None:
        table = self.query_one(ResultsTable)
        await table.reload(await self._store(), self.query_one(FilterBar).chosen(self.run_filter))
        self._draw_status()
        self._show_first()

    def _show_first(self) -> None:
        table = self.query_one(ResultsTable)
        if table.row_count:
            table.move_cursor(row=0, animate=False)
            self.show_detail(table.row_id(0))
        else:
            self.query_one(ResultDetail).nothing()

    def _follow_tick(self) -> None:
        """Follow while a run is active, and once more after it ends (its last rows): a run
        of this session, or one the store shows running that others write (another
        process, or the workers of a shared run on PostgreSQL)."""
        active = self.secbench.run_active or self.query_one(RunsTable).running
        if not (active or self._following) or not self.is_current:
            self._following = active
            return
        if any(w.group == "follow" and not w.is_finished for w in self.workers):
            return  # the last look is still reading: the next tick tries again
        self.follow_run()
        self._following = active

    @work(exclusive=True, group="follow", exit_on_error=False)
    async def follow_run(self) -> None:
        """A run of this session is writing: refresh the runs and append its new results."""
        store = await self._store()
        self.query_one(RunsTable).show(await store.runs())
        table = self.query_one(ResultsTable)
        added = await table.follow(store)
        self._draw_status()
        if added and table.row_count == added:
            self._show_first()

    @work(exclusive=True, group="page", exit_on_error=False)
    async def load_more(self) -> None:
        await self.query_one(ResultsTable).load_more(await self._store())
        self._draw_status()

    def show_detail(self, result_id: int | None) -> None:
        self.query_one(ResultDetail).show(result_id)

    def _draw_status(self) -> None:
        runs = self.query_one(RunsTable)
        highlighted = runs.run(self.run_in_view() or -1) if self.focused_runs() else None
        self.query_one(ResultsStatus).show(
            self.query_one(ResultsTable), runs.marked, self.secbench.run_active, highlighted
        )

    # --- events ---------------------------------------------------------------------

    def on_resize(self) -> None:
        self.call_after_refresh(self.query_one(RunsTable).draw)

    @on(DataTable.RowHighlighted, "#results-table")
    def _result_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.show_detail(int(event.row_key.value))
        if self.query_one(ResultsTable).near_end():
            self.load_more()

    @on(DataTable.RowHighlighted, "#runs-table")
    def _run_highlighted(self) -> None:
        self._draw_status()

    @on(DataTable.RowSelected, "#runs-table")
    def _run_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.show_run(int(event.row_key.value))

    def show_run(self, run_id: int) -> None:
        """That run's results: a model filter it cannot match is lifted (it would hide all)."""
        self.run_filter = run_id
        run = self.query_one(RunsTable).run(run_id)
        model = self.query_one(FilterBar).select("model").value
        if run is not None and isinstance(model, str) and model != run.model_name:
            self.query_one(FilterBar).lift("model")
            self.notify(f"model filter cleared: run {run_id} is another model", timeout=4)
        self.query_one(RunsTable).select(run_id)
        self.refresh_bindings()
        self.reload_results()
        self.query_one(ResultsTable).focus()  # drill down: the arrows now browse its results

    def set_filter(self, kind: str, value: str) -> None:
        """One filter from the palette; no kind clears them all (and the run shown)."""
        if not kind:
            self.query_one(FilterBar).clear()
            self.run_filter = None
            self.refresh_bindings()
        else:
            self.query_one(FilterBar).choose(kind, value)
        self.reload_results()

    @on(DataTable.HeaderSelected, "#results-table")
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        key = str(event.column_key.value)
        if key in SORTS:
            self.sort_by(key)

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        self.refresh_bindings()  # `space` marks a run only from the runs table
        self._draw_status()

    @on(Select.Changed)
    def _filter_changed(self) -> None:
        self.reload_results()

    @on(Input.Changed, "#search")
    def _search_changed(self) -> None:
        self.reload_results(self.secbench.intervals.search)

    @on(Input.Submitted, "#search")
    def _search_submitted(self) -> None:
        self.query_one(ResultsTable).focus()

    # --- actions --------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "mark_run":
            return self.focused_runs()
        if action == "all_runs":
            return self.run_filter is not None
        if action == "order":
            return parameters[0] != self.query_one(ResultsTable).newest_first
        if action == "show_request":  # one key, named for what it shows next
            return parameters[0] != self.query_one(ResultDetail).showing_request
        return True

    def action_back(self) -> None:
        """Out of a field (or the detail pane) to the results first; from a table, leave."""
        focused = self.app.focused
        table = self.query_one(ResultsTable)
        if self.maximized is not None:
            self.minimize()
            if focused is self.query_one(ResultDetail):
                table.focus()
            return
        if focused is not None and focused is not table and not self.focused_runs():
            table.focus()
        elif len(self.app.screen_stack) > 1:
            self.dismiss()

    def action_search(self) -> None:
        self.query_one("#search", Input).focus()

    def action_all_runs(self) -> None:
        self.run_filter = None
        self.refresh_bindings()
        self.reload_results()

    def action_order(self, newest_first: bool) -> None:
        self.query_one(ResultsTable).newest_first = newest_first
        self.refresh_bindings()
        self.reload_results()

    def action_reload(self) -> None:
        self.load_runs()

    def action_sort(self) -> None:
        table = self.query_one(ResultsTable)
        self.sort_by(SORTS[(SORTS.index(table.sort_key) + 1) % len(SORTS)])

    def sort_by(self, key: str) -> None:
        """Sort by that column; the column sorted already flips its order instead."""
        table = self.query_one(ResultsTable)
        if key == table.sort_key:
            table.newest_first = not table.newest_first
        else:
            table.sort_key, table.newest_first = key, False
        self.refresh_bindings()
        self.reload_results()

    def action_compare(self) -> None:
        self.secbench.action_compare()

    def action_diff(self) -> None:
        self.secbench.action_diff()

    def action_maximize_pane(self) -> None:
        """The focused pane (results, a result, the runs) takes the screen; again: back.

        Under 110 columns the result pane is hidden: from the results, m shows it."""
        if self.maximized is not None:
            self.minimize()
            return
        pane = self.focused
        detail = self.query_one(ResultDetail)
        if pane is self.query_one(ResultsTable) and not detail.display:
            pane = detail
        if pane is not None and pane.id in ("results-table", "detail-pane", "runs-table"):
            self.maximized = pane
            pane.focus()

    def watch_maximized(self, maximized: object) -> None:
        """Back from a full-screen result that is hidden at this width: to the results."""
        detail = self.query_one(ResultDetail)
        if maximized is None and self.focused is detail and not detail.display:
            self.query_one(ResultsTable).focus()

    @on(DataTable.RowSelected, "#results-table")
    def _result_selected(self) -> None:
        """Enter on a result: in a narrow terminal, where its pane is hidden, show it."""
        detail = self.query_one(ResultDetail)
        if not detail.display:
            self.maximized = detail
            detail.focus()

    def action_show_request(self, show: bool) -> None:
        """The highlighted result's request as sent (every message), or back to the result.
        Where the result pane is hidden (a narrow terminal), it takes the screen."""
        detail = self.query_one(ResultDetail)
        detail.showing_request = show
        self.refresh_bindings()
        if show and not detail.display and self.maximized is None:
            self.maximized = detail
            detail.focus()
        self.show_detail(self.current_result())

    def action_mark_run(self) -> None:
        runs = self.query_one(RunsTable)
        if runs.has_focus:
            runs.toggle_mark()
            self._draw_status()
