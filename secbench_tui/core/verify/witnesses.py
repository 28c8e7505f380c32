"""Witnesses as data: `--verify --json FILE` writes every case's outcome, and for a proven bad
case its witness (the parameter set, the rules and the property's violating rows) together
with that parameter set written as an exploit of verdict schema 3: what a valid exploit of
the case looks like, for a suite's author, and what `--prove-findings` proves when a model
sends it (docs/exploits.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from secbench_tui.core.verify.data import HARNESS, VERIFY_DIR
from secbench_tui.core.verify.execution import Parameters, ResultSetRow, json_value
from secbench_tui.core.verify.exploit_plan import exploit_json
from secbench_tui.core.verify.models import CaseProof, Proof, VerifyReport

WITNESS_SCHEMA = 1  # raise when a key's meaning changes


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WitnessRecord(_Record):
    parameter_set: int  # 1-based: the line of `# Parameters`
    params: Parameters
    rules: list[str]  # the rules the rows name ("" for a row that names none)
    rows: list[ResultSetRow]
    compared_with: str | None = None  # the original format's rule: the good case it differs from
    exploit: dict[str, object] | None = None  # a proven bad case's: the set as an exploit


class CaseRecord(_Record):
    case_id: str
    app: str
    expected: str
    outcome: str  # proven | failed | not verifiable
    detail: str
    rule: str | None  # the rule a bad case is written to break
    other_rule: bool  # proven only by rows naming another rule
    witness: WitnessRecord | None


class WitnessDocument(_Record):
    witness_schema: int = WITNESS_SCHEMA
    engine: str
    seconds: float
    cases: list[CaseRecord]


def python_apps(apps: Mapping[str, Path]) -> set[str]:
    """The apps (name -> folder) whose verification data holds a harness: Python apps."""
    return {name for name, root in apps.items() if (root / VERIFY_DIR / HARNESS).is_file()}


def _record(proof: CaseProof, python: bool) -> CaseRecord:
    w = proof.witness
    witness = None
    if w is not None:
        proven_bad = proof.proof is Proof.PROVEN and proof.expected == "bad"
        witness = WitnessRecord(
            parameter_set=w.params_index + 1,
            params=json_value(dict(w.params)),
            rules=list(w.rules),
            rows=json_value(list(w.rows)),
            compared_with=w.compared_with or None,
            exploit=exploit_json(dict(w.params), python) if proven_bad else None,
        )
    return CaseRecord(
        case_id=proof.case_id,
        app=proof.app,
        expected=proof.expected,
        outcome=proof.proof.value,
        detail=proof.detail,
        rule=proof.rule,
        other_rule=proof.other_rule,
        witness=witness,
    )


def witness_document(report: VerifyReport, python: set[str]) -> WitnessDocument:
    return WitnessDocument(
        engine=report.engine,
        seconds=round(report.seconds, 3),
        cases=[_record(proof, proof.app in python) for proof in report.cases],
    )
