"""Results: every run in the database, then its results, filtered, with one in full.

Results are read a page at a time (`ResultsTable`); the detail pane reads one row by id.
Nothing here loads a whole table, so a database of 100,000 results opens as fast as a
small one. While a run of this session is active, the runs and the results follow it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.events import DescendantFocus
from textual.widgets import DataTable, Footer, Header, Input, Select, Static

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.models import Outcome
from secbench_tui.core.store import ResultFilter, RunRecord
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui import format as fmt
from secbench_tui.tui.plain import plain_line
from secbench_tui.tui.screens.base import BaseScreen
from secbench_tui.tui.widgets.case_detail import render_result
from secbench_tui.tui.widgets.results_table import ResultsTable

SEARCH_DEBOUNCE = 0.25
FOLLOW_EVERY = 2.0  # seconds between looks at the database while a run is active


def suite_label(run: RunRecord) -> str:
    """What a run asked: `VDB task1,3`, or the suite folder and how many apps were chosen."""
    settings = run.settings or {}
    if run.suite_kind == "vuldetectbench":
        tasks = settings.get("tasks") or []
        return "VDB " + ",".join(f"task{t}" if i == 0 else str(t) for i, t in enumerate(tasks))
    bundled = Path(run.suite_path) == bundled_cases_dir().resolve()
    name = "bundled" if bundled else Path(run.suite_path).name or run.suite_path
    apps = settings.get("apps")
    return f"{name} ({len(apps)} apps)" if apps else name


def run_cells(run: RunRecord, marked: bool) -> tuple[str | Text, ...]:
    return (
        Text("✓" if marked else " ", style="bold green"),
        str(run.id),
        plain_line(inert_line(run.model_name)[:34]),
        plain_line(inert_line(suite_label(run))[:24]),
        run.started_at[:16].replace("T", " "),
        run.status,
        f"{run.finished}/{run.total_cases}",
        fmt.pct(run.accuracy),
        fmt.money(run.cost if run.cost else None),
    )


class ResultsScreen(BaseScreen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="results.back"),
        Binding("slash", "search", "Search", id="results.search"),
        Binding("a", "all_runs", "All runs", id="results.all_runs"),
        Binding("space", "mark_run", "Mark run", id="results.mark"),
        Binding("o", "order(True)", "Newest first", id="results.newest"),
        Binding("o", "order(False)", "Oldest first", id="results.oldest"),
        Binding("f5", "reload", "Reload", id="results.reload"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.runs: dict[int, RunRecord] = {}
        self.run_filter: int | None = None
        self.marked: set[int] = set()
        self._following = False

    def compose(self) -> ComposeResult:
        yield Header()
        runs: DataTable[Text | str] = DataTable(id="runs-table", cursor_type="row")
        runs.border_title = "Runs (Enter shows a run's results, space marks it for export)"
        yield runs
        with Horizontal(id="filters"):
            yield Select[str]([], prompt="any model", id="filter-model")
            yield Select[str]([], prompt="any prompt", id="filter-prompt")
            yield Select[str]([], prompt="any app", id="filter-app")
            yield Select[str](
                [(o.value, o.value) for o in Outcome], prompt="any outcome", id="filter-outcome"
            )
            yield Input(placeholder="/ search case, explanation, reply", id="search")
        with Horizontal(id="results-panes"):
            table = ResultsTable(id="results-table")
            table.border_title = "Results"
            yield table
            with VerticalScroll(id="detail-pane") as pane:
                pane.border_title = "Result"
                yield Static(Text("Highlight a result to see it here", style="dim"), id="detail")
        yield Static(id="results-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "results"
        self.query_one("#runs-table", DataTable).add_columns(
            " ", "run", "model", "suite", "started", "status", "cases", "accuracy", "cost"
        )
        self.query_one("#results-table").focus()
        self.load_runs()
        self.set_interval(FOLLOW_EVERY, self._follow_tick)

    # --- loading ----------------------------------------------------------------------

    @work(exclusive=True, group="runs", exit_on_error=False)
    async def load_runs(self) -> None:
        store = await self.secbench.store()
        runs = await store.runs()
        models, apps = await asyncio.gather(store.distinct("model_name"), store.distinct("app"))
        self.runs = {r.id: r for r in runs}
        self._draw_runs()
        self._set_options("#filter-model", models)
        prompts = await store.prompt_names()
        self._set_options("#filter-prompt", prompts)
        # shown when there is a choice: runs of more than one evaluation prompt
        self.query_one("#filter-prompt", Select).display = len(prompts) > 1
        self._set_options("#filter-app", [a for a in apps if a])
        await self._reload_results()

    def _set_options(self, selector: str, values: list[str]) -> None:
        select = self.query_one(selector, Select)
        current = select.value
        with select.prevent(Select.Changed):
            select.set_options((plain_line(v), v) for v in values)
            if isinstance(current, str) and current in values:
                select.value = current

    def _draw_runs(self) -> None:
        table = self.query_one("#runs-table", DataTable)
        row = table.cursor_row
        table.clear()
        for run in sorted(self.runs.values(), key=lambda r: r.id, reverse=True):
            table.add_row(*run_cells(run, run.id in self.marked), key=str(run.id))
        if table.row_count:
            table.move_cursor(row=min(row, table.row_count - 1), animate=False)

    def current_filter(self) -> ResultFilter:
        def chosen(selector: str) -> list[str]:
            value = self.query_one(selector, Select).value
            return [value] if isinstance(value, str) else []

        return ResultFilter(
            run_ids=[self.run_filter] if self.run_filter is not None else [],
            models=chosen("#filter-model"),
            prompts=chosen("#filter-prompt"),
            apps=chosen("#filter-app"),
            outcomes=chosen("#filter-outcome"),
            text=self.query_one("#search", Input).value.strip(),
        )

    async def _reload_results(self) -> None:
        store = await self.secbench.store()
        table = self.query_one(ResultsTable)
        await table.reload(store, self.current_filter())
        self._draw_status()
        self._show_first()

    def _show_first(self) -> None:
        table = self.query_one(ResultsTable)
        if table.row_count:
            table.move_cursor(row=0, animate=False)
            self.show_detail(table.row_id(0))
        else:
            self.query_one("#detail", Static).update(Text("No results match", style="dim"))

    @work(exclusive=True, group="results", exit_on_error=False)
    async def reload_results(self, debounce: float = 0.0) -> None:
        if debounce:
            await asyncio.sleep(debounce)
        await self._reload_results()

    def _follow_tick(self) -> None:
        """Follow while a run is active, and once more after it ends (its last rows)."""
        active = self.secbench.run_active
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
        store = await self.secbench.store()
        self.runs = {r.id: r for r in await store.runs()}
        self._draw_runs()
        added = await self.query_one(ResultsTable).follow(store)
        self._draw_status()
        if added and self.query_one(ResultsTable).row_count == added:
            self._show_first()

    @work(exclusive=True, group="page", exit_on_error=False)
    async def load_more(self) -> None:
        table = self.query_one(ResultsTable)
        await table.load_more(await self.secbench.store())
        self._draw_status()

    @work(exclusive=True, group="detail", exit_on_error=False)
    async def show_detail(self, result_id: int | None) -> None:
        if result_id is None:
            return
        row: dict[str, Any] | None = await (await self.secbench.store()).result(result_id)
        detail = self.query_one("#detail", Static)
        detail.update(render_result(row) if row else Text(f"result {result_id} is gone"))
        self.query_one("#detail-pane", VerticalScroll).scroll_home(animate=False)

    def _draw_status(self) -> None:
        table = self.query_one(ResultsTable)
        flt = table.filter
        order = "newest first" if table.newest_first else "oldest first"
        parts = [f"showing {table.row_count:,} of {table.total:,} results, {order}"]
        if flt.run_ids:
            parts.append(f"run {flt.run_ids[0]}")
        for label, values in (("model", flt.models), ("app", flt.apps), ("outcome", flt.outcomes)):
            if values:
                parts.append(f"{label} {inert_line(values[0])}")
        if flt.text:
            parts.append(f"text {inert_line(repr(flt.text))}")
        if self.marked:
            parts.append(f"marked runs {', '.join(str(r) for r in sorted(self.marked))}")
        if self.secbench.run_active:
            parts.append("a run is writing: following it")
        self.query_one("#results-status", Static).update(Text("  ·  ".join(parts), style="dim"))

    # --- events ---------------------------------------------------------------------

    @on(DataTable.RowHighlighted, "#results-table")
    def _result_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.show_detail(int(event.row_key.value))
        if self.query_one(ResultsTable).near_end():
            self.load_more()

    @on(DataTable.RowSelected, "#runs-table")
    def _run_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.run_filter = int(event.row_key.value)
            self.refresh_bindings()
            self.reload_results()
            self.query_one(ResultsTable).focus()  # drill down: the arrows now browse its results

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        self.refresh_bindings()  # `space` marks a run only from the runs table

    @on(Select.Changed)
    def _filter_changed(self) -> None:
        self.reload_results()

    @on(Input.Changed, "#search")
    def _search_changed(self) -> None:
        self.reload_results(SEARCH_DEBOUNCE)

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
        return True

    def focused_runs(self) -> bool:
        return self.query_one("#runs-table", DataTable).has_focus

    def action_back(self) -> None:
        """Out of a field (or the detail pane) to the results first; from a table, leave."""
        focused = self.app.focused
        table = self.query_one(ResultsTable)
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

    def action_mark_run(self) -> None:
        table = self.query_one("#runs-table", DataTable)
        if not table.has_focus or not table.row_count:
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        if key is None:
            return
        run_id = int(key)
        self.marked.symmetric_difference_update({run_id})
        table.update_cell(
            key,
            table.ordered_columns[0].key,
            Text("✓" if run_id in self.marked else " ", style="bold green"),
        )
        self._draw_status()

    def export_selection(self) -> list[int]:
        if self.marked:
            return sorted(self.marked)
        return [self.run_filter] if self.run_filter is not None else []
