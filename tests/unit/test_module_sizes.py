"""A room holds one job: no module of the program is over 500 lines (issue 29).

Counted: every Python module under `secbench_tui/`. Not counted: data files, templates and
stylesheets (not Python), and the bundled cases (`secbench_tui/cases/`, benchmark data whose
code must stay as written, such as a verify harness).
"""

from __future__ import annotations

from pathlib import Path

import secbench_tui

LIMIT = 500
PACKAGE = Path(secbench_tui.__file__).resolve().parent
BUNDLED_CASES = PACKAGE / "cases"


def program_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if not p.is_relative_to(BUNDLED_CASES))


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_count_reads_the_program_and_not_the_bundled_cases() -> None:
    modules = {p.relative_to(PACKAGE).as_posix() for p in program_modules()}
    assert {"cli.py", "core/lint/suite.py", "core/vuldetectbench/task_scores.py"} <= modules
    assert any(BUNDLED_CASES.rglob("*.py"))  # a harness that would count if it were read
    assert not any(m.startswith("cases/") for m in modules)


def test_no_module_is_over_500_lines() -> None:
    over = {
        p.relative_to(PACKAGE).as_posix(): n for p in program_modules() if (n := lines(p)) > LIMIT
    }
    assert over == {}, f"split these into modules of one job each: {over}"
