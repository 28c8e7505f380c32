"""Fixtures for the terminal app's tests: a copied suite, a temporary database, settings,
the loopback OpenRouter server, and helpers that wait on the app's state (never on time)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from textual.pilot import Pilot

from secbench_tui.config import Settings
from tests.e2e.server import LoopbackServer

FIXTURE_SUITE = Path(__file__).resolve().parents[1] / "fixtures" / "suite"
SIZE = (120, 40)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in tmp_path with the model cache there too: no test writes to ~ or the repo."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """The fixture suite (2 apps, 5 usable cases, 3 broken files), relative to the cwd."""
    shutil.copytree(FIXTURE_SUITE, tmp_path / "suite")
    return Path("suite")


@pytest.fixture
def clean_suite(suite: Path) -> Path:
    """The fixture suite without its broken files: 5 cases, nothing skipped."""
    for broken in suite.glob("*/broken-*.md"):
        broken.unlink()
    return suite


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


@pytest.fixture
def make_settings(suite: Path) -> Callable[..., Settings]:
    def make(**fields: Any) -> Settings:
        base: dict[str, Any] = {"cases": suite, "db": Path("results.db")}
        base.update(fields)
        return Settings(**base)

    return make


@pytest.fixture
def remote_settings(make_settings: Callable[..., Settings], server: LoopbackServer) -> Settings:
    """A real model id at the loopback server, with a key, answering each case correctly."""
    return make_settings(
        model="openai/gpt-4o-mini",
        base_url=server.base_url,
        api_key=SecretStr("sk-test"),
        max_retries=2,
    )


async def wait_until(pilot: Pilot[Any], condition: Callable[[], bool], limit: int = 2000) -> None:
    """Let the app run until `condition` holds: waits on state, with a bound on rounds."""
    for _ in range(limit):
        if condition():
            return
        await pilot.pause(0.01)
    raise AssertionError("the app never reached the expected state")


async def wait_for_exit(app: Any, seconds: float = 120) -> None:
    """Let the app run until it has exited. Not through `pilot.pause`, which waits for the
    screen to handle its messages, and a screen that is closing may never do that."""
    await wait_for_state(lambda: not app.is_running, "the app to exit", seconds)
    import asyncio

    # a quit during a run closes the app at once; its runs end (and store) as it closes
    assert await asyncio.to_thread(app.wait_for_stopped_runs), "the stopped runs never ended"


async def wait_for_state(condition: Callable[[], bool], what: str, seconds: float = 120) -> None:
    """Wait for `condition` without `pilot.pause` (an app that is quitting may not answer it),
    bounded by time."""
    import asyncio
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def runs_stopping(screen: Any) -> bool:
    """The runs' own event loop (in a thread of its own) has taken the stop: no case starts
    after it. Only then may a test release an answer it held: released before, the answer
    could let the run go on to its next cases, even to its end."""
    lifecycle = getattr(getattr(screen, "engine", None), "lifecycle", None)
    matrix = getattr(lifecycle, "matrix", None)
    return bool(matrix is not None and matrix.stopping)


async def _workers_done(app: Any) -> None:
    """Every worker the app has now has ended. One cancelled on the way is no failure: an
    exclusive worker (the detail shown for the highlighted row) is cancelled whenever a newer
    one replaces it, which a loaded machine makes likely; `WorkerManager.wait_for_complete`
    raised `WorkerCancelled` for it. A worker that failed still fails the test."""
    from textual.worker import WorkerCancelled

    for worker in list(app.workers):
        try:
            await worker.wait()
        except WorkerCancelled:
            pass


async def settle(pilot: Pilot[Any]) -> None:
    """Every worker finished and every message handled; no unexpected error on the way.

    The app turns an unexpected exception into a notification and goes on (`tui.errors`);
    `app.errors` keeps them, so a test never passes over one unnoticed.
    """
    await _workers_done(pilot.app)
    await pilot.pause()
    await _workers_done(pilot.app)
    await pilot.pause()
    assert not getattr(pilot.app, "errors", []), pilot.app.errors  # type: ignore[attr-defined]


async def search_palette(pilot: Pilot[Any], query: str) -> list[str]:
    """Open ctrl+p, put `query` in its input as typing does (inserted at the cursor, at once
    rather than key by key), and wait for the search to finish; returns the hits, best first.
    """
    from textual.command import CommandInput, CommandList, CommandPalette, Hit

    await pilot.press("ctrl+p")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, CommandPalette))
    palette = pilot.app.screen
    palette.query_one(CommandInput).insert_text_at_cursor(query)
    hits = palette.query_one(CommandList)

    def searched() -> bool:  # the list holds search hits, no longer what it shows on opening
        options = [hits.get_option_at_index(i) for i in range(hits.option_count)]
        return bool(options) and all(isinstance(getattr(o, "hit", None), Hit) for o in options)

    await wait_until(pilot, searched)
    await settle(pilot)  # the search's worker has finished: every hit is in
    return [str(hits.get_option_at_index(i).hit.text) for i in range(hits.option_count)]  # type: ignore[attr-defined]


async def record_run(settings: Settings) -> int:
    """Run an evaluation the headless way (same session and engine) into settings.db."""
    import io

    from secbench_tui.core.run.catalog import Catalog
    from secbench_tui.core.run.engine import Engine
    from secbench_tui.core.store.database import Store
    from secbench_tui.headless import consume
    from secbench_tui.lifecycle import make_provider
    from secbench_tui.planning.plan import plan

    (one,) = plan(settings, Catalog([], "none")).cells  # one model, one prompt: one run
    provider = make_provider(one.settings)
    store = await Store.open(settings.db)
    try:
        finished = await consume(Engine(one.spec, provider, store), io.StringIO(), io.StringIO())
    finally:
        await provider.aclose()
        await store.close()
    assert finished is not None
    return finished.run_id
