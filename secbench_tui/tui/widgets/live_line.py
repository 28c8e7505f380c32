"""A line of text redrawn without laying out the whole screen again, when its height holds.

Textual lays out the whole screen after a `Static.update` (its height may have changed), and
a new layout repaints every widget. The run screen updates its progress lines several times a
second while the engine shares the event loop, so those repaints were most of what the app
cost a run. `LiveLine.redraw` measures the new text's height at the widget's width (a wrap: cheap
for a line or two) and asks for a layout only when it differs from the height drawn before.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class LiveLine(Static):
    _laid_out: tuple[int, int] | None = None  # (width, lines) of the text drawn last

    def redraw(self, text: Text) -> None:
        width = self.content_size.width
        lines = len(text.wrap(self.app.console, width)) if width else 0
        same = width > 0 and self._laid_out == (width, lines)
        self._laid_out = (width, lines)
        self.update(text, layout=not same)
