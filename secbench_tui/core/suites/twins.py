"""A case's compliant twins, and how far one piece of code is from another.

The good cases of a scenario (`<scenario>-NN-good.md` beside a bad case) are its compliant
twins: the fix task compares a fix with the one nearest to it, `baseline/twin` answers with it,
and `secbench-tui fix` shows a suite author how far a proposal strays from it. Distance is the
number of lines changed (a line replaced counts once, a line added or removed once), on lines
compared without their trailing spaces and without blank lines at either end: the measure of a
minimal change, which tells a repair of one line apart from a rewrite of everything.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from secbench_tui.core.case_names import scenario_of


@dataclass(frozen=True)
class Twin:
    case_id: str  # app/file.md, as in runs
    code: str


def code_lines(code: str) -> list[str]:
    """The lines compared: without trailing spaces, without blank lines at either end."""
    lines = [line.rstrip() for line in code.replace("\r\n", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def changed_lines(before: str, after: str) -> int:
    """How many lines `after` changes in `before`: replaced, added or removed."""
    matcher = difflib.SequenceMatcher(None, code_lines(before), code_lines(after), autojunk=False)
    changed = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            changed += max(i2 - i1, j2 - j1)
    return changed


def diff_lines(before: str, after: str, before_name: str, after_name: str) -> list[str]:
    """A unified diff of two pieces of code, line by line (empty when they do not differ)."""
    return [
        line.rstrip("\n")
        for line in difflib.unified_diff(
            code_lines(before), code_lines(after), before_name, after_name, lineterm=""
        )
    ]


def nearest(code: str, twins: Sequence[Twin]) -> Twin | None:
    """The twin `code` changes the fewest lines of (the first by case id on a tie)."""
    ranked = sorted(twins, key=lambda t: (changed_lines(t.code, code), t.case_id))
    return ranked[0] if ranked else None


def twins_of(case_file: Path, app: str) -> list[Twin]:
    """The good cases of the scenario of `case_file`, read from its folder, by case id."""
    from secbench_tui.core.suites.markdown import read_case

    scenario = scenario_of(case_file.name)
    if scenario is None:
        return []
    found = []
    for path in sorted(case_file.parent.glob("*-good.md")):
        if path == case_file or scenario_of(path.name) != scenario:
            continue
        read = read_case(path)
        if not isinstance(read, str) and read.expected == "good":
            found.append(Twin(f"{app}/{path.name}", read.code))
    return found
