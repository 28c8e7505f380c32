"""A suite's apps and cases as the lint reads them, with what is wrong in the files themselves.

Reading never stops at a broken file: a SPEC.md or a case that cannot be read becomes a
`parse` finding and the rest of the suite is still linted. A case file's name, its
`# Description` and its `# Rule` are checked as it is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from secbench_tui.core.case_names import read_name
from secbench_tui.core.lint.comments import code_language
from secbench_tui.core.lint.report import Finding, LintReport
from secbench_tui.core.suites.gold import CaseGold, listed_also, spec_rules
from secbench_tui.core.suites.markdown import (
    SuiteError,
    discover_apps,
    read_app_prompt,
    read_case,
    split_sections,
)

_FENCE_INFO = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[ \t]*([^\s`]*)")


@dataclass(frozen=True)
class LintCase:
    """A case as the lint reads it: `language` names the comment syntax of its code."""

    app: str
    path: Path
    expected: str
    code: str
    language: str
    scenario: str
    gold: CaseGold = CaseGold()
    also_listed: tuple[int, ...] = ()  # `# Also acceptable` as written, the gold rule kept
    named: bool = True  # the file name follows the rule of `core.case_names`


def load_apps(root: Path, report: LintReport) -> list[tuple[str, tuple[Path, ...]]]:
    """Each app's name and case files; a SPEC.md that cannot be read is a finding."""
    try:
        return [(a.name, a.case_files) for a in discover_apps(root)]
    except SuiteError as exc:
        if not root.is_dir():
            report.findings.append(Finding("parse", str(exc)))
            return []
    apps = []  # one app's SPEC.md is broken: report each, lint the others
    for folder in sorted(p for p in root.iterdir() if (p / "SPEC.md").is_file()):
        try:
            read_app_prompt(folder / "SPEC.md")
        except SuiteError as exc:
            report.findings.append(Finding("parse", str(exc), folder / "SPEC.md", folder.name))
            continue
        files = tuple(sorted(p for p in folder.glob("*.md") if p.name != "SPEC.md"))
        apps.append((folder.name, files))
    if not apps and not report.findings:
        report.findings.append(Finding("parse", f"{root}: no app folders with a SPEC.md found"))
    return apps


def app_rules(folder: Path) -> tuple[int, ...]:
    """The numbers of the rules the app's SPEC.md lists (none when it cannot be read)."""
    try:
        return spec_rules(read_app_prompt(folder / "SPEC.md"))
    except SuiteError:
        return ()


def orphan_folders(root: Path) -> list[Finding]:
    """Folders of case files without a SPEC.md, which no run would read."""
    if not root.is_dir():
        return []
    return [
        Finding("parse", "case files but no SPEC.md; add one with a '# Prompt'", folder)
        for folder in sorted(root.iterdir())
        if folder.is_dir() and not (folder / "SPEC.md").exists() and any(folder.glob("*.md"))
    ]


def read_lint_case(app: str, path: Path, root: Path, report: LintReport) -> LintCase | None:
    """The case at `path`, or None when it cannot be read (a finding says why)."""
    shown = path.relative_to(root) if path.is_relative_to(root) else path
    read = read_case(path)
    if isinstance(read, str):
        report.findings.append(Finding("parse", read, shown, app))
        return None
    code, expected, description = read.code, read.expected, read.description
    if read.gold_problem is not None:
        report.findings.append(Finding("rule", read.gold_problem, shown, app))
    name = read_name(path.name)  # a name that follows no rule: `pair_findings` says so
    if name is not None and name.label != expected:
        message = f"named {name.label} but '# Expected' says {expected}"
        report.findings.append(Finding("name", message, shown, app))
    if not description:
        message = "no '# Description'; name the rule the case tests"
        report.findings.append(Finding("description", message, shown, app, fails=False))
    sections = split_sections(path.read_text(encoding="utf-8"))
    fence = _FENCE_INFO.match(sections["code"].lstrip("\n").split("\n", 1)[0])
    language = code_language(fence.group(1) if fence else "", code)
    scenario = name.scenario if name else path.stem
    return LintCase(
        app,
        shown,
        expected,
        code,
        language,
        scenario,
        read.gold,
        also_listed=listed_also(sections),
        named=name is not None,
    )
