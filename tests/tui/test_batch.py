"""`--batch` in the app (issue 35): a choice in the setup, the price beside the live one in
its estimate, and a run screen that shows each batch and says it waits on the provider."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from textual.widgets import Checkbox, Static

from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens.run import RunScreen
from secbench_tui.tui.widgets.batch_progress import BatchPanel
from tests.e2e.batch_server import BatchLoopback, BatchPlan
from tests.tui.conftest import SIZE, settle, wait_until


def outcomes(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT outcome FROM evaluations ORDER BY id")]


async def test_a_batch_run_from_the_setup_shows_its_batches_and_what_it_waits_on(
    make_settings: Callable[..., Settings], clean_suite: Path
) -> None:
    with BatchLoopback("openrouter") as server:
        server.plan(BatchPlan(statuses=("validating", "in_progress"), hold=True))
        settings = make_settings(
            model="openai/gpt-4o-mini",
            base_url=server.base_url,
            api_key=SecretStr("sk-test"),
            batch_api="openrouter",
            batch_poll=0.01,
        )
        app = make_app(settings, offline_catalog=True)
        async with app.run_test(size=SIZE) as pilot:
            box = app.screen.query_one("#batch", Checkbox)
            assert box.value is False
            box.value = True  # the setup's choice: through the batch API
            estimate = app.screen.query_one("#estimate", Static)
            await wait_until(pilot, lambda: "in batches against" in str(estimate.render()))
            await pilot.press("ctrl+r")
            await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
            run: Any = app.screen
            panel = run.query_one(BatchPanel)
            await wait_until(pilot, lambda: server.polled() >= 2 and panel.display)
            shown = str(panel.render())
            assert "waiting on the provider" in shown and "in_progress" in shown
            server.finish()
            await settle(pilot)
            assert run.state == "completed"
            assert "results stored" in str(panel.render())
    assert len(server.submissions) == 1 and server.completions() == []
    assert len(outcomes(Path("results.db"))) == 5
