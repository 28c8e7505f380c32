"""`secbench-tui fix`: what a model is asked to repair a case `--verify` fails, and the proof
of its proposal as the case's label before anything is written.

A good case that breaks its property is asked back compliant: the SPEC, the case's code, and
the parameter set with the rows that break it. A bad case that no parameter set breaks is
asked anew: the SPEC, the rule it is written to break, its nearest compliant twin and the
scenario's parameter sets; the proposal must be a minimal change of the twin that breaks
exactly that rule on the scenario's data. A proposal is proven when `--verify` would prove
it as the case's label (beside the scenario's other cases, with the case's own `# Run NN`), a
bad one breaking no rule but its own. Python cases are run through the suite's harness in
the child process, as `--verify` runs them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from secbench_tui.core.models import Case
from secbench_tui.core.suites.twins import Twin, changed_lines, nearest
from secbench_tui.core.verify.data import AppData, Scenario, load_app_data, scenario_of
from secbench_tui.core.verify.deadline import Limits, Watchdog
from secbench_tui.core.verify.judge import CaseRun, case_rule, judge, proof_text, row_rule
from secbench_tui.core.verify.models import CaseProof, Proof
from secbench_tui.core.verify.runner import Executor, Unverifiable, app_session
from secbench_tui.core.verify.sandbox import sandbox_roles
from secbench_tui.core.verify.server import postgres
from secbench_tui.core.verify.stopping import Stop

INSTRUCTIONS_GOOD = """\
You are repairing a test case of a security benchmark. The case below is labelled good: it
must comply with every security rule of the application specification above. Run against the
application's database, it does not: the verification below shows the parameter set and the
rows that break a rule. Write the case's code anew so that it complies with every rule and
still does its job for a legitimate caller: change only what the rules require, keep its
parameters, columns, names, signature and language. Respond with a JSON object and nothing
else: {"explanation": "<what you changed and why>", "code": "<the whole new code>"}."""

INSTRUCTIONS_BAD = """\
You are repairing a test case of a security benchmark. The case below is labelled bad: it is
written to break rule {rule} of the application specification above, and a caller must be able
to make it do so. Run against the application's database on the parameter sets below, it
breaks no rule. Write the case's code anew: start from its compliant twin (below) and make the
smallest change that breaks rule {rule} and no other rule, so that one of the parameter sets
shows it. Keep the twin's parameters, columns, names, signature and language. Respond with a
JSON object and nothing else: {{"explanation": "<the flaw and where it is>", "code": "<the
whole new code>"}}."""


@dataclass(frozen=True)
class Repair:
    """A case `--verify` fails, and what a model needs to repair it."""

    case: Case  # as the suite holds it
    proof: CaseProof  # why verify fails it
    rule: str | None = None  # a bad case: the rule it is written to break
    twin: Twin | None = None  # a bad case: its nearest compliant twin


def repair_of(case: Case, proof: CaseProof, twins: Sequence[Twin]) -> Repair:
    rule = case_rule(case) if case.expected == "bad" else None
    twin = nearest(case.code, twins) if case.expected == "bad" else None
    return Repair(case, proof, rule, twin)


def _fenced(code: str) -> str:
    return f"```\n{code.rstrip()}\n```"


def repair_message(repair: Repair, spec_prompt: str, scenario: Scenario | None) -> str:
    """The one user message that asks for the repair."""
    case = repair.case
    parts = [spec_prompt.strip()]
    if case.expected == "good":
        parts += [
            INSTRUCTIONS_GOOD,
            f"Case {case.case_id}, labelled good:\n{_fenced(case.code)}",
            "Verification:\n" + "\n".join(proof_text(repair.proof)),
        ]
    else:
        rule = repair.rule or "(the rule its description names)"
        parts.append(INSTRUCTIONS_BAD.format(rule=rule))
        if case.description:
            parts.append(f"The case's description: {case.description}")
        parts.append(f"Case {case.case_id}, labelled bad, now:\n{_fenced(case.code)}")
        if repair.twin is not None:
            parts.append(f"Its compliant twin {repair.twin.case_id}:\n{_fenced(repair.twin.code)}")
        if scenario is not None:
            sets = "\n".join(json.dumps(p, sort_keys=True) for p in scenario.parameters)
            parts.append(f"The scenario's parameter sets (one request each):\n{sets}")
        parts.append("Verification:\n" + "\n".join(proof_text(repair.proof)))
    return "\n\n".join(parts)


@dataclass(frozen=True)
class ProposalVerdict:
    """Whether a proposal is proven as its case's label, and why not."""

    proven: bool
    reason: str = ""
    change_lines: int = 0  # lines it changes in the case as it is
    twin: str | None = None  # its nearest compliant twin
    twin_lines: int | None = None  # lines it changes in that twin


@dataclass
class ProposalReport:
    engine: str = ""
    verdicts: list[ProposalVerdict] = field(default_factory=list)
    seconds: float = 0.0


def _other_rules(run: CaseRun, rule: str | None) -> list[str]:
    """Rules other than `rule` that the property's rows name, on any parameter set."""
    if rule is None:
        return []
    named = {row_rule(r) for ex in run.executions for r in ex.violations}
    return sorted(r for r in named if r and r != rule)


def _verdict(proof: CaseProof, run: CaseRun, repair: Repair, code: str) -> ProposalVerdict:
    twin = repair.twin
    sized = ProposalVerdict(
        False,
        "",
        changed_lines(repair.case.code, code),
        twin.case_id if twin else None,
        changed_lines(twin.code, code) if twin else None,
    )
    if proof.proof is not Proof.PROVEN:
        why = proof.detail or proof.proof.value
        return replace(sized, reason=f"not proven {repair.case.expected}: {why}")
    others = _other_rules(run, repair.rule) if repair.case.expected == "bad" else []
    if proof.other_rule and not others and proof.witness is not None:
        others = [r for r in proof.witness.rules if r]
    if others:
        why = f"breaks rule {', '.join(others)}, not only rule {repair.rule}"
        return replace(sized, reason=why)
    return replace(sized, proven=True)


def verify_proposals(
    root: Path,
    proposals: Sequence[tuple[Repair, str]],
    pg_url: str | None = None,
    limits: Limits | None = None,
    progress: Callable[[Repair, ProposalVerdict], None] | None = None,
    stop: Stop | None = None,
) -> ProposalReport:
    """Each proposal proven (or not) as its case's label, in order. Raises ServerError when no
    PostgreSQL is at hand and Stopped on a stop (the databases, roles and embedded server it
    made are removed on the way out)."""
    started = time.monotonic()
    report = ProposalReport()
    verdicts: dict[int, ProposalVerdict] = {}

    def decide(i: int, repair: Repair, verdict: ProposalVerdict) -> None:
        verdicts[i] = verdict
        if progress is not None:
            progress(repair, verdict)

    with postgres(pg_url, stop) as (uri, engine), sandbox_roles(uri) as roles:
        report.engine = engine
        watchdog = Watchdog(uri, limits or Limits(), stop)
        for app in sorted({r.case.app for r, _ in proposals}):
            mine = [(i, r, c) for i, (r, c) in enumerate(proposals) if r.case.app == app]
            data = load_app_data(app, root / app)[0]
            try:
                with app_session(uri, roles, watchdog, data) as (_db, execute):
                    _prove_app(execute, root, data, mine, decide)
            except Unverifiable as exc:
                for i, repair, code in mine:
                    if i not in verdicts:
                        decide(i, repair, _unproven(repair, code, str(exc)))
    report.verdicts = [verdicts[i] for i in range(len(proposals))]
    report.seconds = time.monotonic() - started
    return report


def _unproven(repair: Repair, code: str, why: str) -> ProposalVerdict:
    return ProposalVerdict(False, why, changed_lines(repair.case.code, code))


def _prove_app(
    execute: Executor,
    root: Path,
    data: AppData,
    mine: Sequence[tuple[int, Repair, str]],
    decide: Callable[[int, Repair, ProposalVerdict], None],
) -> None:
    """The app's proposals, scenario by scenario: each judged beside the scenario's cases that
    are not being repaired, as `--verify` judges a case."""
    from secbench_tui.core.suites.markdown import load_markdown_suite

    repaired = {r.case.case_id for _, r, _ in mine}
    suite = load_markdown_suite(root, [data.name])
    for name in sorted({scenario_of(r.case.case_id) or "" for _, r, _ in mine}):
        group = [m for m in mine if scenario_of(m[1].case.case_id) == name]
        scenario = data.scenarios.get(name)
        if scenario is None:
            for i, repair, code in group:
                decide(i, repair, _unproven(repair, code, f"no usable verify/{name}.md"))
            continue
        others = [
            c for c in suite.cases if scenario_of(c.case_id) == name and c.case_id not in repaired
        ]
        runs = [
            CaseRun(c.app, c.case_id, c.expected, execute(c, scenario), case_rule(c))
            for c in others
        ]
        for i, repair, code in group:
            case = repair.case
            mine_run = execute(replace(case, code=code), scenario)
            run = CaseRun(case.app, case.case_id, case.expected, mine_run, repair.rule)
            decide(i, repair, _verdict(judge([*runs, run], scenario)[-1], run, repair, code))
