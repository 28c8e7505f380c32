"""What a case file's name says: its scenario, its number and its label. One rule, used
everywhere (the loader, the pairs, robustness, the report, the lint, `--verify`):

    <scenario>-<number>-<good|bad>.md

`<number>` is one or more digits, however many (`-1-`, `-01-`, `-001-` all read alike); the
scenario is everything before its last `-<number>-` and, for a case id, the folder the file is
in (`shop/get-order-03-bad.md` -> `shop/get-order`). The cases of one scenario are minimal
pairs of each other: every (good, bad) of a scenario is a pair. A file named otherwise is
still a case (its `# Expected` gives its label) but belongs to no scenario, hence to no pair;
`--lint` lists it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CASE_FILE = re.compile(r"^(?P<scenario>.+)-(?P<number>\d+)-(?P<label>good|bad)\.md$")
"""The rule, on a file name (no folder)."""


@dataclass(frozen=True)
class CaseName:
    """A case file name read by the rule: `scenario` without the folder."""

    scenario: str
    number: int
    label: str


def read_name(file_name: str) -> CaseName | None:
    """The scenario, number and label a file name gives; None when it does not follow the rule.

    Only the last path component is read, so a case id or a path may be given."""
    match = CASE_FILE.match(file_name.rpartition("/")[2])
    if match is None:
        return None
    return CaseName(match.group("scenario"), int(match.group("number")), match.group("label"))


def scenario_of(case_id: str) -> str | None:
    """`app/po-approve-003-bad.md` -> `app/po-approve`: the scenario that pairs the case with
    its siblings, within its folder. None for a name that does not follow the rule."""
    folder, slash, name = case_id.rpartition("/")
    read = read_name(name)
    if read is None:
        return None
    return f"{folder}/{read.scenario}" if slash else read.scenario


def is_case_file(file_name: str) -> bool:
    return read_name(file_name) is not None
