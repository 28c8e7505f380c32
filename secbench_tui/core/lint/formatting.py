"""The lint's report as the text `secbench-tui --lint` prints: each app's figures, then the
problems, the warnings and the declared equivalent mutants, then the verdict."""

from __future__ import annotations

from secbench_tui.core.lint.report import MAX_TRIVIAL_ACCURACY, LintReport


def format_report(report: LintReport, limit: float = MAX_TRIVIAL_ACCURACY) -> str:
    """The whole report, one line per figure or finding, without a final newline."""
    lines = [f"lint {report.root}: {len(report.apps)} apps, {report.cases} usable cases", ""]
    for app in report.apps:
        lines.append(f"{app.app}: {app.counts['good']} good, {app.counts['bad']} bad")
        for s in app.lengths:
            lines.append(
                f"  code length {s.label:<4}  mean {s.mean:7.1f}  median {s.median:7.1f}  (chars)"
            )
        lines.append("  trivial classifiers, balanced accuracy  held out by: case  scenario")
        for features in ("comment-words", "code-length"):
            cells = []
            for holdout in ("case", "scenario"):
                value = app.accuracy(features, holdout)
                cells.append("n/a " if value is None else f"{value:.2f}")
            bad = any(s.accuracy > limit for s in app.classifiers if s.features == features)
            verdict = "FAIL" if bad else ("ok" if app.classifiers else "")
            lines.append(f"    {features:<37}{cells[0]:>6}{cells[1]:>10}  {verdict}")
    problems = [f for f in report.findings if f.fails]
    warnings = [f for f in report.findings if not f.fails and f.check != "equivalent"]
    declared = [f for f in report.findings if f.check == "equivalent"]
    titled = (
        ("problems", problems),
        ("warnings", warnings),
        ("equivalent mutants (declared no real flaw, not counted by --verify --mutants)", declared),
    )
    for title, group in titled:
        if group:
            lines += ["", f"{len(group)} {title}:"] + [f"  {f}" for f in group]
    lines += [
        "",
        "Scores below 0.50 mean no signal: holding one case out leaves its class one short.",
        f"{'FAIL: ' + str(len(problems)) + ' problems' if problems else 'OK: no problems'}"
        f" (trivial classifiers must stay at or below {limit:.2f})",
    ]
    return "\n".join(lines)
