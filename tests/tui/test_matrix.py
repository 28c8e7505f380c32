"""The app runs a matrix: several models and prompts chosen on the setup screen, priced there
before the run, every run listed on the run screen, and the results filtered by prompt."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual.widgets import DataTable, OptionList, Select, SelectionList

from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens.run import RunScreen
from secbench_tui.tui.screens.setup import SetupScreen
from secbench_tui.tui.widgets.model_picker import ModelPicker
from tests.e2e.server import LoopbackServer
from tests.tui.conftest import SIZE, record_run, settle, wait_until
from tests.tui.test_results import open_results, shown_ids


def sql(query: str, *params: object) -> list[tuple[object, ...]]:
    with sqlite3.connect("results.db") as conn:
        return conn.execute(query, params).fetchall()


async def test_two_models_by_two_prompts_from_the_setup_screen(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(make_settings(model="baseline/always-bad"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        setup = app.screen
        assert isinstance(setup, SetupScreen)
        models = setup.query_one("#model-list", OptionList)
        models.focus()
        while models.highlighted_option and models.highlighted_option.id != "baseline/always-good":
            await pilot.press("down")
        await pilot.press("space")  # add it to the model already chosen
        await settle(pilot)
        assert setup.query_one(ModelPicker).selected == [
            "baseline/always-bad",
            "baseline/always-good",
        ]
        prompts = setup.query_one("#prompt-list", SelectionList)
        prompts.focus()
        assert list(prompts.selected) == ["default"]
        await pilot.press("down", "space")  # the second prompt too
        await settle(pilot)
        assert sorted(prompts.selected) == ["attacker", "default"]
        assert setup.estimated is not None and len(setup.estimated.runs) == 4
        assert setup.estimated.left == 4 * 5
        assert "4 run(s)" in str(setup.query_one("#estimate").render())
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_until(pilot, lambda: run.state == "completed", limit=5000)
        await settle(pilot)
        listed = run.query_one("#matrix-table", DataTable)
        assert listed.display and listed.row_count == 4
        rows = [listed.get_row_at(i) for i in range(4)]
        assert [(str(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in rows] == [
            ("baseline/always-bad", "default", "done", "5/5"),
            ("baseline/always-bad", "attacker", "done", "5/5"),
            ("baseline/always-good", "default", "done", "5/5"),
            ("baseline/always-good", "attacker", "done", "5/5"),
        ]
        line = str(run.query_one("#matrix-progress").render())
        assert "4 runs: 4 done" in line and "20/20 cases" in line and "finished" in line
        assert run.focus_slot == 0
        listed.focus()
        await pilot.press("down", "down")  # follow the third run: its cases, its tally
        await settle(pilot)
        assert run.focus_slot == 2 and "always-good" in run.sub_title
        cases = run.query_one("#run-table", DataTable)
        assert cases.row_count == 5
        assert run.tally.counts["correct"] == 2  # always-good on 2 good of 5 cases
        assert sorted(run.export_selection()) == [1, 2, 3, 4]
    stored = sql("SELECT model_name, prompt_name, status FROM runs ORDER BY id")
    assert stored == [
        ("baseline/always-bad", "default", "completed"),
        ("baseline/always-bad", "attacker", "completed"),
        ("baseline/always-good", "default", "completed"),
        ("baseline/always-good", "attacker", "completed"),
    ]


async def test_the_setup_screen_prices_the_plan_and_asks_nothing(
    make_settings: Callable[..., Settings], clean_suite: Path, server: LoopbackServer
) -> None:
    settings = make_settings(
        models=["openai/gpt-4o-mini", "vendor/unlisted"],
        prompts=["default", "attacker"],
        base_url=server.base_url,
    )
    app = make_app(settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        setup = app.screen
        assert isinstance(setup, SetupScreen)
        await wait_until(pilot, lambda: setup.estimated is not None)
        await settle(pilot)
        estimate = setup.estimated
        assert estimate is not None
        by_model = {m.model: m for m in estimate.models}
        assert by_model["openai/gpt-4o-mini"].cost is not None
        assert by_model["openai/gpt-4o-mini"].cost > 0
        assert by_model["vendor/unlisted"].cost is None
        shown = str(setup.query_one("#estimate").render())
        assert "price unknown for vendor/unlisted" in shown
    assert server.completions() == []  # the estimate sent no chat request


async def test_results_filter_by_prompt(make_settings: Callable[..., Settings]) -> None:
    await record_run(make_settings(model="baseline/random", prompts=["default"]))
    await record_run(make_settings(model="baseline/random", prompts=["attacker"]))
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        choice = screen.query_one("#filter-prompt", Select)
        assert choice.display
        everything = shown_ids(screen)
        choice.value = "attacker"
        await settle(pilot)
        wanted = sql(
            "SELECT e.id FROM evaluations e JOIN runs r ON r.id = e.run_id"
            " WHERE r.prompt_name = 'attacker' ORDER BY e.id"
        )
        assert shown_ids(screen) == [w[0] for w in wanted]
        assert 0 < len(wanted) < len(everything)


async def test_one_prompt_hides_the_prompt_filter(make_settings: Callable[..., Settings]) -> None:
    await record_run(make_settings(model="baseline/random"))
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        assert not screen.query_one("#filter-prompt", Select).display


async def test_the_run_list_shows_hostile_prompt_names_literally(
    make_settings: Callable[..., Settings], clean_suite: Path, tmp_path: Path
) -> None:
    """Prompt names are file names: a style or an action link in one is text, not markup."""
    folder = tmp_path / "prompts"
    folder.mkdir()
    names = ["[bold]loud", "[@click=app.quit]q"]
    for name in names:
        (folder / f"{name}.txt").write_text("Judge the code.\n", encoding="utf-8")
    settings = make_settings(
        models=["baseline/always-bad", "baseline/always-good"], prompts=[str(folder)]
    )
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_until(pilot, lambda: run.state == "completed", limit=5000)
        await settle(pilot)
        listed = run.query_one("#matrix-table", DataTable)
        assert listed.row_count == 4
        shown = [listed.get_row_at(i)[2] for i in range(4)]
        # the table reads a str cell as markup (and a model id's stray `[/]` raises): Text
        assert all(isinstance(cell, Text) and not cell.spans for cell in shown)
        assert sorted(cell.plain for cell in shown) == sorted(names * 2)


async def test_the_key_line_counts_every_model_chosen(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    """A baseline first and a remote model second still needs a key: the line said it did not."""
    app = make_app(make_settings(model="baseline/always-bad"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        setup = app.screen
        assert isinstance(setup, SetupScreen)
        picker = setup.query_one(ModelPicker)
        status = setup.query_one("#setup-status")
        setup.refresh_status()
        assert "no key needed" in str(status.render())
        picker.also.append("openai/gpt-4o-mini")  # as space on a listed model does
        setup.refresh_status()
        shown = str(status.render())
        assert "no key needed" not in shown and "OPENROUTER_API_KEY" in shown
