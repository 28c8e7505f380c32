"""Decide, from a scenario's executions, whether each case's label is proven.

Two rules. With a `# Property` (this project's format): a good case is proven when no
parameter set yields a violation and at least one does something (returns rows, changes
rows, answers 2xx/3xx), so a case that refuses everything proves nothing; a bad case is
proven when at least one parameter set yields a violation. Without one (the original
security-bench's rule): the good cases return identical results on every parameter set and
something on at least one, and every bad case differs from them on at least one.
An execution error is never a proof: the case fails, with the error.

A proof carries its witness: the parameter set, the rules the property's rows name (a
`rule` column, e.g. 'Rule 7' or 7) and the rows themselves. A bad case is written to break
one rule (its `# Rule N` section, else "Breaks rule N" in its description): when the
property names rules and none of the rows that prove the case names that one, the proof is
flagged `other_rule`, and the command reports it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from secbench_tui.core.models import Case
from secbench_tui.core.suites.markdown import split_sections
from secbench_tui.core.verify.data import Scenario
from secbench_tui.core.verify.execution import Execution, ResultSetRow, dumps
from secbench_tui.core.verify.models import CaseProof, Proof, Witness

SHOWN_ROWS = 3
WITNESS_ROWS = 20  # rows kept in a proof's witness (the app shows them all)
_RULE_NUMBER = re.compile(r"\d+")
_BREAKS = re.compile(r"\bbreaks\s+rules?\s+(\d+)", re.I)


@dataclass(frozen=True)
class CaseRun:
    app: str
    case_id: str
    expected: str
    executions: tuple[Execution, ...]
    rule: str | None = None  # the rule a bad case is written to break


def case_rule(case: Case) -> str | None:
    """The rule a bad case breaks: its `# Rule` section, else "Breaks rule N" in its
    description; None when it says neither (prose, not code: a pattern is enough)."""
    if case.expected != "bad":
        return None
    try:
        sections = split_sections(Path(case.test_file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        sections = {}
    if "rule" in sections:
        found = _RULE_NUMBER.search(sections["rule"])
        if found:
            return found.group(0)
    found = _BREAKS.search(case.description or sections.get("description", ""))
    return found.group(1) if found else None


def row_rule(row: ResultSetRow) -> str:
    """The rule a property row names in its `rule` column ('' when it names none)."""
    value = row.get("rule")
    if value is None:
        return ""
    found = _RULE_NUMBER.search(str(value))
    return found.group(0) if found else str(value)


def _witness(scenario: Scenario, ex: Execution, rows: Sequence[ResultSetRow]) -> Witness:
    rules = tuple(sorted({row_rule(r) for r in rows}, key=lambda r: (len(r), r)))
    return Witness(
        ex.params_index,
        dict(scenario.parameters[ex.params_index]),
        rules,
        tuple(rows[:WITNESS_ROWS]),
    )


def witness_line(witness: Witness) -> str:
    """A witness on one line: the parameter set, the rules and the first rows."""
    named = [r for r in witness.rules if r]
    rules = f" rule {', '.join(named)}:" if named else ""
    return (
        f"set {witness.params_index + 1} {json.dumps(witness.params, sort_keys=True)}:{rules} "
        f"{_rows(list(witness.rows))}"
    )


def proof_text(proof: CaseProof) -> list[str]:
    """A proof in full, line by line: what the app's verify screen shows for one case."""
    lines = [f"{proof.case_id} ({proof.expected}): {proof.proof.value}"]
    if proof.rule:
        lines.append(f"written to break rule {proof.rule}")
    if proof.detail:
        lines.append(proof.detail)
    w = proof.witness
    if w is None:
        if proof.proof is Proof.PROVEN and proof.expected == "good":
            lines.append("no parameter set yields a row that breaks the property")
        return lines
    lines.append(f"parameter set {w.params_index + 1}: {json.dumps(w.params, sort_keys=True)}")
    if w.compared_with:
        lines.append(f"differs from {w.compared_with} (the original's rule)")
    named = [r for r in w.rules if r]
    if named:
        lines.append(f"rules broken: {', '.join(named)}")
    lines.append(f"{len(w.rows)} row(s) that break it:" if w.rows else "no rows")
    for row in w.rows:
        rule = row_rule(row)
        lines.append(f"  {'rule ' + rule + ': ' if rule else ''}{dumps(row)}")
    return lines


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
        if not broken:
            detail = "labelled bad but keeps the property on every parameter set"
            return CaseProof(
                run.app, run.case_id, run.expected, Proof.FAILED, detail, rule=run.rule
            )
        own = [ex for ex in broken if any(row_rule(r) == run.rule for r in ex.violations)]
        named = any(row_rule(r) for ex in broken for r in ex.violations)
        ex = own[0] if own else broken[0]
        rows = [r for r in ex.violations if row_rule(r) == run.rule] if own else ex.violations
        witness = _witness(scenario, ex, rows)
        other = bool(run.rule) and named and not own
        why = f"breaks the property on {_params(scenario, ex.params_index)}"
        if other:
            why += f" by rule {', '.join(r for r in witness.rules if r)} only, not rule {run.rule}"
        return CaseProof(
            run.app, run.case_id, run.expected, Proof.PROVEN, why, witness, run.rule, other
        )
    if broken:
        ex = broken[0]
        detail = (
            f"labelled good but breaks the property on {_params(scenario, ex.params_index)}: "
            f"{_rows(ex.violations)}"
        )
        witness = _witness(scenario, ex, ex.violations)
        return CaseProof(run.app, run.case_id, run.expected, Proof.FAILED, detail, witness)
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
            ex = run.executions[mismatch]
            witness = Witness(
                mismatch,
                dict(scenario.parameters[mismatch]),
                rows=(
                    {
                        "this case": ex.compared,
                        reference.case_id: reference.executions[mismatch].compared,
                    },
                ),
                compared_with=reference.case_id,
            )
            proofs.append(
                CaseProof(run.app, run.case_id, "bad", Proof.PROVEN, why, witness, run.rule)
            )
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
