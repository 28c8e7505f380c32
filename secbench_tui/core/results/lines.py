"""The pieces a summary's lines are made of: text tagged with what it is.

`core.results.summary` renders a run's figures once, as lines of `Segment`s; the headless
runner prints them `plain`, the terminal app styles them by tag. The renderers of figures
that live apart (`findings_text`) build their lines from the same pieces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from secbench_tui.core import numbers


@dataclass(frozen=True)
class Segment:
    """Text and what it is (`tag`): the app styles by tag, the headless runner ignores it.
    Tags: heading, status, dim, warning, and the outcomes (correct, wrong, unparsed, error)."""

    text: str
    tag: str = ""


Line = tuple[Segment, ...]


def plain(lines: Sequence[Line]) -> str:
    return "\n".join("".join(s.text for s in line) for line in lines)


def text_line(*parts: str | Segment) -> Line:
    return tuple(p if isinstance(p, Segment) else Segment(p) for p in parts)


def ci_text(interval: tuple[float, float] | None) -> str:
    if interval is None:
        return ""
    return f" (95% CI {numbers.pct(interval[0])}-{numbers.pct(interval[1])})"
