"""The results screen's filters: model, prompt, app and outcome dropdowns and a text search,
made into the `ResultFilter` the store reads a page with. Their changes reach the screen as
Textual's own `Select.Changed` and `Input.Changed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Select

from secbench_tui.core.models import Outcome
from secbench_tui.core.store.queries import ResultFilter
from secbench_tui.tui.plain import plain_line

FILTERS = ("model", "prompt", "app", "outcome")  # the dropdowns, by the end of their ids


class FilterBar(Horizontal):
    """`options`: the values each dropdown offers (the palette offers them too)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.options: dict[str, list[str]] = {kind: [] for kind in FILTERS}

    def compose(self) -> ComposeResult:
        yield Select[str]([], prompt="any model", id="filter-model")
        yield Select[str]([], prompt="any prompt", id="filter-prompt")
        yield Select[str]([], prompt="any app", id="filter-app")
        yield Select[str](
            [(o.value, o.value) for o in Outcome], prompt="any outcome", id="filter-outcome"
        )
        yield Input(placeholder="/ search case, explanation, reply", id="search")

    def select(self, kind: str) -> Select[str]:
        return self.query_one(f"#filter-{kind}", Select)

    def offer(self, kind: str, values: Sequence[str]) -> None:
        """The values a dropdown offers; the one chosen stays if it is still offered."""
        self.options[kind] = list(values)
        select = self.select(kind)
        current = select.value
        with select.prevent(Select.Changed):
            select.set_options((plain_line(v), v) for v in values)
            if isinstance(current, str) and current in values:
                select.value = current
        if kind == "prompt":  # shown when there is a choice: runs of more than one prompt
            select.display = len(values) > 1

    def choose(self, kind: str, value: str, quietly: bool = True) -> None:
        """One dropdown set; `quietly`: without a `Select.Changed`."""
        select = self.select(kind)
        if not quietly:
            select.value = value
            return
        with select.prevent(Select.Changed):
            select.value = value

    def lift(self, kind: str) -> None:
        """One dropdown back to `any`, without a `Select.Changed`."""
        select = self.select(kind)
        with select.prevent(Select.Changed):
            select.clear()

    def clear(self) -> None:
        """Every dropdown back to `any`, the search emptied."""
        for kind in FILTERS:
            self.lift(kind)
        self.query_one("#search", Input).value = ""

    def chosen(self, run_id: int | None) -> ResultFilter:
        """What is chosen, as the store's filter; `run_id`: the one run shown, if any."""

        def values(kind: str) -> list[str]:
            value = self.select(kind).value
            return [value] if isinstance(value, str) else []

        return ResultFilter(
            run_ids=[run_id] if run_id is not None else [],
            models=values("model"),
            prompts=values("prompt"),
            apps=values("app"),
            outcomes=values("outcome"),
            text=self.query_one("#search", Input).value.strip(),
        )
