"""The suite's verification data as the lint sees it: warnings for the scenarios whose labels
`--verify` cannot prove (no fixtures, no data for a scenario, files it cannot use), and the
mutants the suite declares equivalent (no real flaw), each of which must name exactly one
mutant of a good case of its scenario: a declaration that names none (its guard changed, its
case is gone) or several would hide what it was never meant to, so it fails the lint."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from secbench_tui.core.lint.cases import LintCase
from secbench_tui.core.lint.report import Finding
from secbench_tui.core.verify.data import (
    FIXTURES,
    VERIFY_DIR,
    Equivalent,
    Scenario,
    load_app_data,
    same_case,
)


def verification_findings(app: str, folder: Path, cases: Sequence[LintCase]) -> list[Finding]:
    """Warnings for scenarios whose labels `--verify` cannot prove (no data to run them on),
    and failures for equivalence declarations that name no mutant or several."""
    data, problems = load_app_data(app, folder)
    findings = [
        Finding("declaration" if p.declaration else "verify", str(p), app=app, fails=p.declaration)
        for p in problems
    ]
    scenarios = sorted({c.scenario for c in cases})
    if data.fixtures is None and scenarios:
        message = (
            f"no {VERIFY_DIR}/{FIXTURES} (schema and seed rows): --verify cannot run its cases"
        )
        findings.append(Finding("verify", message, app=app, fails=False))
    for name, declared in sorted(data.scenarios.items()):
        for eq in declared.equivalents:
            message = f"equivalent mutant declared in {name}: {eq.key}: {eq.reason}"
            findings.append(Finding("equivalent", message, app=app, fails=False))
        findings += _declaration_findings(app, folder, name, declared, cases)
    for scenario in scenarios:
        if scenario not in data.scenarios:
            message = (
                f"no verification data for scenario {scenario} ({VERIFY_DIR}/{scenario}.md): "
                "--verify reports its cases as not verifiable"
            )
            findings.append(Finding("verify", message, app=app, fails=False))
    return findings


def _declaration_findings(
    app: str, folder: Path, scenario: str, data: Scenario, cases: Sequence[LintCase]
) -> list[Finding]:
    """A failure for each declaration of `scenario` that names no mutant or several, or a case
    that is gone, of another scenario, or bad (only good cases have mutants)."""
    path, equivalents = data.path, data.equivalents
    if not equivalents:
        return []
    try:
        from secbench_tui.core.verify.mutants import (
            declaration_problems,
            declarations,
            file_language,
            mutants_of,
        )
    except ImportError as exc:  # pglast: the verify extra
        message = (
            f"{scenario}: cannot check its {len(equivalents)} equivalence declarations "
            f"without the verify extra ({exc}): pip install 'secbench-tui[verify]'"
        )
        return [Finding("declaration", message, path, app, fails=False)]
    by_name = {c.path.name: c for c in cases}
    found: list[Finding] = []
    checked: dict[str, list[Equivalent]] = {}
    for eq in equivalents:
        case = next((c for n, c in by_name.items() if same_case(eq.case_file, n)), None)
        why = None
        if case is None:
            why = f"no case file {eq.case_file} in {app}: the declaration outlived its case"
        elif case.scenario != scenario:
            why = f"{eq.case_file} is a case of scenario {case.scenario}, not {scenario}"
        elif case.expected != "good":
            why = f"{eq.case_file} is labelled {case.expected}: only good cases have mutants"
        if why is not None:
            found.append(Finding("declaration", f"{eq.key}: {why}", path, app))
        else:
            checked.setdefault(case.path.name if case else eq.case_file, []).append(eq)
    for name, mine in checked.items():
        case = by_name[name]
        language = file_language(folder / case.path.name)  # as verify reads it
        try:
            mutants = mutants_of(case.code, language)
        except RecursionError:
            mutants = []
        for problem in declaration_problems(declarations(mine, mutants)):
            found.append(Finding("declaration", problem, path, app))
    return found
