"""The comparison views (case x run grid, run-versus-run diff, answers side by side), the
command palette's commands, and tables that follow the terminal's size.

Runs are recorded by the real engine with the offline baselines on the fixture suite (5
cases: 2 good, 3 bad), so who is right on which case is known: `always-bad` is right on the
bad cases, `always-good` on the good ones.
"""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Select, Static

from secbench_tui.config import Settings
from secbench_tui.core.store.database import Store
from secbench_tui.tui.app import SecbenchApp, make_app
from secbench_tui.tui.screens.compare import AnswersScreen, CompareScreen, DiffScreen
from secbench_tui.tui.screens.results import ResultsScreen
from secbench_tui.tui.widgets.case_tables import FlipTable, GridTable
from secbench_tui.tui.widgets.results_table import ResultsTable
from tests.e2e.server import LoopbackServer, answer
from tests.tui.conftest import SIZE, record_run, search_palette, settle, wait_until

GOOD_CASES = 2
BAD_CASES = 3


async def three_runs(make_settings: Callable[..., Settings]) -> Settings:
    """Run 1 always-bad, run 2 always-good, run 3 always-bad again (agrees with run 1)."""
    for model in ("baseline/always-bad", "baseline/always-good", "baseline/always-bad"):
        await record_run(make_settings(model=model))
    return make_settings()


def case_ids() -> list[str]:
    with sqlite3.connect("results.db") as conn:
        rows = conn.execute("SELECT DISTINCT case_id FROM evaluations ORDER BY case_id")
        return [r[0] for r in rows]


async def open_results(pilot: Pilot[Any], app: SecbenchApp) -> ResultsScreen:
    await settle(pilot)
    await pilot.press("r")
    await settle(pilot)
    assert isinstance(app.screen, ResultsScreen)
    return app.screen


async def mark(pilot: Pilot[Any], screen: ResultsScreen, *run_ids: int) -> None:
    """Mark runs with space in the runs table (newest first on screen)."""
    runs = screen.query_one("#runs-table", DataTable)
    runs.focus()
    for run_id in run_ids:
        runs.move_cursor(row=runs.get_row_index(str(run_id)), animate=False)
        await pilot.press("space")
    await pilot.pause()


def shown(static: Static) -> str:
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(static.content)
    return console.export_text()


def plain(cells: list[Any]) -> list[str]:
    return [c.plain if isinstance(c, Text) else str(c) for c in cells]


async def test_the_grid_shows_each_runs_verdict_and_only_disagreements(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(await three_runs(make_settings), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        await mark(pilot, screen, 1, 2)
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        grid = app.screen.query_one(GridTable)
        assert grid.run_ids == [1, 2]
        # each run's header: its model, its run id (one prompt: not named), its pass rate
        heads = [str(c.label.plain).split("\n") for c in grid.ordered_columns][2:]
        assert heads == [
            ["baseline/always-bad", "#1", "60.0% correct"],
            ["baseline/always-good", "#2", "40.0% correct"],
        ]
        assert grid.row_count == GOOD_CASES + BAD_CASES
        assert [item.case_id for item in grid.items] == case_ids()
        for i, item in enumerate(grid.items):
            cells = plain(grid.get_row_at(i))
            assert cells[0].startswith("≠ ")  # they disagree on every case
            assert cells[2:] == ["bad", "good"]
            assert item.verdicts[1].outcome != item.verdicts[2].outcome
        status = str(app.screen.query_one("#compare-status", Static).render())
        assert "5 of 5 cases disagree" in status
        await pilot.press("d")
        await settle(pilot)
        assert grid.only_disagreements and grid.row_count == 5

        # enter: the case with each run's explanation side by side
        grid.move_cursor(row=0, animate=False)
        await pilot.press("enter")
        await settle(pilot)
        answers = app.screen
        assert isinstance(answers, AnswersScreen)
        assert answers.case_id == case_ids()[0]
        panes = [shown(p.query_one(Static)) for p in answers.query(".answer")]
        assert len(panes) == 2
        assert "always-bad · default #1" in panes[0] and "always-good · default #2" in panes[1]
        assert "explanation" in panes[0] and "raw reply" in panes[1]
        await pilot.press("escape")
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen


async def test_runs_that_agree_leave_an_empty_disagreement_grid(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(await three_runs(make_settings), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        await mark(pilot, screen, 1, 3)
        await pilot.press("c")
        await settle(pilot)
        grid = app.screen.query_one(GridTable)
        assert grid.row_count == 5 and not any(item.disagree for item in grid.items)
        await pilot.press("d")
        await settle(pilot)
        assert grid.row_count == 0
        status = str(app.screen.query_one("#compare-status", Static).render())
        assert "0 of 5 cases disagree" in status and "agree on every case" in status


async def test_without_marks_the_grid_takes_the_latest_run_of_each_model(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(await three_runs(make_settings), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_results(pilot, app)
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        assert app.screen.query_one(GridTable).run_ids == [2, 3]


async def test_the_diff_counts_flips_both_ways_and_filters_them(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(await three_runs(make_settings), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        await mark(pilot, screen, 1, 2)
        await pilot.press("d")
        await settle(pilot)
        diff = app.screen
        assert isinstance(diff, DiffScreen) and (diff.before, diff.after) == (1, 2)
        assert diff.counts is not None
        assert (diff.counts.fixed, diff.counts.broke, diff.counts.same) == (2, 3, 0)
        counts = str(diff.query_one("#diff-counts", Static).render())
        assert "5 flipped" in counts and "2 fixed" in counts and "3 broke" in counts
        table = diff.query_one(FlipTable)
        assert table.row_count == 5
        flips = {item.case_id: item.flip.value for item in table.items}
        assert sorted(flips.values()) == ["broke"] * 3 + ["fixed"] * 2
        assert all(flips[c] == "fixed" for c in flips if "good" in c)
        await pilot.press("f")  # only the fixed ones
        await settle(pilot)
        assert table.only == "fixed" and table.row_count == 2
        assert all(plain(table.get_row_at(i))[4] == "fixed" for i in range(2))
        await pilot.press("f")
        await settle(pilot)
        assert table.only == "broke" and table.row_count == 3
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, AnswersScreen) and app.screen.run_ids == [1, 2]


async def test_the_diff_of_a_run_defaults_to_the_run_before_it(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(await three_runs(make_settings), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        screen.show_run(3)
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        diff = app.screen
        assert isinstance(diff, DiffScreen) and (diff.before, diff.after) == (1, 3)
        assert diff.counts is not None and diff.counts.same == 5 and diff.counts.flipped == 0
        assert "nothing flipped" in str(diff.query_one("#compare-status", Static).render())


async def test_the_store_pages_the_grid_by_case_id(tmp_path: Path) -> None:
    """Keyset pages: every case once, in order, however the pages fall."""
    from scripts.harness.databases import fill_results

    db = tmp_path / "bulk.db"
    await fill_results(db, 1000, runs=4)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE evaluations SET outcome='correct' WHERE run_id=2 AND case_index%7=0")
    store = await Store.open(db)
    try:
        seen: list[str] = []
        after = None
        while page := await store.grid_page([1, 2, 3, 4], after, limit=64):
            seen += [row.case_id for row in page]
            after = page[-1].case_id
            assert all(set(row.verdicts) == {1, 2, 3, 4} for row in page)
        assert seen == sorted(seen) and len(seen) == len(set(seen)) == 250
        counts = await store.grid_counts([1, 2, 3, 4])
        differing = await store.grid_page([1, 2, 3, 4], None, 1000, only_disagreements=True)
        assert counts.cases == 250 and counts.disagreements == len(differing)
        assert all(row.disagree for row in differing) and differing
        flips = await store.flip_counts(1, 2)
        assert flips.flipped == len(await store.flips_page(1, 2, None, 1000))
    finally:
        await store.close()


# --- the command palette -----------------------------------------------------------------


async def palette(pilot: Pilot[Any], query: str) -> None:
    """Search the palette for `query` and take the best hit, which must be that command."""
    hits = await search_palette(pilot, query)
    assert hits[0].lower().startswith(query), hits
    await pilot.press("enter")
    await settle(pilot)


async def test_the_palette_opens_the_views_and_jumps_to_a_run(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(await three_runs(make_settings), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await palette(pilot, "open results")
        assert isinstance(app.screen, ResultsScreen)
        await palette(pilot, "compare runs")
        assert isinstance(app.screen, CompareScreen)
        await palette(pilot, "jump to run 2")
        results = app.screen
        assert isinstance(results, ResultsScreen) and results.run_filter == 2
        table = results.query_one(ResultsTable)
        assert table.row_count == 5 and all(r["run_id"] == 2 for r in table._rows)
        await palette(pilot, "diff two runs")
        assert isinstance(app.screen, DiffScreen)
        assert (app.screen.before, app.screen.after) == (1, 2)


async def test_the_palette_sets_filters_and_copies(
    make_settings: Callable[..., Settings], clean_suite: Path, monkeypatch: Any
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    app = make_app(await three_runs(make_settings), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        results = await open_results(pilot, app)
        await palette(pilot, "filter: outcome wrong")
        assert results.query_one("#filter-outcome", Select).value == "wrong"
        table = results.query_one(ResultsTable)
        # wrong: the good cases of runs 1 and 3, the bad ones of run 2
        assert table.row_count == 7 and {r["outcome"] for r in table._rows} == {"wrong"}
        await palette(pilot, "copy case id")
        assert app.clipboard == table._rows[0]["case_id"]
        await palette(pilot, "copy raw reply")
        result = await (await app.store()).result(int(table._rows[0]["id"]))
        assert result is not None and app.clipboard == result["raw_reply"] and app.clipboard
        await palette(pilot, "clear filters")
        assert results.query_one("#filter-outcome", Select).value == Select.NULL
        assert table.total == 15
        app.clear_notifications()
        await palette(pilot, "open the report in a browser")
        assert app.last_report is not None and app.last_report.is_file()
        notes = [n.message for n in app._notifications]
        assert any("no display" in n and str(app.last_report) in n for n in notes), notes
        await palette(pilot, "copy report path")
        assert app.clipboard == str(app.last_report)


async def test_model_names_in_the_palette_are_not_markup(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    """A model called `[bold red]x` is listed as those characters, and does not break it."""
    await record_run(make_settings(model="baseline/always-bad"))
    with sqlite3.connect("results.db") as conn:
        conn.execute("UPDATE runs SET model_name='[bold red]evil[/]\x1b[2J'")
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        from secbench_tui.tui.commands import run_commands

        (command,) = await run_commands(app)
        assert command.name == "Jump to run 1: [bold red]evil[/]\\x1b[2J"
        await palette(pilot, "jump to run 1")
        assert isinstance(app.screen, ResultsScreen) and app.screen.run_filter == 1


# --- tables that use the terminal ----------------------------------------------------------


def long_case_suite(suite: Path) -> None:
    """A case whose id is long enough to be cut in a narrow terminal only."""
    source = suite / "shop" / "list-orders-01-good.md"
    name = "list-orders-of-the-signed-in-tenant-by-page-01-good.md"
    source.rename(source.with_name(name))


async def test_the_case_column_takes_the_free_width_and_follows_a_resize(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    long_case_suite(clean_suite)
    await record_run(make_settings(model="baseline/always-bad"))
    app = make_app(make_settings(), offline_catalog=True)
    long_id = next(c for c in case_ids() if "signed-in-tenant" in c)
    async with app.run_test(size=(200, 50)) as pilot:
        screen = await open_results(pilot, app)
        table = screen.query_one(ResultsTable)

        def shown_case() -> str:
            row = next(i for i in range(table.row_count) if table._rows[i]["case_id"] == long_id)
            return plain(table.get_row_at(row))[2]

        whole = "shop/list-orders-of-the-signed-in-tenant-by-page-01 good"
        assert shown_case() == whole  # 200 columns: nothing cut
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        narrow = shown_case()
        head, _, end = narrow.partition("…")  # the scenario's middle goes: its start, the
        assert head.startswith("shop/list") and whole.startswith(head)  # app, the number stay
        assert end.endswith("-01 good") and whole.endswith(end)
        assert len(narrow) <= table.case_width and table.case_width >= 24
        # every column stays in sight: the outcome is not cut off
        widths = sum(c.get_render_width(table) for c in table.ordered_columns)
        assert widths <= table.size.width
        await pilot.resize_terminal(200, 50)
        await settle(pilot)
        assert shown_case() == whole


async def test_the_grid_is_drawn_at_its_case_width_before_the_table_is_idle(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    """DataTable measures new rows only when its message queue is empty; a frame drawn
    before that (a loaded machine, the status line's refresh) used the case column's width
    after `clear`: its header's, `≠ sh` for `≠ shop/get-order-01 bad`. The rows are drawn
    here with the table's queue never reached: the frame must already be at their width."""
    app = make_app(await three_runs(make_settings), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        await mark(pilot, screen, 1, 2)
        await pilot.press("c")
        await settle(pilot)
        grid = app.screen.query_one(GridTable)
        store = await app.store()

        def drawn() -> list[str]:
            """The case column of each row as a frame draws it now."""
            column = grid.ordered_columns[0].get_render_width(grid)
            top = grid.header_height
            return [grid.render_line(top + i).text[:column].strip() for i in range(5)]

        labels = [f"≠ {grid.label(item.case_id)}" for item in grid.items]
        assert drawn() == labels  # idle since: measured
        for redraw in ("reload", "resize"):
            if redraw == "reload":
                await grid.reload(store)  # the rows again, as `d`, `f` and `p` draw them
            else:
                grid.case_width = -1  # as a resize that changes the case column's width
                grid.on_resize()
            assert drawn() == labels, redraw  # no await since: the table was never idle


async def test_the_run_table_recuts_its_cases_after_a_resize(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    from secbench_tui.tui.screens.run import RunScreen

    long_case_suite(clean_suite)
    app = make_app(make_settings(model="baseline/always-good"), offline_catalog=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_until(pilot, lambda: run.state == "completed")
        await settle(pilot)
        table = run.query_one("#run-table", DataTable)
        cases = [plain(table.get_row_at(i))[1] for i in range(table.row_count)]
        assert any("…" in c and c.startswith("shop/") for c in cases)
        assert "cost" in str(run.query_one("#tally", Static).render())  # 80 columns: it wraps
        await pilot.resize_terminal(200, 50)
        await settle(pilot)
        cases = [plain(table.get_row_at(i))[1] for i in range(table.row_count)]
        assert not any("…" in c for c in cases)
        assert any("signed-in-tenant" in c for c in cases)


async def test_sorting_by_case_and_outcome_pages_through_everything(
    make_settings: Callable[..., Settings], clean_suite: Path, tmp_path: Path
) -> None:
    from scripts.harness.databases import fill_results

    await fill_results(Path("results.db"), 900, runs=3)
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        table = screen.query_one(ResultsTable)
        await pilot.press("s")  # by case
        await settle(pilot)
        assert table.sort_key == "case_id"
        assert "case ▲" in [c.label.plain for c in table.ordered_columns]
        while not table.exhausted:
            table.move_cursor(row=table.row_count - 1, animate=False)
            await settle(pilot)
        keys = [(r["case_id"], r["id"]) for r in table._rows]
        assert keys == sorted(keys) and len(keys) == 900
        await pilot.press("o")  # the same column the other way
        await settle(pilot)
        assert table.newest_first and table._rows[0]["case_id"] == max(k for k, _ in keys)
        await pilot.press("s")  # by outcome, ascending
        await settle(pilot)
        assert table.sort_key == "outcome" and table._rows[0]["outcome"] == "correct"


async def test_m_maximises_the_focused_pane_and_again_restores_it(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    await record_run(make_settings(model="baseline/always-bad"))
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        table = screen.query_one(ResultsTable)
        await pilot.press("m")
        await pilot.pause()
        assert screen.maximized is table
        await pilot.press("m")
        await pilot.pause()
        assert screen.maximized is None
        # 80 columns: the result pane is hidden; enter shows it full screen, escape comes back
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        detail = screen.query_one("#detail-pane")
        assert not detail.display
        await pilot.press("enter")
        await pilot.pause()
        assert screen.maximized is detail and detail.display and detail.has_focus
        assert "expected" in shown(screen.query_one("#detail", Static))
        await pilot.press("escape")
        await pilot.pause()
        assert screen.maximized is None and table.has_focus
        assert isinstance(app.screen, ResultsScreen)


async def test_r_from_a_view_comes_back_to_the_results_and_e_feeds_copy_report_path(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    from secbench_tui.tui.screens.export import ExportScreen

    app = make_app(await three_runs(make_settings), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        results = await open_results(pilot, app)
        await pilot.press("c")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, AnswersScreen)
        await pilot.press("r")
        await settle(pilot)
        assert app.screen is results
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen))
        export = app.screen
        assert isinstance(export, ExportScreen)
        await wait_until(pilot, lambda: export.path is not None)
        await pilot.press("enter")
        await settle(pilot)
        await palette(pilot, "copy report path")
        assert export.path is not None and app.clipboard == str(export.path)


async def test_case_ids_and_replies_from_outside_are_shown_not_obeyed(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    """Markup and escape sequences in a case id, a model name or a reply stay characters."""
    await three_runs(make_settings)
    hostile = "[red]x[/]\x1b[2J"
    with sqlite3.connect("results.db") as conn:
        conn.execute("UPDATE evaluations SET case_id = ? || case_id", (hostile,))
        conn.execute("UPDATE evaluations SET explanation = ?, raw_reply = ?", (hostile, hostile))
        conn.execute("UPDATE runs SET model_name = ? || model_name", (hostile,))
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=(200, 50)) as pilot:
        screen = await open_results(pilot, app)
        await mark(pilot, screen, 1, 2)
        await pilot.press("c")
        await settle(pilot)
        grid = app.screen.query_one(GridTable)
        cell = plain(grid.get_row_at(0))[0]
        assert "[red]x[/]\\x1b[2J" in cell and "\x1b" not in cell
        labels = [c.label.plain for c in grid.ordered_columns]
        assert all("\x1b" not in label for label in labels)
        await pilot.press("enter")
        await settle(pilot)
        panes = [shown(p.query_one(Static)) for p in app.screen.query(".answer")]
        assert all("[red]x[/]\\x1b[2J" in pane and "\x1b" not in pane for pane in panes)


async def test_the_grid_groups_by_pair_one_row_per_scenario(
    make_settings: Callable[..., Settings],
    remote_settings: Settings,
    clean_suite: Path,
    server: LoopbackServer,
) -> None:
    """`p`: one row per scenario, each run's good/bad pairs both right; ✓ when solved."""
    from secbench_tui.core.suites.markdown import read_case
    from secbench_tui.tui.widgets.case_tables import PairGridTable

    for path in clean_suite.glob("*/*-*.md"):  # the loopback server answers every case right
        case = read_case(path)
        assert not isinstance(case, str)
        server.always(case.code, answer(case.expected))
    await record_run(make_settings(model="baseline/always-bad"))
    await record_run(remote_settings)
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        await mark(pilot, screen, 1, 2)
        await pilot.press("c")
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        pairs = app.screen.query_one(PairGridTable)
        assert pairs.display and not app.screen.query_one(GridTable).display
        assert [item.case_id for item in pairs.items] == [
            "blog/edit-post",
            "shop/get-order",
            "shop/list-orders",
        ]
        rows = [plain(pairs.get_row_at(i)) for i in range(pairs.row_count)]
        assert [row[1:] for row in rows] == [
            ["2", "0/1 V1", "1/1 ✓"],  # always bad: the pair is P-V; right answers solve it
            ["1", "·", "·"],  # a bad case without a good sibling makes no pair
            ["2", "0/1 V1", "1/1 ✓"],
        ]
        status = app.screen.query_one("#compare-status", Static)
        assert "3 scenarios" in str(status.render())
        # each run's totals: in its header, and in full for the run in focus
        assert "0.0% 1✓" in str(pairs.columns[pairs.ordered_columns[2].key].label)
        await pilot.press("right", "right")
        await settle(pilot)
        assert "pairs right 0 of 2 (P-C 0.0%), scenarios solved 1 of 3" in str(status.render())
        # the frame, the status line and the footer all stay on screen
        assert pairs.region.bottom < status.region.y + 1 <= app.screen.size.height - 1
        widths = sum(c.get_render_width(pairs) for c in pairs.ordered_columns)
        assert widths <= pairs.size.width
        await pilot.press("f")  # the scenarios some run did not solve
        await settle(pilot)
        assert [item.case_id for item in pairs.items] == ["blog/edit-post", "shop/list-orders"]
        await pilot.press("down", "enter")  # a scenario's cases, one per row, each run's answer
        await settle(pilot)
        grid = app.screen.query_one(GridTable)
        assert grid.display and grid.current().case_id.startswith("shop/list-orders-")
        await pilot.press("p")
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert app.screen.query_one(GridTable).row_count == GOOD_CASES + BAD_CASES
