"""Suite lint: can a case's label be read from its surface instead of its meaning?

A benchmark whose bad cases are all shorter, or whose comments say "tenant filter" only in
the good ones, measures pattern matching, not security review. `lint_suite` checks a markdown
suite for that and for plain mistakes (files that do not parse, duplicate code, unequal
classes, file names that disagree with `# Expected`) and returns structured findings;
`secbench_tui.linting` prints them (`format_report`) for `secbench-tui --lint` and picks the
exit code.

Each check is a module of this package: `cases` reads the suite, `comments` finds the
comments in a case's code, `classifiers` scores the two trivial classifiers per app (`apps`
turns their scores into findings), `findings` checks rules, label words and duplicates,
`verification` the data `--verify` needs; `report` holds what they find.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from secbench_tui.core.lint.apps import app_findings, app_report
from secbench_tui.core.lint.cases import (
    LintCase,
    app_rules,
    load_apps,
    orphan_folders,
    read_lint_case,
)
from secbench_tui.core.lint.comments import comment_words, find_comments, strip_comments
from secbench_tui.core.lint.findings import (
    comment_findings,
    duplicate_findings,
    pair_findings,
    rule_findings,
)
from secbench_tui.core.lint.report import MAX_TRIVIAL_ACCURACY, LintReport
from secbench_tui.core.lint.verification import verification_findings


def lint_suite(
    root: Path, limit: float = MAX_TRIVIAL_ACCURACY, only: Sequence[str] | None = None
) -> LintReport:
    """Every check on the markdown suite at `root`; never raises for a bad suite.

    `only` keeps the named apps (as `--apps` does for a run); the caller checks the names.
    Folders without a SPEC.md are reported only when the whole suite is linted.
    """
    report = LintReport(root=root)
    apps = load_apps(root, report)
    if only:
        apps = [(app, files) for app, files in apps if app in only]
    else:
        report.findings.extend(orphan_folders(root))
    everything: list[LintCase] = []
    stripped: list[str] = []
    for app, files in apps:
        cases = [c for p in files if (c := read_lint_case(app, p, root, report)) is not None]
        report.findings.extend(rule_findings(cases, app_rules(root / app)))
        report.findings.extend(pair_findings(cases))
        report.findings.extend(verification_findings(app, root / app, cases))
        words = []
        for case in cases:
            comments = find_comments(case.code, case.language)
            report.findings.extend(comment_findings(case, comments))
            words.append(comment_words(comments))
            stripped.append(strip_comments(case.code, comments))
        everything.extend(cases)
        figures = app_report(app, cases, words)
        report.apps.append(figures)
        report.findings.extend(app_findings(figures, limit))
    report.findings.extend(duplicate_findings(everything, stripped))
    report.cases = len(everything)
    return report
