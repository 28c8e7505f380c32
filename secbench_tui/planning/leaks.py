"""Does the suite give its labels away? The suite lint's trivial-classifier check, made once per
plan on the apps asked (every prompt asks the same cases) and recorded with each run of a
markdown suite (`core.lint.leaks`), so its summary and its report can say so first."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from pathlib import Path

from secbench_tui.core.lint.report import LeakCheck
from secbench_tui.core.models import JSONObject, SuiteKind
from secbench_tui.planning.suites import LoadedSuite


def check_leaks(suites: Iterable[LoadedSuite], apps: Sequence[str] | None) -> LeakCheck | None:
    """The check of the suite the markdown cells ask (None for VulDetectBench), recorded on
    each of their suites (`LoadedSuite.leak`)."""
    markdown = [s for s in suites if s.kind is SuiteKind.MARKDOWN]
    if not markdown:
        return None
    root = markdown[0].root
    check, recorded = leaks_of(root, tuple(apps or ()), _files_signature(root))
    for suite in markdown:
        suite.leak = dict(recorded)
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


def _files_signature(root: Path) -> tuple[tuple[str, int, int], ...]:
    """The suite's markdown files by name, modification time and size: the app plans again on
    every change of its setup screen, and the check is made again only when a file changed."""
    found = []
    for path in sorted(root.glob("*/*.md")):
        try:
            stat = path.stat()
        except OSError:
            continue
        found.append((path.as_posix(), stat.st_mtime_ns, stat.st_size))
    return tuple(found)


@functools.lru_cache(maxsize=4)  # kept by suite folder, apps asked and files' signature
def leaks_of(
    root: Path, apps: tuple[str, ...], signature: tuple[tuple[str, int, int], ...]
) -> tuple[LeakCheck, JSONObject]:
    from secbench_tui.core.lint.leaks import suite_leaks
    from secbench_tui.core.lint.report import leak_record

    check, guesses = suite_leaks(root, apps or None)
    return check, leak_record(check, guesses)
