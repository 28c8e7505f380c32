"""`t` in the results: the exact request a result was asked with, every message, as the
loopback server received it, shown neutralised; and back to the result."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

from rich.console import Console
from textual.widgets import Static

from secbench_tui.config import Settings
from secbench_tui.core.untrusted import inert
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens.results import ResultsScreen
from secbench_tui.tui.widgets.results_table import ResultsTable
from tests.e2e.server import LoopbackServer
from tests.tui.conftest import record_run, settle
from tests.tui.test_results import open_results

HOSTILE = "\x1b]0;pwned\x07\x1b[2J [bold red]loud[/]"


def detail_text(screen: ResultsScreen, width: int = 300) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(screen.query_one("#detail", Static).content)
    return console.export_text()


async def open_first_result(pilot: object, app: object) -> ResultsScreen:
    screen = await open_results(pilot, app)
    screen.query_one(ResultsTable).focus()
    await settle(pilot)  # type: ignore[arg-type]
    return screen


async def test_t_shows_every_message_the_server_received(
    remote_settings: Settings, server: LoopbackServer, clean_suite: Path
) -> None:
    spec = clean_suite / "shop" / "SPEC.md"
    spec.write_text(spec.read_text(encoding="utf-8") + HOSTILE + "\n", encoding="utf-8")
    await record_run(remote_settings.replace(apps=["shop"]))
    received = {r.prompt for r in server.completions()}
    app = make_app(remote_settings, offline_catalog=True)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_first_result(pilot, app)
        assert "expected" in detail_text(screen)  # the result first
        await pilot.press("t")
        await settle(pilot)
        shown = detail_text(screen)
        assert "request as sent" in shown and "message 1 of 1 · user" in shown
        (sent,) = [p for p in received if p.split("\n")[-1] in shown]  # this result's code
        for line in inert(sent).splitlines():  # every line of it, neutralised
            assert line.rstrip() in shown, line
        assert "\\x1b[2J" in shown and "[bold red]loud[/]" in shown and "\x1b" not in shown
        assert "max_tokens 1024" in shown  # the request's settings, from its run
        assert "(t: result)" in str(screen.query_one("#detail-pane").border_title)
        await pilot.press("down")  # another result: its request
        await settle(pilot)
        assert "request as sent" in detail_text(screen) and detail_text(screen) != shown
        await pilot.press("t")
        await settle(pilot)
        assert "request as sent" not in detail_text(screen) and "expected" in detail_text(screen)


async def test_a_result_from_before_messages_were_kept_says_so(
    remote_settings: Settings, clean_suite: Path
) -> None:
    await record_run(remote_settings)
    with sqlite3.connect("results.db") as conn:
        conn.execute("UPDATE evaluations SET messages = NULL")
    app = make_app(remote_settings, offline_catalog=True)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_first_result(pilot, app)
        await pilot.press("t")
        await settle(pilot)
        assert screen.maximized is screen.query_one("#detail-pane")  # hidden at 80: shown whole
        shown = detail_text(screen, 76)
        assert "request as sent" in shown and "recorded before" in shown
        assert "message 1" not in shown
