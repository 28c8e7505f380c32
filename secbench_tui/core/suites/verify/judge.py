"""Decide, from a scenario's executions, whether each case's label is proven.

Two rules. With a `# Property` (this project's format): a good case is proven when no
parameter set yields a violation and at least one does something (returns rows, changes
rows, answers 2xx/3xx), so a case that refuses everything proves nothing; a bad case is
proven when at least one parameter set yields a violation. Without one (the original
security-bench's rule): the good cases return identical results on every parameter set and
something on at least one, and every bad case differs from them on at least one.
An execution error is never a proof: the case fails, with the error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from secbench_tui.core.suites.verify.data import Scenario
from secbench_tui.core.suites.verify.execution import Execution, dumps
from secbench_tui.core.suites.verify.models import CaseProof, Proof

SHOWN_ROWS = 3


@dataclass(frozen=True)
class CaseRun:
    app: str
    case_id: str
    expected: str
    executions: tuple[Execution, ...]


def _params(scenario: Scenario, index: int) -> str:
    return f"parameter set {index + 1} {json.dumps(scenario.parameters[index], sort_keys=True)}"


def _rows(rows: Sequence[object]) -> str:
    shown = "; ".join(dumps(r) for r in rows[:SHOWN_ROWS])
    more = f" (+{len(rows) - SHOWN_ROWS} more)" if len(rows) > SHOWN_ROWS else ""
    return shown + more


def _error(run: CaseRun, scenario: Scenario) -> CaseProof | None:
    for ex in run.executions:
        if ex.error is not None:
            detail = f"{_params(scenario, ex.params_index)}: error: {ex.error}"
            return CaseProof(run.app, run.case_id, run.expected, Proof.FAILED, detail)
    return None


def _by_property(run: CaseRun, scenario: Scenario) -> CaseProof:
    broken = [ex for ex in run.executions if ex.violations]
    if run.expected == "bad":
        if broken:
            ex = broken[0]
            why = f"breaks the property on {_params(scenario, ex.params_index)}"
            return CaseProof(run.app, run.case_id, run.expected, Proof.PROVEN, why)
        detail = "labelled bad but keeps the property on every parameter set"
        return CaseProof(run.app, run.case_id, run.expected, Proof.FAILED, detail)
    if broken:
        ex = broken[0]
        detail = (
            f"labelled good but breaks the property on {_params(scenario, ex.params_index)}: "
            f"{_rows(ex.violations)}"
        )
        return CaseProof(run.app, run.case_id, run.expected, Proof.FAILED, detail)
    if not any(ex.did_something for ex in run.executions):
        detail = "labelled good but returns or changes nothing on every parameter set"
        return CaseProof(run.app, run.case_id, run.expected, Proof.FAILED, detail)
    return CaseProof(run.app, run.case_id, run.expected, Proof.PROVEN)


def _by_original(runs: Sequence[CaseRun], scenario: Scenario) -> list[CaseProof]:
    goods = [r for r in runs if r.expected == "good"]
    proofs: list[CaseProof] = []
    if not goods:
        reason = "the original's rule compares with good cases, and this scenario has none"
        return [CaseProof(r.app, r.case_id, r.expected, Proof.NOT_VERIFIABLE, reason) for r in runs]
    reference = goods[0]
    for run in runs:
        mismatch = next(
            (
                a.params_index
                for a, b in zip(run.executions, reference.executions, strict=True)
                if a.compared != b.compared
            ),
            None,
        )
        if run.expected == "good":
            if mismatch is not None:
                ex = run.executions[mismatch]
                detail = (
                    f"labelled good but differs from {reference.case_id} on "
                    f"{_params(scenario, mismatch)}: {_rows([ex.compared])}"
                )
                proofs.append(CaseProof(run.app, run.case_id, "good", Proof.FAILED, detail))
            elif not any(ex.did_something for ex in run.executions):
                detail = "labelled good but returns or changes nothing on every parameter set"
                proofs.append(CaseProof(run.app, run.case_id, "good", Proof.FAILED, detail))
            else:
                proofs.append(CaseProof(run.app, run.case_id, "good", Proof.PROVEN))
        elif mismatch is None:
            detail = f"labelled bad but returns what {reference.case_id} returns on every set"
            proofs.append(CaseProof(run.app, run.case_id, "bad", Proof.FAILED, detail))
        else:
            why = f"differs from {reference.case_id} on {_params(scenario, mismatch)}"
            proofs.append(CaseProof(run.app, run.case_id, "bad", Proof.PROVEN, why))
    return proofs


def judge(runs: Sequence[CaseRun], scenario: Scenario) -> list[CaseProof]:
    """One proof per run, in the order given."""
    errors = {r.case_id: _error(r, scenario) for r in runs}
    if scenario.property_sql:
        proofs = [_by_property(r, scenario) for r in runs]
    else:
        usable = [r for r in runs if errors[r.case_id] is None]
        by_id = {p.case_id: p for p in _by_original(usable, scenario)} if usable else {}
        proofs = [by_id.get(r.case_id) or errors[r.case_id] for r in runs]  # type: ignore[misc]
    return [errors[p.case_id] or p for p in proofs]
