"""Does the suite give its labels away? The suite lint's trivial-classifier check, made once per
plan on the apps asked (every prompt asks the same cases) and recorded with each run of a
markdown suite (`core.lint.leaks`), so its summary and its report can say so first."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from secbench_tui.core.lint.report import LeakCheck, leak_record
from secbench_tui.core.models import SuiteKind
from secbench_tui.planning.suites import LoadedSuite


def check_leaks(suites: Iterable[LoadedSuite], apps: Sequence[str] | None) -> LeakCheck | None:
    """The check of the suite the markdown cells ask (None for VulDetectBench), recorded on
    each of their suites (`LoadedSuite.leak`)."""
    from secbench_tui.core.lint.leaks import suite_leaks  # markdown suites only

    markdown = [s for s in suites if s.kind is SuiteKind.MARKDOWN]
    if not markdown:
        return None
    check, guesses = suite_leaks(markdown[0].root, apps)
    recorded = leak_record(check, guesses)
    for suite in markdown:
        suite.leak = recorded
    return check


def leak_lines(leak: LeakCheck | None) -> list[str]:
    """What a front end says before the run when the suite's labels leak."""
    if leak is None or not leak.leaky:
        return []
    return [
        f"warning: labels leak: a surface cue reads this suite's labels above"
        f" {leak.threshold:.2f} balanced accuracy (secbench-tui --lint says more)",
        *(f"  {cue.text()}" for cue in leak.cues),
    ]
