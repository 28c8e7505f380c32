"""Mutants of good cases: each removes or weakens one guard, so verify can be tested itself.

A good case is proven when its scenario's data and property cannot tell it from a flaw-free
handler. A mutant deletes one guard (a WHERE/ON conjunct, a plpgsql `IF ... THEN RAISE`
block, a SQLAlchemy filter argument, an `if ...: raise HTTPException`, a role dependency),
widens a boundary (`<` to `<=`) or drops a LIMIT cap. If verify still proves the mutant
"good", the scenario's parameter sets or property miss that guard: the survivor names the
case and the line, so the suite author knows where to add data.

`sql_mutants` makes the mutants of SQL, `python_mutants` those of Python handlers; nothing
there runs code. Here each is verified like any case (`Mutation`, called by `runner`).

A scenario may declare a mutant equivalent (no real flaw) by its case, kind and guard text
(`declarations`): a declaration that names no mutant, or more than one, hides nothing; verify
counts the mutants it would have named as any other, and `--lint` fails it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from secbench_tui.core.models import Case
from secbench_tui.core.suites.markdown import code_block_language
from secbench_tui.core.verify.data import Equivalent, Scenario
from secbench_tui.core.verify.execution import Execution
from secbench_tui.core.verify.judge import CaseRun, judge
from secbench_tui.core.verify.models import (
    Mutant,
    MutantKind,
    MutantOutcome,
    MutantResult,
    Proof,
)
from secbench_tui.core.verify.python_mutants import normal_python, python_mutants
from secbench_tui.core.verify.sql_mutants import line_of, normal_sql, sql_mutants

__all__ = [
    "Declarations",
    "Mutant",
    "MutantKind",
    "Mutation",
    "code_language",
    "declarations",
    "mutants_of",
    "normal_guard",
]

# The kinds of mutant that delete a guard (the others widen a boundary or drop a cap): what
# the rewrites' gate is fed to measure its strength.
DELETIONS = frozenset(
    {
        MutantKind.CONJUNCT,
        MutantKind.RAISE_BLOCK,
        MutantKind.FILTER_ARG,
        MutantKind.HTTP_GUARD,
        MutantKind.ROLE_DEPENDENCY,
    }
)


def mutants_of(code: str, language: str) -> list[Mutant]:
    """Every mutant of a case's code block (`language`: sql or python), in line order."""
    if language == "python":
        found = python_mutants(code)
    else:
        found = [
            Mutant(e.kind, line_of(code, e.location), e.description, e.text, e.guard, "sql")
            for e in sql_mutants(code)
        ]
    unique: dict[str, Mutant] = {}
    for m in found:
        if m.code != code:
            unique.setdefault(m.code, m)
    return sorted(unique.values(), key=lambda m: (m.line, m.kind.value))


def normal_guard(text: str, syntax: str) -> str:
    """A guard's text as a mutant names it: SQL as PostgreSQL's deparser writes it, Python as
    `ast.unparse` does (a text ending in `...`, a beginning: whitespace collapsed only)."""
    if text.endswith("..."):
        return " ".join(text[:-3].split())
    return normal_python(text) if syntax == "python" else normal_sql(text)


@dataclass
class Declarations:
    """A case's equivalence declarations against its mutants: the mutant each names, and
    each one that names none or several (with the lines of those it names)."""

    named: dict[str, Equivalent] = field(default_factory=dict)  # mutant code -> declaration
    unmatched: list[Equivalent] = field(default_factory=list)
    ambiguous: list[tuple[Equivalent, list[Mutant]]] = field(default_factory=list)


def _names(declared: Equivalent, mutant: Mutant) -> bool:
    if mutant.kind.value != declared.kind:
        return False
    guard = normal_guard(declared.guard, mutant.syntax)
    if declared.prefix:
        return mutant.guard.startswith(guard)
    return mutant.guard == guard


def declarations(equivalents: Sequence[Equivalent], mutants: Sequence[Mutant]) -> Declarations:
    """Which mutants each declaration names (by kind and normalised guard text): exactly as
    many as it says (one, or the `N places` it gives), else it names none."""
    found = Declarations()
    for declared in equivalents:
        named = [m for m in mutants if _names(declared, m)]
        if not named:
            found.unmatched.append(declared)
        elif len(named) != declared.places:
            found.ambiguous.append((declared, named))
        else:
            for mutant in named:
                found.named.setdefault(mutant.code, declared)
    return found


def code_language(case: Case) -> str:
    """`python` for a Python app's handler, else `sql` (the markdown block's language)."""
    return file_language(case.test_file)


def file_language(path: str | Path) -> str:
    """`python` when a case file's code block says so, else `sql`: how its mutants are made."""
    return "python" if code_block_language(path) in ("python", "py") else "sql"


def declaration_problems(found: Declarations) -> list[str]:
    """Why each declaration that names no mutant or several hides nothing, one line each."""
    lines = [
        f"{e.key}: names no mutant of the case (its guard changed or is gone; copy the guard "
        "as --verify --mutants prints it)"
        for e in found.unmatched
    ]
    for e, named in found.ambiguous:
        at = ", ".join(str(m.line) for m in named)
        if e.places > 1:
            lines.append(
                f"{e.key}: names {len(named)} mutants (lines {at}), not the {e.places} it says"
            )
            continue
        lines.append(
            f"{e.key}: names {len(named)} mutants (lines {at}); a declaration names one guard: "
            f"give its whole text, or, where the same guard stands in {len(named)} places and "
            f"none is a real flaw, say so: `<guard>` ({len(named)} places)"
        )
    return lines


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
        self.ignored: list[str] = []  # declarations that name no mutant or several, and why
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
            language = code_language(case)
            try:
                mutants = mutants_of(case.code, language)
            except RecursionError:  # too deep for a parser: the case itself failed to verify
                mutants = []
            declared = declarations(scenario.equivalents_of(case.case_id), mutants)
            self.ignored += [f"{case.app}/{problem}" for problem in declaration_problems(declared)]
            for mutant in mutants:
                equivalent = declared.named.get(mutant.code)
                found.append(self._one(execute, scenario, case, goods, mutant, base, equivalent))
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
        declared: Equivalent | None,
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
                mutant.guard,
            )

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
