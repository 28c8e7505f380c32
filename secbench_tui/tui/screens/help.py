"""`?`: what each screen is for and the keys it answers to."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from secbench_tui.tui.errors import Guarded

GUIDE = """\
[b]secbench-tui[/b] asks a model whether code fragments are secure and scores its verdicts.
Everything works from the keyboard: [b]tab[/b] / [b]shift+tab[/b] move between panes and \
fields, the arrows move in lists and tables, [b]enter[/b] chooses, [b]space[/b] ticks a box.

[b]Setup[/b]    [b]/[/b] (or typing on the model list) filters the models; [b]enter[/b] chooses \
the highlighted one, or the typed id as it is; [b]space[/b] adds it to the models chosen \
(or takes it out). In the suite pane type another folder and \
press [b]enter[/b] to load it (a VulDetectBench test folder lists its tasks); [b]space[/b] \
ticks apps or tasks, and evaluation prompts. Then limit, temperature, concurrency; the line \
below estimates requests, tokens and cost; [b]ctrl+r[/b] starts one run per model x prompt. \
[b]ctrl+v[/b] proves the selected apps' labels by running their cases on PostgreSQL.
[b]Run[/b]      rows appear as cases finish; up and down show a finished case's answer; with \
several runs, the list on top shows each, and the highlighted one streams its cases. \
[b]escape[/b] or [b]ctrl+c[/b] asks to stop: the cases in flight finish, every finished case \
is kept. When it ends, [b]r[/b] browses the \
results, [b]e[/b] exports, [b]n[/b] or [b]escape[/b] goes back to setup.
[b]Results[/b]  every run in the database, newest first. [b]enter[/b] on a run shows its \
results ([b]a[/b]: all runs again); the model, app and outcome filters and [b]/[/b] search \
narrow them; [b]o[/b] flips the order, [b]s[/b] sorts by id, case, outcome or run. The right \
pane shows the highlighted result: code, expected and actual, explanation, raw reply, usage; \
for VulDetectBench the gold answer, the extracted answer and the sample's scores (under 110 \
columns it is hidden: [b]enter[/b] shows it). [b]t[/b] shows instead the request it was \
asked with, every message as sent ([b]t[/b] again: the result). [b]m[/b] gives the focused \
pane the whole screen. [b]escape[/b] leaves a field, then the screen.
[b]Compare[/b]  [b]c[/b] on the results: a case x run grid, one verdict per cell, cases the \
runs disagree on marked [b]≠[/b]; [b]d[/b] shows only those, [b]enter[/b] shows each run's \
answer side by side. It compares the runs marked with [b]space[/b], else the latest run of \
each model on the suite in view.
[b]Diff[/b]     [b]d[/b] on the results: the cases that flipped between two runs (the two \
marked, else the run in view and the one before it), with counts: fixed, broke, changed; \
[b]f[/b] shows one way at a time, [b]enter[/b] the two answers side by side.
[b]Export[/b]   [b]e[/b] writes the HTML report and shows its path: the runs marked with \
[b]space[/b] on the results screen (or the run shown there), else the run on screen, else \
the latest run of each model.

[b]q[/b] quits, asking first while a run is active. [b]ctrl+p[/b] opens the command palette: \
start a run, open results, compare, diff, export or open the report, jump to a run, set a \
filter, copy a case id, a raw reply or the report's path.
"""


OUR_IDS = ("app.", "setup.", "run.", "results.", "verify.", "compare.", "diff.", "answers.")


def bindings_table(screen: Screen[object]) -> Table:
    """The keys `screen` answers to now, each action once with all its keys (`^c / esc`).

    Read while `screen` is on top: what a key does depends on the screen it is pressed on.
    Hidden bindings of our own (`home`, `end` on the results) are listed too."""
    keys: dict[str, list[str]] = {}
    for _, binding, enabled, tooltip in screen.active_bindings.values():
        ours = (binding.id or "").startswith(OUR_IDS)
        if enabled and binding.description and (binding.show or ours):
            shown = keys.setdefault(tooltip or binding.description, [])
            key = screen.app.get_key_display(binding)
            if key not in shown:
                shown.append(key)
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for description, shown in keys.items():
        table.add_row(" / ".join(shown), description)
    return table


class HelpScreen(Guarded, ModalScreen[None]):
    """Built while the screen it explains is still on top, so its keys are read as they are."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close", id="help.close")]

    def __init__(self, under: Screen[object]) -> None:
        super().__init__()
        self.under = under
        self.keys = bindings_table(under)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(Text.from_markup(GUIDE), id="help-guide")
            yield Static(Text("Keys on this screen", style="bold"))
            yield Static(self.keys, id="help-keys")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
