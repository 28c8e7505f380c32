"""Typed results of a verification: one `CaseProof` per case, gathered in a `VerifyReport`,
and, with `--mutants`, one `MutantResult` per `Mutant` of a good case."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from secbench_tui.core.verify.execution import Parameters, ResultSetRow


class Proof(StrEnum):
    PROVEN = "proven"
    FAILED = "failed"
    NOT_VERIFIABLE = "not verifiable"


@dataclass(frozen=True)
class Witness:
    """What proves a bad case bad (or shows a good case is not): the parameter set, the rules
    the rows broke and the rows themselves, as the property returned them."""

    params_index: int  # 0-based index of the parameter set
    params: Parameters
    rules: tuple[str, ...] = ()  # rules named by the violating rows ("" when a row names none)
    rows: tuple[ResultSetRow, ...] = ()  # the property's rows (or the differing result)
    compared_with: str = ""  # the original's rule: the good case it differs from


@dataclass(frozen=True)
class CaseProof:
    app: str
    case_id: str  # app/file.md, as in runs
    expected: str  # good | bad
    proof: Proof
    detail: str = ""  # why it failed or cannot be verified; empty when proven
    witness: Witness | None = None
    rule: str | None = None  # the rule a bad case is written to break, when it says so
    other_rule: bool = False  # a bad case proven only by rules other than its own


class MutantKind(StrEnum):
    CONJUNCT = "conjunct"  # a WHERE/ON/HAVING conjunct deleted
    RAISE_BLOCK = "raise-block"  # a plpgsql IF ... THEN RAISE ... END IF deleted
    FILTER_ARG = "filter-arg"  # a SQLAlchemy where/filter argument deleted
    HTTP_GUARD = "http-guard"  # an `if ...: raise HTTPException(...)` deleted
    ROLE_DEPENDENCY = "role-dependency"  # Depends(require_roles(...)) -> any signed-in user
    BOUNDARY = "boundary"  # < to <=, > to >=
    LIMIT_CAP = "limit-cap"  # LEAST(:limit, 100) -> :limit, min(x, 100) -> x, le=100 dropped


@dataclass(frozen=True)
class Mutant:
    kind: MutantKind
    line: int  # 1-based line in the case's code block
    description: str  # what was removed or changed, one line
    code: str  # the whole mutated code block
    guard: str = ""  # the guard's text, normalised: what an equivalence declaration names
    syntax: str = "sql"  # the guard's language (SQL in a Python handler's `text()` is sql)


class MutantOutcome(StrEnum):
    CAUGHT = "caught"  # verify fails the mutant: the guard is tested
    SURVIVED = "survived"  # verify still proves the mutant good: the guard is not tested
    EQUIVALENT = "equivalent"  # declared no real flaw by the scenario (with a reason)
    BROKEN = "broken"  # the mutant does not run (an error): counted apart


@dataclass(frozen=True)
class MutantResult:
    app: str
    scenario: str
    case_id: str  # the good case mutated
    kind: str  # a MutantKind value
    line: int  # line in the case's code block
    file_line: int  # line in the case file
    description: str
    outcome: MutantOutcome
    detail: str = ""  # how it was caught, why it is equivalent, or its error
    guard: str = ""  # the guard's text, normalised

    @property
    def key(self) -> str:
        """How a scenario's `# Equivalent mutants` names it."""
        return f"{self.case_id.rsplit('/', 1)[-1]} {self.kind} `{self.guard}`"


@dataclass
class VerifyReport:
    engine: str  # e.g. "PostgreSQL 16.2 (pgserver)"
    cases: list[CaseProof] = field(default_factory=list)
    seconds: float = 0.0
    mutants: list[MutantResult] = field(default_factory=list)
    mutants_seconds: float = 0.0
    ignored_declarations: list[str] = field(default_factory=list)  # naming no mutant or several

    def count(self, proof: Proof) -> int:
        return sum(1 for c in self.cases if c.proof is proof)

    @property
    def ok(self) -> bool:
        """Every verifiable case proven (and at least one case was verifiable)."""
        return self.count(Proof.FAILED) == 0 and self.count(Proof.PROVEN) > 0
