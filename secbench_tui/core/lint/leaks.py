"""Leaks: can a suite's labels be read from a surface cue? The check `--lint` fails a suite on,
run again before every run so that its summary and its report can say so.

The cues are the lint's two trivial classifiers (comment words, code length), scored per app
on held-out cases (`apps.app_report`); a cue whose balanced accuracy is above the threshold
(`report.MAX_TRIVIAL_ACCURACY`, the lint's limit) gives the labels away, and a model's score
on that suite measures pattern matching as much as review. `AppReport.cues_over` is the one
test, for the lint's findings and for this check alike.

What a run records (`report.leak_record`) also keeps, for each case, the held-out chance that
the best cue of its app calls it bad: the surface cue's chance level (`results.chance`) is
computed from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from secbench_tui.core.lint.apps import app_report
from secbench_tui.core.lint.cases import load_apps, read_lint_case
from secbench_tui.core.lint.comments import comment_words, find_comments
from secbench_tui.core.lint.report import (
    MAX_TRIVIAL_ACCURACY,
    AppReport,
    LeakCheck,
    LintReport,
    SurfaceCue,
)


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
