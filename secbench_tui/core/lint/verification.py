"""The suite's verification data as the lint sees it: warnings for the scenarios whose labels
`--verify` cannot prove (no fixtures, no data for a scenario, files it cannot use), and the
mutants the suite declares equivalent (no real flaw)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from secbench_tui.core.lint.cases import LintCase
from secbench_tui.core.lint.report import Finding
from secbench_tui.core.verify.data import FIXTURES, VERIFY_DIR, load_app_data


def verification_findings(app: str, folder: Path, cases: Sequence[LintCase]) -> list[Finding]:
    """Warnings for scenarios whose labels `--verify` cannot prove (no data to run them on)."""
    data, problems = load_app_data(app, folder)
    findings = [Finding("verify", str(p), app=app, fails=False) for p in problems]
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
    for scenario in scenarios:
        if scenario not in data.scenarios:
            message = (
                f"no verification data for scenario {scenario} ({VERIFY_DIR}/{scenario}.md): "
                "--verify reports its cases as not verifiable"
            )
            findings.append(Finding("verify", message, app=app, fails=False))
    return findings
