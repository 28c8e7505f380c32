"""The verify screen when verifying cannot go on: it names the fix and stops saying
"Verifying…". Needs no PostgreSQL: the failures are made before one would start."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Static

from secbench_tui.config import Settings
from secbench_tui.core.verify.extra import INSTALL
from secbench_tui.tui.app import make_app
from tests.tui.conftest import SIZE, settle, wait_until


async def open_verify(pilot: Pilot[Any], app: App[Any]) -> None:
    """ctrl+v, and yes to running a suite that is not the bundled one."""
    await pilot.press("ctrl+v")
    await wait_until(pilot, lambda: type(app.screen).__name__ in ("ConfirmScreen", "VerifyScreen"))
    if type(app.screen).__name__ == "ConfirmScreen":
        await pilot.press("y")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "VerifyScreen")


def status(app: object) -> str:
    return str(app.screen.query_one("#verify-status", Static).render())  # type: ignore[attr-defined]


async def test_without_the_verify_extra_the_screen_names_the_install(
    make_settings: Callable[..., Settings], clean_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as on a machine without the extra: the driver cannot be imported
    for name in [m for m in sys.modules if m.startswith("secbench_tui.core.verify.")]:
        if name.rsplit(".", 1)[-1] in ("runner", "server", "sql", "python_app", "execution"):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    app = make_app(make_settings(model="baseline/random"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_verify(pilot, app)
        await wait_until(pilot, lambda: "stopped" in status(app))
        shown = status(app)
        assert INSTALL in shown and "psycopg" in shown
        assert "Verifying" not in shown and "Traceback" not in shown
        assert app.errors == []  # a known problem, said in words
        await pilot.press("escape")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "SetupScreen")


async def test_a_verification_that_breaks_says_so_and_how_to_go_back(
    make_settings: Callable[..., Settings], clean_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg", reason="needs the verify extra (psycopg)")
    from secbench_tui.core.verify import runner

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full while starting PostgreSQL")

    monkeypatch.setattr(runner, "verify_suite", broken)
    app = make_app(make_settings(model="baseline/random"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_verify(pilot, app)
        await wait_until(pilot, lambda: "stopped" in status(app))
        shown = status(app)
        assert "disk full" in shown and "escape goes back" in shown
        assert "Verifying" not in shown
