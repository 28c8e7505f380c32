"""How numbers read on screen: percentages, money, token counts, durations."""

from __future__ import annotations

from secbench_tui.core.catalog import ModelInfo

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


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def money(value: float | None) -> str:
    if value is None:
        return "-"
    return f"${value:.4f}" if value < 100 else f"${value:,.2f}"


def count(value: int | None) -> str:
    if value is None:
        return "-"
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    return f"{value:,}"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def latency(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.2f}s"


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
