"""What the suite lint found, as data: findings, each app's figures, and the whole report.

Every other part of the lint makes or reads these; none of them knows how they are printed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

MAX_TRIVIAL_ACCURACY = 0.60
"""A trivial classifier with a higher leave-one-out balanced accuracy fails the lint."""

LABELS = ("good", "bad")


@dataclass(frozen=True)
class Finding:
    """One thing wrong with the suite. `fails` findings make the lint exit non-zero."""

    check: str  # parse | duplicate | balance | name | comment | classifier | description | verify
    # | equivalent (a mutant the suite declares no real flaw) | rule (# Rule of a case)
    # | pair (a case that belongs to no good/bad pair) | declaration (an equivalence declaration
    # that names no mutant or several)
    message: str
    path: Path | None = None
    app: str | None = None
    line: int | None = None
    fails: bool = True

    def __str__(self) -> str:
        where = str(self.path) if self.path else (self.app or "")
        if self.path and self.line:
            where += f":{self.line}"
        return f"{self.check:<11} {where}: {self.message}" if where else self.message


@dataclass(frozen=True)
class LengthStats:
    label: str
    count: int
    mean: float
    median: float


@dataclass(frozen=True)
class ClassifierScore:
    """A trivial classifier's held-out balanced accuracy on one app.

    features: "comment-words" or "code-length"; holdout: "case" (leave-one-out) or
    "scenario" (leave-one-scenario-out, which removes the bias leave-one-out has against
    the held-out case's class when good and bad variants mirror each other).
    """

    features: str
    holdout: str
    accuracy: float
    # each case's held-out chance of being called bad, in the order of `AppReport.case_ids`
    guesses: tuple[float, ...] = field(default=(), repr=False, compare=False)


@dataclass(frozen=True)
class AppReport:
    app: str
    counts: dict[str, int]
    lengths: tuple[LengthStats, ...]
    classifiers: tuple[ClassifierScore, ...]
    case_ids: tuple[str, ...] = ()  # the cases scored, as a run names them (`app/file.md`)

    def cues_over(self, limit: float) -> list[ClassifierScore]:
        """The trivial classifiers above `limit`: surface cues that give the labels away.
        The one test of a leak, for `--lint` and for a run alike."""
        return [score for score in self.classifiers if score.accuracy > limit]

    def best(self) -> ClassifierScore | None:
        """The classifier that reads the labels best (the first of a tie)."""
        return max(self.classifiers, key=lambda s: s.accuracy, default=None)

    def accuracy(self, features: str, holdout: str = "case") -> float | None:
        for score in self.classifiers:
            if score.features == features and score.holdout == holdout:
                return score.accuracy
        return None


@dataclass
class LintReport:
    root: Path
    apps: list[AppReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    cases: int = 0

    @property
    def failed(self) -> bool:
        return any(f.fails for f in self.findings)


class SurfaceCue(BaseModel):
    """A trivial classifier that reads an app's labels better than the threshold allows."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    app: str
    features: str  # comment-words | code-length
    holdout: str  # case | scenario
    balanced_accuracy: float

    def text(self) -> str:
        """`comment-words in shop (held out by case): balanced accuracy 0.93`."""
        return (
            f"{self.features} in {self.app} (held out by {self.holdout}):"
            f" balanced accuracy {self.balanced_accuracy:.2f}"
        )


class LeakCheck(BaseModel):
    """The check's verdict on the apps a run asks: the cues above `threshold` (none: no leak
    found)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    threshold: float = MAX_TRIVIAL_ACCURACY
    cues: list[SurfaceCue] = []

    @property
    def leaky(self) -> bool:
        return bool(self.cues)

    def strongest(self) -> SurfaceCue | None:
        return max(self.cues, key=lambda c: c.balanced_accuracy, default=None)


LEAK_GUESSES = "guesses"  # the record's key for the cues' held-out answers


def leak_record(check: LeakCheck, guesses: Mapping[str, float]) -> dict[str, object]:
    """What a run records of the check (its settings' `leak`): the verdict and, when a cue
    leaks, the cues' held-out answers for the surface cue's chance level."""
    data: dict[str, object] = check.model_dump()
    if check.leaky:
        data[LEAK_GUESSES] = {case: round(p, 4) for case, p in sorted(guesses.items())}
    return data


def read_leak_record(data: object) -> tuple[LeakCheck | None, dict[str, float] | None]:
    """A recorded check read back: (None, None) when the run recorded none or it cannot be
    read (a run of an older version, a damaged file)."""
    if not isinstance(data, Mapping):
        return None, None
    raw = data.get(LEAK_GUESSES)
    try:
        check = LeakCheck.model_validate({k: v for k, v in data.items() if k != LEAK_GUESSES})
    except ValidationError:
        return None, None
    guesses = None
    if isinstance(raw, Mapping):
        guesses = {
            str(case): float(p)
            for case, p in raw.items()
            if isinstance(p, int | float) and not isinstance(p, bool)
        }
    return check, guesses
