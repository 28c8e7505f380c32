"""What the comparison views read: one verdict per case and run, and the cases that flipped.

The store returns these (`Store.grid_page`, `Store.flips_page` ...) a page at a time, so a
grid of several runs of 100,000 results opens as fast as a small one. Nothing here touches
the display: the front ends neutralise the text (`core.untrusted`) when they draw it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Flip(StrEnum):
    """How a case's outcome changed from one run to the other."""

    FIXED = "fixed"  # not correct before, correct after
    BROKE = "broke"  # correct before, not correct after
    CHANGED = "changed"  # neither correct, but a different outcome (wrong -> unparsed ...)


def flip_of(before: str, after: str) -> Flip:
    if after == "correct":
        return Flip.FIXED
    if before == "correct":
        return Flip.BROKE
    return Flip.CHANGED


@dataclass(frozen=True)
class Verdict:
    """One run's answer to one case (its first repeat)."""

    run_id: int
    outcome: str
    actual: str | None


@dataclass
class GridRow:
    """One case across the compared runs; runs without this case have no verdict."""

    case_id: str
    app: str
    expected: str
    verdicts: dict[int, Verdict] = field(default_factory=dict)

    @property
    def disagree(self) -> bool:
        return len({v.outcome for v in self.verdicts.values()}) > 1


@dataclass(frozen=True)
class GridCounts:
    cases: int
    disagreements: int
    failures: int = 0  # cases some run did not get right


@dataclass(frozen=True)
class FlipRow:
    """A case whose outcome differs between the `before` run and the `after` run."""

    case_id: str
    app: str
    expected: str
    before: Verdict
    after: Verdict

    @property
    def flip(self) -> Flip:
        return flip_of(self.before.outcome, self.after.outcome)


@dataclass(frozen=True)
class FlipCounts:
    """How the cases of two runs compare, first repeats only."""

    fixed: int = 0
    broke: int = 0
    changed: int = 0
    same: int = 0
    only_before: int = 0
    only_after: int = 0

    @property
    def flipped(self) -> int:
        return self.fixed + self.broke + self.changed
