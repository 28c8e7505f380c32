"""The footer, fitted to the terminal: at 80 columns `? Help` is never the key cut off.

Textual's footer lays every key of the screen in one row and cuts what does not fit, and the
app's own keys come last: at 80 columns the results screen lost `t`, `f5`, `r`, `e`, `?` and
`q`, so the one key that lists the others could not be seen. Under `WIDE` columns this footer
is compact, shows the screen's keys in their order while they fit whole, and always ends with
`? Help` (the help lists every key, `ctrl+p` included).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

WIDE = 120  # from here the footer is Textual's own
ALWAYS = ("help",)  # actions kept at the end whatever else must go


def key_cells(key_display: str, description: str) -> int:
    """Cells a compact footer key takes: the key, a space, the description, a margin."""
    return len(key_display) + 1 + len(description) + 1


class KeyFooter(Footer):
    def on_resize(self) -> None:
        compact = self.size.width < WIDE
        if compact != self.compact:
            self.compact = compact
            self.call_after_refresh(self.recompose)

    def compose(self) -> ComposeResult:
        width = self.size.width or self.app.size.width
        if width >= WIDE or not getattr(self, "_bindings_ready", False):
            yield from super().compose()
            return
        shown: dict[str, tuple[Binding, bool, str]] = {}
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show:
                shown.setdefault(binding.action, (binding, enabled, tooltip))
        last = [shown.pop(action) for action in ALWAYS if action in shown]
        room = width - sum(self._cells(b) for b, _, _ in last)
        fitting: list[tuple[Binding, bool, str]] = []
        for entry in shown.values():
            cells = self._cells(entry[0])
            if cells > room:
                break  # in order: a later, shorter key never jumps the queue
            fitting.append(entry)
            room -= cells
        for binding, enabled, tooltip in [*fitting, *last]:
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                disabled=not enabled,
                tooltip=tooltip,
            ).data_bind(compact=Footer.compact)

    def _cells(self, binding: Binding) -> int:
        return key_cells(self.app.get_key_display(binding), binding.description)
