"""What a bad case is bad for: the SPEC rule it breaks, and where.

A bad case names the rule it breaks in `# Rule` (one number of its SPEC's numbered list) and may
name others a careful reviewer could cite in `# Also acceptable`. Its gold lines are the lines
of its code that differ from the nearest good case of its scenario (the case file name without
`-NN-good.md` / `-NN-bad.md`, in its folder), unless `# Lines` gives them. None of this is ever
sent to the model: the prompt holds the SPEC's `# Prompt` and the case's code only.

Markdown here is prose, not code: the numbered list and the section values are read line by
line; code is compared line by line with difflib.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

RULE_SECTION = "rule"
ALSO_SECTION = "also acceptable"
LINES_SECTION = "lines"
GOLD_SECTIONS = (RULE_SECTION, ALSO_SECTION, LINES_SECTION)

MAX_ALSO_ACCEPTABLE = 2
"""At most this many rules in `# Also acceptable`: a case that lists every rule of its SPEC
would credit any citation (`--lint` fails beyond, and fails the gold rule listed again)."""

_NUMBERED = re.compile(r"^(\d{1,3})\.[ \t]+\S")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_NUMBER = re.compile(r"\d+")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


@dataclass(frozen=True)
class CaseGold:
    """The reason sections of one case file, as written (`lines` empty: derive them)."""

    rule: int | None = None
    also: tuple[int, ...] = ()
    lines: tuple[int, ...] = ()

    @property
    def present(self) -> bool:
        return self.rule is not None or bool(self.also) or bool(self.lines)


def spec_rules(prompt: str) -> tuple[int, ...]:
    """The numbers of the SPEC's numbered list (`1. **Tenant isolation.** ...`), in order.

    Only items that start a line (no indent) count, outside fenced blocks, so nested lists
    and numbered lines of the schema never pass for rules.
    """
    found: list[int] = []
    fence: str | None = None
    for line in prompt.replace("\r\n", "\n").split("\n"):
        marker = _FENCE.match(line)
        if marker:
            fence = None if fence is not None else marker.group(1)
            continue
        if fence is None and (item := _NUMBERED.match(line)):
            number = int(item.group(1))
            if number not in found:
                found.append(number)
    return tuple(found)


def _first_number(text: str) -> int | None:
    match = _NUMBER.search(text)
    return int(match.group(0)) if match else None


def parse_lines(text: str) -> tuple[int, ...] | str:
    """`7`, `7-9, 12` -> (7, 8, 9, 12), or a reason it is not such a list."""
    lines: set[int] = set()
    tidy = re.sub(r"\s*[-–]\s*", "-", text.strip())
    for part in re.split(r"[,;\s]+", tidy):
        if not part:
            continue
        match = _RANGE.match(part)
        if match is None:
            return (
                "'# Lines' must list line numbers of the code such as `7` or `7-9, 12`,"
                f" found {part!r}"
            )
        low = int(match.group(1))
        high = int(match.group(2) or low)
        if low < 1 or high < low:
            return f"'# Lines': {part!r} is not a range of line numbers (1 is the first line)"
        lines.update(range(low, high + 1))
    return tuple(sorted(lines))


def listed_also(sections: dict[str, str]) -> tuple[int, ...]:
    """The numbers `# Also acceptable` lists, as written (repeats and the gold rule kept)."""
    return tuple(int(n) for n in _NUMBER.findall(sections.get(ALSO_SECTION, "")))


def read_gold(sections: dict[str, str]) -> CaseGold | str:
    """The case's `# Rule`, `# Also acceptable` and `# Lines`, or a reason they cannot be read."""
    rule = None
    if RULE_SECTION in sections:
        words = sections[RULE_SECTION].split()
        rule = _first_number(words[0]) if words else None
        if rule is None:
            shown = sections[RULE_SECTION].strip()[:40] or "(empty)"
            return f"'# Rule' must start with a rule number of the SPEC, found {shown!r}"
    also = listed_also(sections)
    lines: tuple[int, ...] = ()
    if LINES_SECTION in sections:
        parsed = parse_lines(sections[LINES_SECTION])
        if isinstance(parsed, str):
            return parsed
        lines = parsed
    return CaseGold(rule, tuple(dict.fromkeys(n for n in also if n != rule)), lines)


def changed_lines(bad: str, good: str) -> tuple[int, ...]:
    """The lines of `bad` (1-based) that differ from `good`, ignoring trailing whitespace.

    Where `bad` only lacks lines that `good` has, the lines either side of the gap are the
    place: the flaw is the missing check, and those lines are where it belongs.
    """
    a = [line.rstrip() for line in bad.split("\n")]
    b = [line.rstrip() for line in good.split("\n")]
    lines: set[int] = set()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            lines.update(range(i1 + 1, i2 + 1))
        elif tag == "insert":  # bad lacks good's lines j1..j2 before its line i1 + 1
            lines.update(n for n in (i1, i1 + 1) if 1 <= n <= len(a))
    return tuple(sorted(lines))


def derived_lines(bad: str, goods: Sequence[str]) -> tuple[int, ...]:
    """The gold lines of a bad case: its difference with the nearest good sibling (the one
    with the fewest differing lines; the first of them on a tie). None: no sibling."""
    best: tuple[int, ...] | None = None
    for good in goods:
        lines = changed_lines(bad, good)
        if lines and (best is None or len(lines) < len(best)):
            best = lines
    return best or ()
