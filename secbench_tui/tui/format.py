"""How things fit on screen: outcome colours, cut ids, elastic columns, model prices.

The numbers themselves (percentages, money, counts, durations) read as everywhere else:
they come from `core.numbers`, re-exported here for the widgets.
"""

from __future__ import annotations

from secbench_tui.core.numbers import EMPTY as EMPTY
from secbench_tui.core.numbers import clock as clock
from secbench_tui.core.numbers import count as count
from secbench_tui.core.numbers import latency as latency
from secbench_tui.core.numbers import money as money
from secbench_tui.core.numbers import pct as pct
from secbench_tui.core.run.catalog import ModelInfo

OUTCOME_STYLES = {
    "correct": "green",
    "wrong": "red",
    "unparsed": "yellow",
    "error": "magenta",
}


def tail(text: str, width: int) -> str:
    """The end of a long case id, which is the part that tells cases apart."""
    return text if len(text) <= width else "…" + text[-(width - 1) :]


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
