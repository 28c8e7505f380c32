"""`?` explains the screen it is pressed on: the guide, and the keys that work there now."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import DataTable

from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens.help import HelpScreen
from tests.tui.conftest import SIZE, record_run, settle


def listed_keys(app: object) -> dict[str, str]:
    """Description -> keys, as the help's table shows them."""
    screen = app.screen  # type: ignore[attr-defined]
    assert isinstance(screen, HelpScreen)
    table = screen.keys
    keys, descriptions = (list(column.cells) for column in table.columns)
    return {str(d): str(k) for k, d in zip(keys, descriptions, strict=True)}


async def test_help_lists_the_keys_of_the_screen_under_it(
    make_settings: Callable[..., Settings],
) -> None:
    await record_run(make_settings(model="baseline/always-bad"))
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        setup = listed_keys(app)
        assert setup["Run"] == "^r" and setup["Filter models"] == "/"
        assert {"Quit", "Results", "Export", "Help"} <= set(setup)
        await pilot.press("escape", "r")
        await settle(pilot)
        await pilot.press("question_mark")  # the results table has the focus
        results = listed_keys(app)
        assert results["Back"] == "esc" and "Mark run" not in results
        assert results["First"] == "home" and results["Last loaded"] == "end"
        assert "Results" not in results  # already there: `r` does nothing on this screen
        assert {"Search", "Newest first", "Reload", "Export", "Quit"} <= set(results)
        await pilot.press("escape")
        app.screen.query_one("#runs-table", DataTable).focus()
        await pilot.press("question_mark")
        runs = listed_keys(app)
        assert runs["Mark run"] == "space" and "First" not in runs
        await pilot.press("q")  # closes the help, does not quit
        await pilot.pause()
        assert app.is_running and type(app.screen).__name__ == "ResultsScreen"
