"""The setup screen: choose a model from GET /models, choose apps, start a run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import Input, OptionList, SelectionList

from secbench_tui.config import Settings
from secbench_tui.core.run import catalog
from secbench_tui.tui.app import make_app
from secbench_tui.tui.messages import CatalogLoaded
from secbench_tui.tui.screens.confirm import ConfirmScreen
from secbench_tui.tui.screens.run import RunScreen
from secbench_tui.tui.screens.setup import SetupScreen
from secbench_tui.tui.widgets.model_picker import ModelPicker
from tests.e2e.server import LoopbackServer
from tests.tui.conftest import SIZE, record_run, settle, wait_until


def listed(app: object) -> list[str]:
    options = app.screen.query_one("#model-list", OptionList)  # type: ignore[attr-defined]
    return [str(options.get_option_at_index(i).id) for i in range(options.option_count)]


async def test_the_model_list_comes_from_the_server_and_filters_as_you_type(
    make_settings: Callable[..., Settings], server: LoopbackServer
) -> None:
    app = make_app(make_settings(base_url=server.base_url))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SetupScreen)
        ids = listed(app)
        assert {"openai/gpt-4o-mini", "deepseek/deepseek-r1:free"} <= set(ids)
        assert {"baseline/random", "baseline/always-bad", "baseline/always-good"} <= set(ids)
        await pilot.press("slash", *"mini")
        assert listed(app) == ["openai/gpt-4o-mini"]
        await pilot.press("enter")
        assert app.screen.query_one(ModelPicker).chosen == "openai/gpt-4o-mini"
        detail = str(app.screen.query_one("#model-detail").render())
        assert "128k ctx" in detail and "structured" in detail
    cached = list((Path("cache") / "secbench-tui").glob("models-127.0.0.1-*.json"))
    assert len(cached) == 1


async def test_a_typed_id_not_in_the_list_can_be_chosen(
    make_settings: Callable[..., Settings],
) -> None:
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"acme/x1", "enter")
        assert app.screen.query_one(ModelPicker).chosen == "acme/x1"


async def test_flags_preselect_model_and_apps(make_settings: Callable[..., Settings]) -> None:
    app = make_app(make_settings(model="baseline/always-bad", apps=["shop"]), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.screen.query_one(ModelPicker).chosen == "baseline/always-bad"
        assert listed(app)[0] == "baseline/always-bad"  # the chosen model comes first
        apps = app.screen.query_one("#groups", SelectionList)
        assert apps.selected == ["shop"]
        labels = [str(apps.get_option_at_index(i).prompt) for i in range(apps.option_count)]
        assert labels == ["blog (2)", "shop (6)"]
        status = str(app.screen.query_one("#setup-status").render())
        assert "6 cases" in status and "baseline/always-bad" in status


async def test_recent_models_from_the_database_are_listed_first(
    make_settings: Callable[..., Settings], remote_settings: Settings
) -> None:
    used = remote_settings.replace(models=["vendor/used-before"], limit=1)
    await record_run(used)
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert listed(app)[0] == "vendor/used-before"
    # a model given on the command line comes first too, but only used ones read "recent"
    app = make_app(make_settings(model="vendor/never-used"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert listed(app)[:2] == ["vendor/never-used", "vendor/used-before"]
        options = app.screen.query_one("#model-list", OptionList)
        rows = [str(options.get_option_at_index(i).prompt) for i in range(2)]
        assert not rows[0].rstrip().endswith("recent") and rows[1].rstrip().endswith("recent")


async def test_ctrl_r_starts_the_run_with_the_settings_on_screen(
    make_settings: Callable[..., Settings],
) -> None:
    app = make_app(make_settings(model="baseline/always-bad"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.click("#limit")
        await pilot.press("2")
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        assert isinstance(run, RunScreen)
        assert run.settings.limit == 2 and run.settings.models == ["baseline/always-bad"]
        await settle(pilot)
        assert run.state == "completed"
        assert run.query_one("#run-table").row_count == 2


async def test_a_bad_value_is_a_notification_not_a_crash(
    make_settings: Callable[..., Settings],
) -> None:
    app = make_app(make_settings(model="baseline/random"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        temperature = app.screen.query_one("#temperature", Input)
        temperature.value = "7"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)
        assert any("temperature" in n.message for n in app._notifications)


async def test_no_key_for_a_remote_endpoint_asks_before_starting(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(model="vendor/model", base_url="https://models.example.org/v1")
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "No API key" in app.screen.question
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)


async def test_typing_on_the_list_types_into_the_filter_but_bound_keys_keep_meaning(
    make_settings: Callable[..., Settings],
) -> None:
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.focused is not None and app.focused.id == "model-list"
        await pilot.press("b", "a", "d")
        field = app.screen.query_one("#model-filter", Input)
        assert field.value == "bad" and field.has_focus
        assert listed(app) == ["baseline/always-bad"]
        app.screen.query_one("#model-list", OptionList).focus()
        await pilot.press("question_mark")  # bound: opens help, not typed
        assert type(app.screen).__name__ == "HelpScreen" and field.value == "bad"
        await pilot.press("escape", "q")
        await pilot.pause()
    assert app.return_code == 0


async def test_the_model_given_on_the_command_line_is_highlighted_and_described(
    make_settings: Callable[..., Settings], server: LoopbackServer
) -> None:
    app = make_app(make_settings(model="openai/gpt-4o-mini", base_url=server.base_url))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.screen.query_one(ModelPicker).catalog.source == "network"
        options = app.screen.query_one("#model-list", OptionList)
        assert options.highlighted_option is not None
        assert options.highlighted_option.id == "openai/gpt-4o-mini"
        detail = str(app.screen.query_one("#model-detail").render())
        assert detail.startswith("openai/gpt-4o-mini") and "128k ctx" in detail


async def test_slash_filters_models_from_anywhere_and_the_status_counts_the_limit(
    make_settings: Callable[..., Settings],
) -> None:
    app = make_app(make_settings(model="baseline/random"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.screen.query_one("#groups", SelectionList).focus()
        await pilot.press("slash", *"good")
        field = app.screen.query_one("#model-filter", Input)
        assert field.has_focus and field.value == "good"
        assert listed(app) == ["baseline/always-good"]
        status = app.screen.query_one("#setup-status")
        assert "8 cases" in str(status.render())
        app.screen.query_one("#limit", Input).value = "3"
        await pilot.pause()
        assert "3 of 8 cases (limit 3)" in str(status.render())


async def test_apps_asked_for_that_the_suite_lacks_are_named(
    make_settings: Callable[..., Settings],
) -> None:
    app = make_app(
        make_settings(model="baseline/random", apps=["shop", "nope"]), offline_catalog=True
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.screen.query_one("#groups", SelectionList).selected == ["shop"]
        (note,) = [n for n in app._notifications if n.title == "not in this suite"]
        assert note.message.startswith("--apps: nope not in suite; it has blog, shop")


async def test_a_folder_typed_but_not_loaded_is_not_run(
    make_settings: Callable[..., Settings],
) -> None:
    app = make_app(make_settings(model="baseline/random"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.screen.query_one("#cases-path", Input).value = "somewhere/else"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)
        assert any(n.title == "suite folder not loaded" for n in app._notifications)


async def test_a_list_arriving_late_leaves_the_highlight_where_the_user_moved_it(
    make_settings: Callable[..., Settings],
) -> None:
    app = make_app(make_settings(model="baseline/always-bad"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        options = app.screen.query_one("#model-list", OptionList)
        await pilot.press("down")
        moved_to = options.highlighted_option.id if options.highlighted_option else None
        assert moved_to not in (None, "baseline/always-bad")
        picker = app.screen.query_one(ModelPicker)
        fresh = catalog.Catalog(  # the network answers now, with one more model
            catalog.arrange([catalog.ModelInfo("openai/gpt-4o-mini")], ["baseline/always-bad"]),
            "network",
        )
        app.screen.post_message(CatalogLoaded(fresh))
        await pilot.pause()
        assert picker.catalog is fresh and "openai/gpt-4o-mini" in listed(app)
        assert options.highlighted_option is not None
        assert options.highlighted_option.id == moved_to  # enter chooses what the user sees


async def test_an_endpoint_that_cannot_be_reached_is_named_before_a_run_starts(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    import socket

    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        base_url = f"http://127.0.0.1:{closed.getsockname()[1]}/api/v1"
        settings = make_settings(model="vendor/model", base_url=base_url)
        app = make_app(settings, cache_dir=tmp_path / "cache")
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("ctrl+r")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            question = app.screen.question  # type: ignore[attr-defined]
            assert f"cannot reach {base_url}" in question and "ConnectError" in question
            await pilot.press("n")
            await pilot.pause()
            assert isinstance(app.screen, SetupScreen)


async def test_a_reachable_endpoint_starts_the_run_after_the_check(
    make_settings: Callable[..., Settings], server: LoopbackServer, tmp_path: Path
) -> None:
    settings = make_settings(model="openai/gpt-4o-mini", base_url=server.base_url, limit=1)
    app = make_app(settings, cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        await settle(pilot)
        assert app.screen.state == "completed"  # type: ignore[attr-defined]
