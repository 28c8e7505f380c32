"""The setup screen's keys where the focus is: text fields type, escape leaves them, Enter in
the model filter adds to a matrix instead of replacing it, and the estimate after a run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import Input, OptionList

from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens.run import RunScreen
from secbench_tui.tui.screens.setup import SetupScreen
from secbench_tui.tui.widgets.model_picker import ModelPicker
from tests.tui.conftest import SIZE, settle, wait_until


def footer_keys(screen: SetupScreen) -> set[str]:
    return {b.binding.description for b in screen.active_bindings.values() if b.enabled}


async def test_a_text_field_keeps_slash_and_space_and_escape_leaves_it(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(make_settings(model="baseline/random"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        setup = app.screen
        assert isinstance(setup, SetupScreen)
        setup.query_one("#model-list").focus()
        await pilot.pause()
        assert "Filter models" in footer_keys(setup)
        path = setup.query_one("#cases-path", Input)
        path.focus()
        await pilot.pause()
        assert "Filter models" not in footer_keys(setup)  # `/` types a slash here
        assert "Add/remove model" not in footer_keys(setup)
        await pilot.press("escape")
        await pilot.pause()
        assert setup.focused is setup.query_one("#model-list", OptionList)
        assert "Filter models" in footer_keys(setup)


async def test_enter_in_the_filter_adds_to_several_models_chosen(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(make_settings(model="baseline/always-bad"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        setup = app.screen
        assert isinstance(setup, SetupScreen)
        picker = setup.query_one(ModelPicker)
        models = setup.query_one("#model-list", OptionList)
        models.focus()
        while models.highlighted_option and models.highlighted_option.id != "baseline/always-good":
            await pilot.press("down")
        await pilot.press("space")
        await settle(pilot)
        assert picker.selected == ["baseline/always-bad", "baseline/always-good"]
        await pilot.press("slash")
        await pilot.press(*"baseline/random", "enter")
        await settle(pilot)
        assert picker.selected == [
            "baseline/always-bad",
            "baseline/always-good",
            "baseline/random",
        ]


async def test_the_estimate_after_a_run_counts_what_it_stored_as_reused(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    app = make_app(make_settings(model="baseline/always-bad"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        setup = app.screen
        assert isinstance(setup, SetupScreen)
        assert setup.estimated is not None and setup.estimated.left == 5
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_until(pilot, lambda: run.state == "completed")
        await pilot.press("n")  # back to setup
        await wait_until(pilot, lambda: app.screen is setup)
        await settle(pilot)
        assert setup.estimated is not None and setup.estimated.left == 0
