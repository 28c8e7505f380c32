"""The app watching a shared run that a worker in another process writes to PostgreSQL
(issue 36): the results screen follows the store while the run is running, and shows it
completed once the worker has stored its last case."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable

from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.host import Intervals
from secbench_tui.tui.screens.results import ResultsScreen
from secbench_tui.tui.widgets.results_table import ResultsTable
from tests.e2e.harness import cli_env
from tests.e2e.postgres_stores import fresh_database, query
from tests.e2e.server import LoopbackServer
from tests.tui.conftest import SIZE, settle, wait_for_state, wait_until

pytestmark = [pytest.mark.long, pytest.mark.xdist_group("postgres-store")]


def stored(db: str) -> int:
    try:
        return int(query(db, "SELECT COUNT(*) FROM evaluations")[0][0])  # type: ignore[arg-type]
    except Exception:  # the worker has not made the tables yet
        return 0


async def test_the_app_follows_a_shared_run_a_worker_writes(
    make_settings: Callable[..., Settings],
    clean_suite: Path,
    server: LoopbackServer,
    pg_url: str,
    tmp_path: Path,
) -> None:
    db = fresh_database(pg_url)
    server.hold_after(2)  # the worker's later cases wait until the app has seen the first
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "secbench_tui",
            "--no-ui",
            "--model",
            "openai/gpt-4o-mini",
            "--base-url",
            server.base_url,
            "--db",
            db,
            "--cases",
            str(clean_suite),
            "--worker",
            "--concurrency",
            "1",
        ],  # fmt: skip
        cwd=tmp_path,
        env=cli_env("sk-or-test"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        await wait_for_state(lambda: stored(db) >= 2, "the worker's first results")
        app = make_app(make_settings(db=db), offline_catalog=True, intervals=Intervals(follow=0.1))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("r")
            await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen))
            screen = app.screen
            assert isinstance(screen, ResultsScreen)
            runs = screen.query_one("#runs-table", DataTable)
            table = screen.query_one(ResultsTable)
            await wait_until(pilot, lambda: table.row_count >= 2, limit=3000)
            assert str(runs.get_row_at(0)[6]) == "running"
            assert table.row_count < 5, "the worker holds its later cases"
            server.release()
            await wait_until(pilot, lambda: table.row_count == 5, limit=6000)
            await wait_until(pilot, lambda: str(runs.get_row_at(0)[6]) == "completed", limit=6000)
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
    finally:
        server.release()
        if worker.poll() is None:
            worker.kill()
            worker.wait()
