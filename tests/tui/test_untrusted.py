"""The app shows hostile text literally (issue 10): no markup parsed, no escape emitted.

A loopback server answers with escape sequences and Textual markup in its catalog, replies,
provider names and error messages, over a suite whose file names carry them too. What the app
draws (its screenshot: every widget, as the terminal would get it) holds them as visible text.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from secbench_tui.config import Settings
from secbench_tui.tui.app import SecbenchApp, make_app
from secbench_tui.tui.screens.results import ResultsScreen
from secbench_tui.tui.screens.run import RunScreen
from secbench_tui.tui.widgets.model_picker import ModelPicker
from tests.e2e.harness import PASSWORD, QUERY_SECRET, secret_url, write_hostile_suite
from tests.e2e.server import HOSTILE, LoopbackServer, answer, bad_request, hostile_models
from tests.tui.conftest import SIZE, wait_until

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SHOWN_TITLE = "\\x1b]0;pwned-title\\x07"  # the OSC as the app must show it


def drawn(app: SecbenchApp) -> str:
    """The screen as text, from the SVG screenshot Textual renders of every widget."""
    svg = app.export_screenshot()
    assert not CONTROL.search(svg), "a control character reached the screen"
    rows: dict[str, list[tuple[float, str]]] = {}
    for m in re.finditer(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', svg):
        rows.setdefault(m.group(2), []).append((float(m.group(1)), m.group(3)))
    ordered = sorted(rows.items(), key=lambda item: float(item[0]))
    lines = ("".join(t for _, t in sorted(parts)) for _, parts in ordered)
    return "\n".join(html.unescape(line).replace("\xa0", " ") for line in lines)


def static_text(widget: Static) -> str:
    """What a Static holds, as text (a Group of sections included)."""
    console = Console(width=100, file=io.StringIO(), record=True, color_system=None)
    console.print(widget.content)
    return console.export_text()


def cell_texts(table: DataTable[Any]) -> list[str]:
    return [str(cell) for i in range(table.row_count) for cell in table.get_row_at(i)]


async def test_hostile_text_is_drawn_literally(
    tmp_path: Path, make_settings: Callable[..., Settings]
) -> None:
    markers = write_hostile_suite(tmp_path / "hostile")
    with LoopbackServer(models=hostile_models()) as server:
        server.always(list(markers.values())[2], bad_request(HOSTILE))
        server.script(None, match=lambda r: True, then=answer("bad", HOSTILE, provider=HOSTILE))
        settings = make_settings(
            model="openai/gpt-4o-mini",
            cases=Path("hostile"),
            base_url=secret_url(server.port),
            api_key=SecretStr("sk-test"),
            max_retries=0,
        )
        app = make_app(settings, cache_dir=tmp_path / "cache")
        async with app.run_test(size=SIZE) as pilot:
            await _model_list(pilot, app)
            await _run(pilot, app)
            await _results(pilot, app)
            before = list(app._notifications)
            app.notify(HOSTILE, title=HOSTILE)  # posted: it is in the list once handled
            await wait_until(pilot, lambda: any(n not in before for n in app._notifications))
            (note,) = [n for n in app._notifications if n not in before]
            assert not note.markup and not CONTROL.search(note.message + note.title)


async def _model_list(pilot: Pilot[Any], app: SecbenchApp) -> None:
    picker = app.screen.query_one(ModelPicker)
    await wait_until(pilot, lambda: picker.catalog.source == "network")
    picker.focus_filter()
    await pilot.press(*"evil")
    await wait_until(pilot, lambda: picker.query_text == "evil")
    await pilot.pause()
    shown = drawn(app)
    assert "evil/[bold]model[/bold]\\x1b]0;pwned-" in shown
    assert "\\x1b[2J\\x1b[31mred\\x1b[0m \\x9b7m c1" in shown  # the catalog's name for it


async def _run(pilot: Pilot[Any], app: SecbenchApp) -> None:
    await pilot.press("escape")
    app.screen.query_one(ModelPicker).choose("openai/gpt-4o-mini")
    await pilot.press("ctrl+r")
    await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
    run = app.screen
    assert isinstance(run, RunScreen)
    await wait_until(pilot, lambda: run.state == "completed", limit=5000)
    cells = cell_texts(run.query_one("#run-table", DataTable))
    tail = "-03 good"  # a case's label keeps its number and its label word
    assert any(tail in cell and "[bold" in cell for cell in cells)  # markup, as text
    assert not any(CONTROL.search(cell) for cell in cells)
    await pilot.pause()
    shown = drawn(app)
    assert tail in shown
    explanation = static_text(run.query_one("#last-explanation", Static))
    assert "[bold red]loud[/bold red]" in explanation and SHOWN_TITLE in explanation
    for secret in (PASSWORD, QUERY_SECRET):
        assert secret not in shown


async def _results(pilot: Pilot[Any], app: SecbenchApp) -> None:
    await pilot.press("r")
    await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen))
    detail = app.screen.query_one("#detail", Static)
    await wait_until(pilot, lambda: "raw reply" in static_text(detail))
    text = static_text(detail)
    assert SHOWN_TITLE in text and "[@click=app.quit]quit[/]" in text
    assert not CONTROL.search(text)
    await pilot.pause()
    shown = drawn(app)
    assert "[@click=app.quit]quit[/]" in shown and "\\x9b7m c1" in shown
    assert "error" in shown  # the first result (by file name) is the one the server refused
