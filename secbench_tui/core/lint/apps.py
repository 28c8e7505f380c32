"""One app's figures (case counts, code lengths, the trivial classifiers' scores) and what
fails in them: unequal classes, too few cases to score, a classifier over the limit."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from secbench_tui.core.lint.cases import LintCase
from secbench_tui.core.lint.classifiers import (
    classifiable,
    comment_classifier_guesses,
    held_out_accuracy,
    length_classifier_guesses,
)
from secbench_tui.core.lint.comments import normalise
from secbench_tui.core.lint.report import (
    LABELS,
    AppReport,
    ClassifierScore,
    Finding,
    LengthStats,
)


def app_report(app: str, cases: Sequence[LintCase], words: Sequence[list[str]]) -> AppReport:
    """The figures of `app`'s cases; `words` holds each case's comment words, in order."""
    labels = [c.expected for c in cases]
    lengths = [len(normalise(c.code)) for c in cases]
    stats = []
    for label in LABELS:
        mine = [n for n, y in zip(lengths, labels, strict=True) if y == label]
        if mine:
            mean, median = statistics.mean(mine), statistics.median(mine)
            stats.append(LengthStats(label, len(mine), mean, median))
    scores = []
    if classifiable(labels):
        scenarios = [f"{c.app}/{c.scenario}" for c in cases]
        for holdout, groups in (("case", None), ("scenario", scenarios)):
            comment = comment_classifier_guesses(words, labels, groups)
            length = length_classifier_guesses(lengths, labels, groups)
            for features, guesses in (("comment-words", comment), ("code-length", length)):
                accuracy = held_out_accuracy(guesses, labels)
                scores.append(ClassifierScore(features, holdout, accuracy, tuple(guesses)))
    counts = {label: labels.count(label) for label in LABELS}
    ids = tuple(c.path.as_posix() for c in cases)
    return AppReport(app, counts, tuple(stats), tuple(scores), ids)


def app_findings(app: AppReport, limit: float) -> list[Finding]:
    """Unequal classes, too few cases to score, and each classifier above `limit`."""
    findings = []
    good, bad = app.counts["good"], app.counts["bad"]
    if good != bad:
        findings.append(Finding("balance", f"{good} good vs {bad} bad cases", app=app.app))
    if not app.classifiers:
        message = (
            "too few cases to score trivial classifiers: each class needs 2 cases"
            " (add good and bad cases until there are at least 2 of each)"
        )
        findings.append(Finding("classifier", message, app=app.app))
    for score in app.cues_over(limit):
        message = (
            f"{score.features} classifier (held out by {score.holdout}) reaches "
            f"{score.accuracy:.2f} balanced accuracy (limit {limit:.2f})"
        )
        findings.append(Finding("classifier", message, app=app.app))
    return findings
