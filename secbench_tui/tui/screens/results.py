"""Results: every run in the database, then its results, filtered, with one in full.

Results are read a page at a time (`ResultsTable`); the detail pane reads one row by id.
Nothing here loads a whole table, so a database of 100,000 results opens as fast as a
small one. While a run of this session is active, the runs and the results follow it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.events import DescendantFocus
from textual.message import Message
from textual.widgets import DataTable, Header, Input, Select, Static

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.models import Outcome
from secbench_tui.core.results.pairwise import pair_figures
from secbench_tui.core.results.reasons import first_answers
from secbench_tui.core.store.queries import ResultFilter
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.runs import RunRecord
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui import format as fmt
from secbench_tui.tui.plain import plain_line
from secbench_tui.tui.screens.base import BaseScreen
from secbench_tui.tui.widgets.case_detail import render_request, render_result
from secbench_tui.tui.widgets.footer import KeyFooter
from secbench_tui.tui.widgets.results_table import SORTS, ResultsTable, shrink_columns

FILTERS = ("model", "prompt", "app", "outcome")  # the dropdowns, by the end of their ids


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
        Text("✓" if marked else " ", style="bold green"),
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


class RunsTable(DataTable[Text | str]):
    """The runs: says when its own width changes (a Resize is not sent to the screen)."""

    class Resized(Message):
        pass

    def on_resize(self) -> None:
        self.post_message(self.Resized())


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
        self.runs: dict[int, RunRecord] = {}
        self.run_filter: int | None = show_run
        self.marked: set[int] = set()
        self._following = False
        self._initial_filters = dict(filters or {})
        self.model_options: list[str] = []
        self.app_options: list[str] = []
        self.show_request = False  # the detail shows the result's request (`t`), not the result
        # each run's P-C, with the count of results it was computed from (kept while it holds)
        self.pair_scores: dict[int, tuple[int, float | None]] = {}
        self._runs_width = -1  # the runs table's width when its rows were last drawn

    def compose(self) -> ComposeResult:
        yield Header()
        runs: DataTable[Text | str] = RunsTable(id="runs-table", cursor_type="row")
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
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = "results"
        self._run_columns: tuple[str, ...] = ()
        for kind, value in self._initial_filters.items():
            if kind == "outcome":
                self.query_one("#filter-outcome", Select).value = value
        self.query_one("#results-table").focus()
        self.load_runs()
        self.set_interval(self.secbench.intervals.follow, self._follow_tick)

    # --- loading ----------------------------------------------------------------------

    @work(exclusive=True, group="runs", exit_on_error=False)
    async def load_runs(self) -> None:
        store = await self.secbench.store()
        runs = await store.runs()
        models, apps = await asyncio.gather(store.distinct("model_name"), store.distinct("app"))
        self.runs = {r.id: r for r in runs}
        self._draw_runs()
        self.model_options, self.app_options = models, [a for a in apps if a]
        self._set_options("#filter-model", models)
        prompts = await store.prompt_names()
        self._set_options("#filter-prompt", prompts)
        # shown when there is a choice: runs of more than one evaluation prompt
        self.query_one("#filter-prompt", Select).display = len(prompts) > 1
        self._set_options("#filter-app", self.app_options)
        for kind in ("model", "app"):
            value = self._initial_filters.pop(kind, None)
            if value in (models if kind == "model" else self.app_options):
                with self.prevent(Select.Changed):
                    self.query_one(f"#filter-{kind}", Select).value = value
        self._select_run_row(self.run_filter)
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
        width = table.size.width or self.size.width
        self._runs_width = table.size.width
        columns = run_columns(width)
        if columns != self._run_columns:  # a narrow terminal leaves some out
            table.clear(columns=True)
            table.add_columns(*columns)
            self._run_columns = columns
        shrink_columns(table)
        scrollbar = len(self.runs) >= table.size.height - 3  # its border and header
        widths = name_widths(width + (0 if scrollbar else 2))
        for run in sorted(self.runs.values(), key=lambda r: r.id, reverse=True):
            scored = self.pair_scores.get(run.id)
            pair_correct = fmt.pct(scored[1]) if scored is not None else "…"
            table.add_row(
                *run_cells(run, run.id in self.marked, widths, pair_correct), key=str(run.id)
            )
        if table.row_count:
            table.move_cursor(row=min(row, table.row_count - 1), animate=False)
        scoring = any(w.group == "pairs" and not w.is_finished for w in self.workers)
        if self._unscored() and not scoring:  # one at a time: it scores all that changed
            self.score_pairs()

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
        store = await self.secbench.store()
        while unscored := self._unscored():
            for run in unscored:
                rows = await store.run_results(run.id, with_text=False)
                tally = pair_figures(first_answers(rows))
                self.pair_scores[run.id] = (run.finished, tally.rate("p_c"))
        self._draw_runs()

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
            # a result still being read must not land after this: it is filtered out
            self.workers.cancel_group(self, "detail")
            self.query_one("#detail", Static).update(Text("No results match", style="dim"))
            self.query_one("#detail-pane").border_title = "Result"

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
        store = await self.secbench.store()
        row: ResultRow | None = await store.result(result_id)
        if self.show_request:
            await self._show_request(result_id, row)
            return
        family: list[ResultRow] = []
        if row is not None and row.get("suite_kind") != "vuldetectbench":
            variant = row.get("variant")
            original = (variant["original"] if variant else None) or row.get("case_id")
            family = await store.case_family(int(row.get("run_id") or 0), str(original))
        run = self.runs.get(int(row["run_id"])) if row and row.get("run_id") is not None else None
        prompt = run.prompt_name if run is not None else None
        if not self.query_one(ResultsTable).shows(result_id):
            return  # the filter changed while it was read: that result is not listed now
        self.query_one("#detail-pane").border_title = f"Result {result_id} (t: request sent)"
        detail = self.query_one("#detail", Static)
        shown = render_result(row, prompt, family) if row else Text(f"result {result_id} is gone")
        detail.update(shown)
        self.query_one("#detail-pane", VerticalScroll).scroll_home(animate=False)

    async def _show_request(self, result_id: int, row: ResultRow | None) -> None:
        store = await self.secbench.store()
        sent = await store.sent_request(result_id)
        if not self.query_one(ResultsTable).shows(result_id) or not self.show_request:
            return
        run = self.runs.get(int(row["run_id"])) if row and row.get("run_id") is not None else None
        settings = run.settings.as_dict() if run is not None else None
        self.query_one("#detail-pane").border_title = f"Result {result_id}: request (t: result)"
        shown = render_request(row, sent, settings) if row else Text(f"result {result_id} is gone")
        self.query_one("#detail", Static).update(shown)
        self.query_one("#detail-pane", VerticalScroll).scroll_home(animate=False)

    def on_resize(self) -> None:
        self.call_after_refresh(self._draw_runs)

    @on(RunsTable.Resized)
    def _runs_resized(self) -> None:
        """The runs table laid out at another width than its rows were drawn for (they may
        have been drawn before the layout gave it its width, when only the screen's own
        resize redrew them, and the names stayed cut to a few letters)."""
        if self.query_one("#runs-table", DataTable).size.width != self._runs_width:
            self.call_after_refresh(self._draw_runs)

    def _draw_status(self) -> None:
        table = self.query_one(ResultsTable)
        flt = table.filter
        order = "newest first" if table.newest_first else "oldest first"
        parts = [f"showing {table.row_count:,} of {table.total:,} results, {order}"]
        if table.sort_key != "id":
            way = "descending" if table.newest_first else "ascending"
            parts[0] = (
                f"showing {table.row_count:,} of {table.total:,} results, "
                f"by {table.sort_key.removesuffix('_id')} {way}"
            )
        if flt.run_ids:
            parts.append(f"run {flt.run_ids[0]}")
        chosen = (flt.models, flt.prompts, flt.apps, flt.outcomes)
        for label, values in zip(FILTERS, chosen, strict=True):
            if values:
                parts.append(f"{label} {inert_line(values[0])}")
        if flt.text:
            parts.append(f"text {inert_line(repr(flt.text))}")
        if self.marked:
            parts.append(f"marked runs {', '.join(str(r) for r in sorted(self.marked))}")
        if self.secbench.run_active:
            parts.append("a run is writing: following it")
        highlighted = self.runs.get(self.run_in_view() or -1) if self.focused_runs() else None
        if highlighted is not None:  # its names whole: the table may have cut them
            name = f"run {highlighted.id}: {highlighted.model_name}"
            if highlighted.prompt_name:
                name += f" · {highlighted.prompt_name}"
            parts.insert(0, name)
        status = Text()
        if not table.total and (any(chosen) or flt.text):
            # first, where a narrow terminal cannot cut it: what to do about an empty table
            parts = [p.replace("showing 0 of 0 results", "0 results") for p in parts]
            status.append(
                "no result matches these filters together: change one, or ctrl+p Clear "
                "filters  ·  ",
                style="bold yellow",
            )
        status.append("  ·  ".join(inert_line(p) for p in parts), style="dim")
        self.query_one("#results-status", Static).update(status)

    # --- events ---------------------------------------------------------------------

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
        run = self.runs.get(run_id)
        model = self.query_one("#filter-model", Select)
        if run is not None and isinstance(model.value, str) and model.value != run.model_name:
            with model.prevent(Select.Changed):
                model.clear()
            self.notify(f"model filter cleared: run {run_id} is another model", timeout=4)
        self._select_run_row(run_id)
        self.refresh_bindings()
        self.reload_results()
        self.query_one(ResultsTable).focus()  # drill down: the arrows now browse its results

    def _select_run_row(self, run_id: int | None) -> None:
        table = self.query_one("#runs-table", DataTable)
        if run_id is not None and str(run_id) in table.rows:
            table.move_cursor(row=table.get_row_index(str(run_id)), animate=False)

    def set_filter(self, kind: str, value: str) -> None:
        """One filter from the palette; no kind clears them all (and the run shown)."""
        if not kind:
            for name in FILTERS:
                select = self.query_one(f"#filter-{name}", Select)
                with select.prevent(Select.Changed):
                    select.clear()
            self.query_one("#search", Input).value = ""
            self.run_filter = None
            self.refresh_bindings()
        else:
            select = self.query_one(f"#filter-{kind}", Select)
            with select.prevent(Select.Changed):
                select.value = value
        self.reload_results()

    def run_in_view(self) -> int | None:
        """The run the user is looking at: highlighted in the runs table, else filtered on."""
        runs = self.query_one("#runs-table", DataTable)
        if runs.has_focus and runs.row_count:
            key = runs.coordinate_to_cell_key(runs.cursor_coordinate).row_key.value
            if key is not None:
                return int(key)
        return self.run_filter

    def current_result(self) -> int | None:
        table = self.query_one(ResultsTable)
        return table.row_id(table.cursor_row) if table.row_count else None

    def current_case(self) -> str | None:
        table = self.query_one(ResultsTable)
        return table.case_of(table.cursor_row)

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
            return parameters[0] != self.show_request
        return True

    def focused_runs(self) -> bool:
        return self.query_one("#runs-table", DataTable).has_focus

    def action_back(self) -> None:
        """Out of a field (or the detail pane) to the results first; from a table, leave."""
        focused = self.app.focused
        table = self.query_one(ResultsTable)
        if self.maximized is not None:
            self.minimize()
            if focused is self.query_one("#detail-pane"):
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
        detail = self.query_one("#detail-pane")
        if pane is self.query_one(ResultsTable) and not detail.display:
            pane = detail
        if pane is not None and pane.id in ("results-table", "detail-pane", "runs-table"):
            self.maximized = pane
            pane.focus()

    def watch_maximized(self, maximized: object) -> None:
        """Back from a full-screen result that is hidden at this width: to the results."""
        detail = self.query_one("#detail-pane")
        if maximized is None and self.focused is detail and not detail.display:
            self.query_one(ResultsTable).focus()

    @on(DataTable.RowSelected, "#results-table")
    def _result_selected(self) -> None:
        """Enter on a result: in a narrow terminal, where its pane is hidden, show it."""
        detail = self.query_one("#detail-pane")
        if not detail.display:
            self.maximized = detail
            detail.focus()

    def action_show_request(self, show: bool) -> None:
        """The highlighted result's request as sent (every message), or back to the result.
        Where the result pane is hidden (a narrow terminal), it takes the screen."""
        self.show_request = show
        self.refresh_bindings()
        detail = self.query_one("#detail-pane")
        if self.show_request and not detail.display and self.maximized is None:
            self.maximized = detail
            detail.focus()
        self.show_detail(self.current_result())

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
