"""A selection list whose ticked and unticked items differ by shape, not only by colour.

Textual's `SelectionList` draws the same `X` in every box and tells a ticked one by its
colour, which a monochrome terminal (or a colour-blind reader) cannot see. `CheckList` draws
`[x]` and `[ ]` instead, in the same four cells, so nothing else about the list moves.
"""

from __future__ import annotations

from typing import TypeVar

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widgets import OptionList, SelectionList
from textual.widgets.option_list import OptionDoesNotExist

T = TypeVar("T")

TICKED = "[x]"
UNTICKED = "[ ]"


class CheckList(SelectionList[T]):
    """`SelectionList` with `[x]` / `[ ]` boxes (same width as Textual's, so same layout)."""

    def _get_left_gutter_width(self) -> int:
        return len(TICKED) + 1

    def render_line(self, y: int) -> Strip:
        line = OptionList.render_line(self, y)  # the prompt alone, without Textual's box
        index = self.scroll_offset.y + y
        try:
            selection = self.get_option_at_index(index)
        except OptionDoesNotExist:
            return line
        ticked = selection.value in self._selected
        underlying = next(iter(line)).style or self.rich_style
        box = Style(bold=True, color="green") if ticked else Style(dim=True)
        if underlying is not None:
            box = underlying + box
        box += Style(meta={"option": index})  # a click on the box toggles, as before
        return Strip(
            [
                Segment(TICKED if ticked else UNTICKED, style=box),
                Segment(" ", style=underlying),
                *line,
            ]
        )
