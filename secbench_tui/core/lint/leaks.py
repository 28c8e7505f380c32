"""Leaks: can a suite's labels be read from a surface cue? The check `--lint` fails a suite on,
run again before every run so that its summary and its report can say so.

The cues are the lint's two trivial classifiers (comment words, code length), scored per app
on held-out cases (`apps.app_report`); a cue whose balanced accuracy is above the threshold
(`report.MAX_TRIVIAL_ACCURACY`, the lint's limit) gives the labels away, and a model's score
on that suite measures pattern matching as much as review. `AppReport.cues_over` is the one
test, for the lint's findings and for this check alike.

What a run records (`LeakCheck.record`) also keeps, for each case, the held-out chance that
the best cue of its app calls it bad: the surface cue's chance level (`results.chance`) is
computed from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from secbench_tui.core.lint.apps import app_report
from secbench_tui.core.lint.cases import load_apps, read_lint_case
from secbench_tui.core.lint.comments import comment_words, find_comments
from secbench_tui.core.lint.report import MAX_TRIVIAL_ACCURACY, AppReport, LintReport

GUESSES = "guesses"  # the record's key for the cues' held-out answers


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


def leak_check(
    apps: Sequence[AppReport], limit: float = MAX_TRIVIAL_ACCURACY
) -> tuple[LeakCheck, dict[str, float]]:
    """The cues above `limit` in each app's figures, and every scored case's held-out chance
    of being called bad by its app's best cue (case id -> chance)."""
    cues = [
        SurfaceCue(
            app=app.app,
            features=score.features,
            holdout=score.holdout,
            balanced_accuracy=score.accuracy,
        )
        for app in apps
        for score in app.cues_over(limit)
    ]
    guesses: dict[str, float] = {}
    for app in apps:
        best = app.best()
        if best is not None and len(best.guesses) == len(app.case_ids):
            guesses.update(zip(app.case_ids, best.guesses, strict=True))
    return LeakCheck(threshold=limit, cues=cues), guesses


def surface_reports(root: Path, only: Sequence[str] | None = None) -> list[AppReport]:
    """Each app's trivial classifiers, read from the suite at `root` as `--lint` reads it
    (`only`: the apps a run asks). A file that cannot be read is left out (`--lint` says why)."""
    report = LintReport(root=root)
    reports = []
    for app, files in load_apps(root, report):
        if only and app not in only:
            continue
        cases = [c for p in files if (c := read_lint_case(app, p, root, report)) is not None]
        words = [comment_words(find_comments(c.code, c.language)) for c in cases]
        reports.append(app_report(app, cases, words))
    return reports


def suite_leaks(
    root: Path, only: Sequence[str] | None = None, limit: float = MAX_TRIVIAL_ACCURACY
) -> tuple[LeakCheck, dict[str, float]]:
    """The leak check of the markdown suite at `root` (its apps in `only`)."""
    return leak_check(surface_reports(root, only), limit)


def record(check: LeakCheck, guesses: Mapping[str, float]) -> dict[str, object]:
    """What a run records of the check (its settings' `leak`): the verdict and, when a cue
    leaks, the cues' held-out answers for the surface cue's chance level."""
    data: dict[str, object] = check.model_dump()
    if check.leaky:
        data[GUESSES] = {case: round(p, 4) for case, p in sorted(guesses.items())}
    return data


def from_record(data: object) -> tuple[LeakCheck | None, dict[str, float] | None]:
    """A recorded check read back: (None, None) when the run recorded none or it cannot be
    read (a run of an older version, a damaged file)."""
    if not isinstance(data, Mapping):
        return None, None
    raw = data.get(GUESSES)
    try:
        check = LeakCheck.model_validate({k: v for k, v in data.items() if k != GUESSES})
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
