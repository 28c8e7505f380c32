"""The footer, fitted to the terminal: `? Help` is never the key cut off.

Textual's footer lays every key of the screen in one row and cuts what does not fit, and the
app's own keys come last: at 80 columns the results screen lost `t`, `f5`, `r`, `e`, `?` and
`q`, and at 120 still `?` and `q`, so the one key that lists the others could not be seen.
This footer shows the screen's keys in their order while they fit whole and always ends with
`? Help` (the help lists every key, `ctrl+p` included); under `WIDE` columns it is compact
and leaves out the command palette's key to make room.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

WIDE = 120  # from here: Textual's roomier keys, and the command palette's key on the right
ALWAYS = ("help",)  # actions kept at the end whatever else must go
PALETTE_CELLS = 4  # besides its key and description: its border and padding


class KeyFooter(Footer):
    def on_resize(self) -> None:
        compact = self.size.width < WIDE
        if compact != self.compact:
            self.compact = compact
            self.call_after_refresh(self.recompose)

    def compose(self) -> ComposeResult:
        if not getattr(self, "_bindings_ready", False):
            return
        width = self.size.width or self.app.size.width
        active = self.screen.active_bindings
        shown: dict[str, tuple[Binding, bool, str]] = {}
        for _, binding, enabled, tooltip in active.values():
            if binding.show:
                shown.setdefault(binding.action, (binding, enabled, tooltip))
        palette = active.get(self.app.COMMAND_PALETTE_BINDING) if width >= WIDE else None
        last = [shown.pop(action) for action in ALWAYS if action in shown]
        room = width - sum(self._cells(b) for b, _, _ in last)
        if palette is not None:
            room -= self._cells(palette[1]) + PALETTE_CELLS
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
        if palette is not None and self.show_command_palette:
            _, binding, enabled, tooltip = palette
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                classes="-command-palette",
                disabled=not enabled,
                tooltip=binding.tooltip or binding.description,
            )

    def _cells(self, binding: Binding) -> int:
        """Cells a key takes: compact, the key, a space, the description and a margin;
        otherwise the key padded on both sides and the description on its right."""
        extra = 2 if self.compact else 3
        return len(self.app.get_key_display(binding)) + len(binding.description) + extra
