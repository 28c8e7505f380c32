"""How things fit on screen: outcome colours, cut ids, elastic columns, model prices.

The numbers themselves (percentages, money, counts, durations) read as everywhere else:
they come from `core.numbers`, re-exported here for the widgets.
"""

from __future__ import annotations

from secbench_tui.core.case_names import read_name
from secbench_tui.core.numbers import EMPTY as EMPTY
from secbench_tui.core.numbers import clock as clock
from secbench_tui.core.numbers import count as count
from secbench_tui.core.numbers import latency as latency
from secbench_tui.core.numbers import money as money
from secbench_tui.core.numbers import pct as pct
from secbench_tui.core.numbers import tokens as tokens
from secbench_tui.core.run.catalog import ModelInfo

OUTCOME_STYLES = {
    "correct": "green",
    "wrong": "red",
    "unparsed": "yellow",
    "error": "magenta",
}


def tail(text: str, width: int) -> str:
    """The end of a long text, with `…` where its start was."""
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def middle(text: str, width: int, end_share: float = 0.5) -> str:
    """A long name with its middle replaced by `…`: `openai/gpt…-mini`. Model ids keep their
    vendor and their variant, both of which tell models apart."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    keep = width - 1
    head = keep - int(keep * end_share)
    return text[:head] + "…" + text[len(text) - (keep - head) :]


def case_id(text: str, width: int) -> str:
    """A case id (`app/scenario-NN-bad.md`) to `width` cells: the app is kept, the file
    name loses its middle: its scenario's start and its whole `-NN-bad.md` end stay, so two
    cases of a scenario never look alike; an app too long to leave the file name its share
    (about two thirds, at least 12 cells) loses its own middle too."""
    if len(text) <= width:
        return text
    app, slash, name = text.rpartition("/")
    if not slash:
        return middle(text, width)
    room = width - len(app) - 1
    wanted = min(len(name), max(12, (width * 2) // 3))  # the file name's fair share
    if room >= wanted:
        return app + "/" + file_name(name, room)
    app_width = max(1, width - 1 - wanted)
    return middle(app, app_width) + "/" + file_name(name, max(1, width - app_width - 1))


def file_name(name: str, width: int) -> str:
    """A case's file name to `width` cells: its `-NN-good.md` end whole where it leaves four
    cells of the scenario, else its middle cut (`NAME_END` of it kept from the end)."""
    if len(name) <= width:
        return name
    read = read_name(name)
    if read is not None and width - (len(name) - len(read.scenario)) >= 5:
        end = name[len(read.scenario) :]
        return name[: width - len(end) - 1] + "…" + end
    return middle(name, width, NAME_END)


NAME_END = 0.6  # of a cut file name, the end (`-03-bad.md`) keeps the larger share


def fitting(table_width: int, others: int, widest: int, narrowest: int = 12) -> int:
    """Width for a table's one elastic column: what `others` cells leave of `table_width`
    (each column also takes 2 cells of padding), between `narrowest` and `widest`."""
    if table_width <= 0:
        return widest
    return max(narrowest, min(widest, table_width - others))


def _per_million(value: float | None) -> str:
    return "?" if value is None else f"${value:.2f}" if value < 100 else f"${value:.0f}"


def short_price(model: ModelInfo) -> str:
    """`$0.15/$0.60` per million tokens, `free`, or blank when unknown."""
    if model.prompt_price is None and model.completion_price is None:
        return ""
    if model.prompt_price == 0 and model.completion_price == 0:
        return "free"
    return f"{_per_million(model.prompt_price)}/{_per_million(model.completion_price)}"


def price(model: ModelInfo) -> str:
    """Prompt / completion price per million tokens."""
    short = short_price(model)
    return "price ?" if not short else short if short == "free" else f"{short} per M"


def context(model: ModelInfo) -> str:
    if model.context_length is None:
        return "ctx ?"
    if model.context_length >= 1000:
        return f"{model.context_length // 1000}k ctx"
    return f"{model.context_length} ctx"


def structured(model: ModelInfo) -> str:
    return {True: "structured", False: "no structured output", None: "structured ?"}[
        model.structured
    ]
