"""`secbench-tui --lint`: a suite's lint findings printed, with the exit code they call for."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from secbench_tui.core.lint.formatting import format_report
from secbench_tui.core.lint.suite import lint_suite
from secbench_tui.core.suites.markdown import SuiteError, discover_apps
from secbench_tui.core.untrusted import inert
from secbench_tui.core.vuldetectbench.loader import is_vuldetectbench_dir
from secbench_tui.errors import say_error
from secbench_tui.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE


def lint_main(cases_dir: Path, apps: Sequence[str] | None = None) -> int:
    """`secbench-tui --lint`: print the findings; 0 when clean, 1 on problems, 2 when the
    folder is missing, is not a markdown suite or has no app of a name in `--apps` (as a run
    says of the same folder)."""
    if not cases_dir.is_dir():
        say_error(
            f"--cases {inert(cases_dir)}: no such folder; give the suite's"
            " folder (one folder per app, each with a SPEC.md and its cases)",
        )
        return EXIT_USAGE
    if is_vuldetectbench_dir(cases_dir):
        say_error(
            f"--lint checks markdown suites; {inert(cases_dir)} is a"
            " VulDetectBench test set (task{N}_code.jsonl), whose cases and labels come from"
            " the benchmark: run it as it is (--cases with --no-ui, or in the app)",
        )
        return EXIT_USAGE
    if apps:
        try:
            discover_apps(cases_dir, apps)
        except SuiteError as exc:
            say_error(str(exc))
            return EXIT_USAGE
    report = lint_suite(cases_dir, only=apps)
    print(inert(format_report(report)))  # file names and suite text are foreign
    return EXIT_FAILED if report.failed else EXIT_OK
