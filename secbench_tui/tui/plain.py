"""Foreign text as Rich `Text` that renders literally: no markup, no escape sequences.

Case ids, model names, replies, server messages and file names reach the screen only
through these (or `Text.assemble` of `plain*` values): the characters go through
`core.untrusted.inert` first, so a control character shows as `\\x1b` instead of acting on
the terminal, and a `Text` is never parsed as markup, so `[bold]` stays `[bold]`.
"""

from __future__ import annotations

from rich.text import Text

from secbench_tui.core.untrusted import inert, inert_line


def plain(text: object, style: str = "") -> Text:
    """`text` as it is (newlines and tabs kept), safe for any widget."""
    return Text(inert(text), style=style)


def plain_line(text: object, style: str = "") -> Text:
    """`text` on one line: newlines and tabs show as `\\n` and `\\t` too (table cells)."""
    return Text(inert_line(text), style=style, no_wrap=True, end="")
