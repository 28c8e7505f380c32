"""`?`: what each screen is for and the keys it answers to."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

GUIDE = """\
[b]secbench-tui[/b] asks a model whether code fragments are secure and scores its verdicts.

[b]Setup[/b]  pick a model (press [b]/[/b] to type a filter or a model id, Enter to choose),
the apps or VulDetectBench tasks, and limit / temperature / concurrency; [b]ctrl+r[/b] runs.
[b]Run[/b]    rows appear as cases finish; [b]escape[/b] or [b]ctrl+c[/b] asks to stop (cases in
flight finish, every finished case is kept).
[b]Results[/b] every run in the database; Enter on a run shows its results, [b]a[/b] all runs;
filter by model, app, outcome or text; the right pane shows the selected result.
[b]Export[/b] [b]e[/b] writes the HTML report (the selected runs, or all) and shows its path.
"""


def bindings_table(screen: Screen[object]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    seen: set[str] = set()
    for _, binding, enabled, tooltip in screen.active_bindings.values():
        if binding.show and binding.description and binding.description not in seen and enabled:
            seen.add(binding.description)
            table.add_row(screen.app.get_key_display(binding), tooltip or binding.description)
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close", id="help.close")]

    def __init__(self, under: Screen[object]) -> None:
        super().__init__()
        self.under = under

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(Text.from_markup(GUIDE), id="help-guide")
            yield Static(Text("Keys on this screen", style="bold"))
            yield Static(bindings_table(self.under), id="help-keys")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
