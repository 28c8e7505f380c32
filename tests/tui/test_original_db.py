"""The app on a database the original security-bench wrote: it says where the copy went,
and the original's prompts are runs' prompt names, one run per model and prompt."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import DataTable, Select

from scripts.harness import original_db as original
from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from tests.e2e.test_original_db import _original_db
from tests.tui.conftest import SIZE
from tests.tui.test_results import open_results


async def test_the_app_adopts_an_original_database_and_says_where_the_copy_is(
    make_settings: Callable[..., Settings],
) -> None:
    _original_db(Path("results.db"))
    before = original.read_all(Path("results.db"))
    app = make_app(make_settings(), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(pilot, app)
        notes = {n.title: n.message for n in app._notifications}
        assert "results.db.bak-before-secbench-tui" in notes["Database"]
        assert screen.query_one("#runs-table", DataTable).row_count == 4  # no repeats
        prompts = screen.query_one("#filter-prompt", Select)
        assert prompts.display  # the original's prompts are there to choose from
        assert await (await app.store()).prompt_names() == ["cot", "default", "strict"]
    assert original.read_all(Path("results.db")) == before
