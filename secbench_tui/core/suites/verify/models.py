"""Typed results of a verification: one `CaseProof` per case, gathered in a `VerifyReport`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Proof(StrEnum):
    PROVEN = "proven"
    FAILED = "failed"
    NOT_VERIFIABLE = "not verifiable"


@dataclass(frozen=True)
class CaseProof:
    app: str
    case_id: str  # app/file.md, as in runs
    expected: str  # good | bad
    proof: Proof
    detail: str = ""  # why it failed or cannot be verified; empty when proven


@dataclass
class VerifyReport:
    engine: str  # e.g. "PostgreSQL 16.2 (pgserver)"
    cases: list[CaseProof] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, proof: Proof) -> int:
        return sum(1 for c in self.cases if c.proof is proof)

    @property
    def ok(self) -> bool:
        """Every verifiable case proven (and at least one case was verifiable)."""
        return self.count(Proof.FAILED) == 0 and self.count(Proof.PROVEN) > 0
