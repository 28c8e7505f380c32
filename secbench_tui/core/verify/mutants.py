"""Mutants of good cases: each removes or weakens one guard, so verify can be tested itself.

A good case is proven when its scenario's data and property cannot tell it from a flaw-free
handler. A mutant deletes one guard (a WHERE/ON conjunct, a plpgsql `IF ... THEN RAISE`
block, a SQLAlchemy filter argument, an `if ...: raise HTTPException`, a role dependency),
widens a boundary (`<` to `<=`) or drops a LIMIT cap. If verify still proves the mutant
"good", the scenario's parameter sets or property miss that guard: the survivor names the
case and the line, so the suite author knows where to add data.

`sql_mutants` makes the mutants of SQL, `python_mutants` those of Python handlers; nothing
there runs code. Here each is verified like any case (`Mutation`, called by `runner`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from secbench_tui.core.models import Case
from secbench_tui.core.suites.markdown import code_block_language
from secbench_tui.core.verify.data import Scenario
from secbench_tui.core.verify.execution import Execution
from secbench_tui.core.verify.judge import CaseRun, judge
from secbench_tui.core.verify.models import (
    Mutant,
    MutantKind,
    MutantOutcome,
    MutantResult,
    Proof,
)
from secbench_tui.core.verify.python_mutants import python_mutants
from secbench_tui.core.verify.sql_mutants import line_of, sql_mutants

__all__ = ["Mutant", "MutantKind", "Mutation", "code_language", "mutants_of"]


def mutants_of(code: str, language: str) -> list[Mutant]:
    """Every mutant of a case's code block (`language`: sql or python), in line order."""
    if language == "python":
        found = python_mutants(code)
    else:
        found = [
            Mutant(kind, line_of(code, where), what, new)
            for where, kind, what, new in sql_mutants(code)
        ]
    unique: dict[str, Mutant] = {}
    for m in found:
        if m.code != code:
            unique.setdefault(m.code, m)
    return sorted(unique.values(), key=lambda m: (m.line, m.kind.value))


def code_language(case: Case) -> str:
    """`python` for a Python app's handler, else `sql` (the markdown block's language)."""
    return "python" if code_block_language(case.test_file) in ("python", "py") else "sql"


def _code_line(case: Case) -> int:
    """Line of the case file where its code block starts (0 when it cannot be found)."""
    try:
        text = Path(case.test_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return 0
    at = text.find(case.code)
    return text.count("\n", 0, at) if at >= 0 else 0


class Mutation:
    """Makes the mutants of each good case, verifies them beside the real runs, and keeps the
    results and the time they took (apart from the verify time of the suite itself)."""

    def __init__(self) -> None:
        self.results: list[MutantResult] = []
        self.seconds = 0.0

    def check(
        self,
        execute: Callable[[Case, Scenario], tuple[Execution, ...]],
        scenario: Scenario,
        group: list[Case],
        runs: list[CaseRun],
    ) -> list[MutantResult]:
        started = time.monotonic()
        goods = [r for r in runs if r.expected == "good"]
        found: list[MutantResult] = []
        for case in group:
            if case.expected != "good":
                continue
            base = _code_line(case)
            try:
                mutants = mutants_of(case.code, code_language(case))
            except RecursionError:  # too deep for a parser: the case itself failed to verify
                mutants = []
            for mutant in mutants:
                found.append(self._one(execute, scenario, case, goods, mutant, base))
        self.results.extend(found)
        self.seconds += time.monotonic() - started
        return found

    def _one(
        self,
        execute: Callable[[Case, Scenario], tuple[Execution, ...]],
        scenario: Scenario,
        case: Case,
        goods: list[CaseRun],
        mutant: Mutant,
        base: int,
    ) -> MutantResult:
        def result(outcome: MutantOutcome, detail: str = "") -> MutantResult:
            return MutantResult(
                case.app,
                scenario.name,
                case.case_id,
                mutant.kind.value,
                mutant.line,
                base + mutant.line,
                mutant.description,
                outcome,
                detail,
            )

        declared = scenario.equivalent(case.case_id, mutant.line, mutant.kind.value)
        mutated = replace(case, code=mutant.code)
        run = CaseRun(case.app, f"{case.case_id}#mutant", "good", execute(mutated, scenario))
        others = [g for g in goods if g.case_id != case.case_id] or goods
        proof = judge([*others, run], scenario)[-1]
        error = next((ex.error for ex in run.executions if ex.error is not None), None)
        if proof.proof is Proof.PROVEN:
            if declared is not None:
                return result(MutantOutcome.EQUIVALENT, declared.reason)
            return result(MutantOutcome.SURVIVED)
        if error is not None:
            return result(MutantOutcome.BROKEN, error)
        return result(MutantOutcome.CAUGHT, proof.detail)
