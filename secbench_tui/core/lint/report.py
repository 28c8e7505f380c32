"""What the suite lint found, as data: findings, each app's figures, and the whole report.

Every other part of the lint makes or reads these; none of them knows how they are printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

MAX_TRIVIAL_ACCURACY = 0.60
"""A trivial classifier with a higher leave-one-out balanced accuracy fails the lint."""

LABELS = ("good", "bad")


@dataclass(frozen=True)
class Finding:
    """One thing wrong with the suite. `fails` findings make the lint exit non-zero."""

    check: str  # parse | duplicate | balance | name | comment | classifier | description | verify
    # | equivalent (a mutant the suite declares no real flaw) | rule (# Rule of a case)
    # | pair (a case that belongs to no good/bad pair)
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
