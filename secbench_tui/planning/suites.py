"""The cases of a cell: its suite loaded (with its prompt, or its VulDetectBench method), then
narrowed by `--filter` and `--limit`. A suite that would measure nothing is refused."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from secbench_tui.config import RunSettings
from secbench_tui.core.models import Case, JSONObject, SuiteKind
from secbench_tui.core.store.values import vdb_prompt_name
from secbench_tui.core.suites.markdown import SuiteError, load_markdown_suite
from secbench_tui.core.suites.prompts import PromptError, default_prompt, sha256_text
from secbench_tui.errors import UsageError
from secbench_tui.planning.cells import is_vuldetectbench


@dataclass
class LoadedSuite:
    kind: SuiteKind
    root: Path
    cases: list[Case]
    skipped: list[str]
    prompt_hash: str
    prompt_name: str = ""
    leak: JSONObject | None = None  # the leak check as the run records it (markdown suites)


def load_suite(one: RunSettings) -> LoadedSuite:
    """The cases of one cell: with its prompt for a markdown suite (default: the default one).
    Its flags were checked with the matrix's (`cells.matrix_cells`)."""
    root = one.cases_dir
    if not root.exists():
        raise UsageError(f"--cases {root}: no such directory")
    suite = _vuldetectbench(one) if is_vuldetectbench(root) else _markdown(one)
    if one.task == "fix":
        suite.cases = bad_cases(suite.cases, root)
    if one.filters:
        suite.cases = filter_cases(suite.cases, one.filters, root)
    if one.limit is not None:
        per_task = suite.kind is SuiteKind.VULDETECTBENCH
        suite.cases = first_cases(suite.cases, one.limit, per_app=per_task)
    return suite


def _vuldetectbench(one: RunSettings) -> LoadedSuite:
    from secbench_tui.core.vuldetectbench.loader import load_vuldetectbench

    root = one.cases_dir
    skipped: list[str] = []
    try:
        cases = load_vuldetectbench(root, one.tasks, one.method, skipped=skipped)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    if not cases:
        raise UsageError(no_usable_case(root, skipped, SuiteKind.VULDETECTBENCH))
    prompt_hash = sha256_text(f"vuldetectbench:{one.method}")
    return LoadedSuite(
        SuiteKind.VULDETECTBENCH, root, cases, skipped, prompt_hash, vdb_prompt_name(one.method)
    )


def _markdown(one: RunSettings) -> LoadedSuite:
    root = one.cases_dir
    try:
        prompt = one.prompt or default_prompt()
    except PromptError as exc:
        raise UsageError(str(exc)) from exc
    try:
        text = prompt.text if one.original_request else prompt.normalised
        suite = load_markdown_suite(root, one.apps, text, one.request_style)
    except SuiteError as exc:
        raise UsageError(str(exc)) from exc
    if not suite.cases:
        skipped = [str(s) for s in suite.skipped]
        raise UsageError(no_usable_case(root, skipped, SuiteKind.MARKDOWN))
    skipped = [*prompt.notes, *(str(s) for s in suite.skipped)]
    return LoadedSuite(SuiteKind.MARKDOWN, root, suite.cases, skipped, prompt.sha256, prompt.name)


def no_usable_case(root: Path, skipped: list[str], kind: SuiteKind) -> str:
    """Why a run over `root` would measure nothing: a run of no case is refused, not recorded."""
    if kind is SuiteKind.VULDETECTBENCH:
        fix = "fix the task files named, or give --cases another folder"
    else:
        fix = (
            "fix the case files named (each needs a '# Code' block and '# Expected' good or "
            "bad), or give --cases another folder"
        )
    if not skipped:
        return f"no usable case in {root} (no case files found); {fix}"
    shown = "; ".join(s.removeprefix("skipped ") for s in skipped[:3])
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return f"no usable case in {root} ({len(skipped)} skipped: {shown}{more}); {fix}"


def bad_cases(cases: list[Case], root: Path) -> list[Case]:
    """`--task fix`: the bad cases, the ones with something to fix."""
    kept = [c for c in cases if c.expected == "bad"]
    if not kept:
        raise UsageError(f"--task fix: {root} holds no bad case, so nothing to fix")
    return kept


def filter_cases(cases: list[Case], patterns: list[str], root: Path) -> list[Case]:
    """The cases whose id (`app/file.md`) matches any `--filter` glob."""
    kept = [c for c in cases if any(fnmatchcase(c.case_id, p) for p in patterns)]
    if not kept:
        example = cases[0].case_id if cases else "app/case.md"
        raise UsageError(
            f"--filter {' '.join(patterns)}: matches no case in {root}; "
            f"case ids look like {example}"
        )
    return kept


def first_cases(cases: list[Case], limit: int, per_app: bool) -> list[Case]:
    """The first `limit` cases, or the first `limit` of each app (each VulDetectBench task)."""
    if not per_app:
        return cases[:limit]
    taken: dict[str, int] = {}
    kept = []
    for case in cases:
        if taken.get(case.app, 0) < limit:
            taken[case.app] = taken.get(case.app, 0) + 1
            kept.append(case)
    return kept
