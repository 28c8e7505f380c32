"""The command palette's own commands (ctrl+p): everything the app does, by name.

Start a run, open the results, compare runs, diff two runs, export the report, open it in a
browser, jump to a run, set a filter, copy a case id, a raw reply or the report's path. The
list is built when the palette opens, from the screen under it and the runs in the database.

Textual's palette reads a hit's text and help as markup; run labels hold model names, which
came from servers and users, so names are drawn as plain `Content` and help is escaped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from secbench_tui.core.models import Outcome
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui.host import Host

if TYPE_CHECKING:
    from secbench_tui.tui.screens.results import ResultsScreen


class PaletteHost(Host, Protocol):
    """What the palette's commands ask of the app; the app satisfies it, unimported here."""

    def results_screen(self) -> ResultsScreen | None: ...
    def action_start(self) -> None: ...
    def action_results(self) -> None: ...
    def action_export(self) -> None: ...
    def action_open_report(self) -> None: ...
    def action_copy_case(self) -> None: ...
    def action_copy_reply(self) -> None: ...
    def action_copy_report_path(self) -> None: ...
    def action_set_filter(self, kind: str, value: str) -> None: ...
    def action_jump_to_run(self, run_id: int) -> None: ...


MAX_RUNS = 200  # "jump to run" commands: the newest this many


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    run: Callable[[], object]
    discover: bool = True  # listed before anything is typed


def app_commands(app: PaletteHost) -> list[Command]:
    """The commands that need no database read."""
    results = app.results_screen()
    commands = [
        Command("Start a run", "Start a run with the setup screen's choices", app.action_start),
        Command("Open results", "Browse every run and its results", app.action_results),
        Command(
            "Compare runs (case x model grid)",
            "Marked runs, or the latest run of each model on this suite",
            app.action_compare,
        ),
        Command(
            "Diff two runs (flipped cases)",
            "Two marked runs, or this run and the one before it",
            app.action_diff,
        ),
        Command("Export the report", "Write the HTML report and show its path", app.action_export),
        Command(
            "Open the report in a browser",
            "Write the HTML report and open it (its path where there is no display)",
            app.action_open_report,
        ),
        Command("Copy case id", "The highlighted case's id to the clipboard", app.action_copy_case),
        Command(
            "Copy raw reply",
            "The highlighted result's raw reply to the clipboard",
            app.action_copy_reply,
        ),
        Command(
            "Copy report path",
            "The last report's path to the clipboard",
            app.action_copy_report_path,
        ),
        Command("Clear filters", "Show every result", lambda: app.action_set_filter("", ""), False),
    ]
    for outcome in Outcome:
        commands.append(
            Command(
                f"Filter: outcome {outcome.value}",
                f"Show only {outcome.value} results",
                lambda o=outcome.value: app.action_set_filter("outcome", o),  # type: ignore[misc]
                False,
            )
        )
    if results is not None:
        for kind, values in (("model", results.model_options), ("app", results.app_options)):
            for value in values:
                commands.append(
                    Command(
                        f"Filter: {kind} {inert_line(value)}",
                        f"Show only the results of this {kind}",
                        lambda k=kind, v=value: app.action_set_filter(k, v),  # type: ignore[misc]
                        False,
                    )
                )
    return commands


async def run_commands(app: PaletteHost) -> list[Command]:
    """`Jump to run N`: one command per run in the database, newest first."""
    from secbench_tui.tui.widgets.runs_table import suite_label

    try:
        runs = await (await app.store()).runs()
    except Exception:  # a bad --db: the other commands still work
        return []
    return [
        Command(
            f"Jump to run {run.id}: {inert_line(run.model_name)}",
            f"{inert_line(suite_label(run))} · {run.status} · {run.started_at[:16]}",
            lambda r=run.id: app.action_jump_to_run(r),  # type: ignore[misc]
            False,
        )
        for run in sorted(runs, key=lambda r: r.id, reverse=True)[:MAX_RUNS]
    ]


class SecbenchCommands(Provider):
    """The app's commands in Textual's command palette."""

    def _app(self) -> PaletteHost:
        return cast(PaletteHost, self.app)

    async def _commands(self) -> list[Command]:
        app = self._app()
        return [*app_commands(app), *await run_commands(app)]

    async def discover(self) -> Hits:
        for command in app_commands(self._app()):
            if command.discover:
                yield DiscoveryHit(
                    Content(command.name), command.run, text=command.name, help=escape(command.help)
                )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in await self._commands():
            score, offsets = matcher.fuzzy_search.match(query, command.name)
            if score > 0:
                shown = Content(command.name)
                for offset in offsets:
                    shown = shown.stylize("bold reverse", offset, offset + 1)
                yield Hit(
                    matcher.match(command.name),
                    shown,
                    command.run,
                    text=command.name,
                    help=escape(command.help),
                )
