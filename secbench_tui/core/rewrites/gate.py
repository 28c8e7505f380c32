"""The equivalence gate: a variant is sent only once execution shows it means what its
original means.

On the verify machinery (the app's fixtures in a fresh PostgreSQL database, each of its
scenario's parameter sets in a transaction that is rolled back), for every parameter set the
variant must give what its original gives: the same refusal, HTTP status, row count and
result rows (in order where the original orders them, else as a multiset), and the same
state of every table afterwards (for a Python app that includes the response and the files
written). The original runs twice: a parameter set on which it does not reproduce itself
proves nothing, and its variants are dropped (the comparison is `equivalence`'s, which the fix
task shares). Then the variant is judged with its original's label, beside the scenario's
other cases, exactly as `--verify` judges a case: it must be proven too.

A decision is kept (`proofs.ProofStore`) under the hash of everything it depended on, and read
back instead of proving again; no server is started when every variant has a kept decision.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from secbench_tui.core.models import Case
from secbench_tui.core.rewrites import equivalence as eq
from secbench_tui.core.rewrites.progress import Proving, Tally
from secbench_tui.core.rewrites.proofs import KeptProof, ProofStore, app_digest, proof_key
from secbench_tui.core.rewrites.relations import Variant
from secbench_tui.core.verify.data import AppData, Scenario, load_app_data, scenario_of
from secbench_tui.core.verify.deadline import Limits, Watchdog
from secbench_tui.core.verify.execution import Execution
from secbench_tui.core.verify.judge import CaseRun, case_rule, judge
from secbench_tui.core.verify.models import Proof
from secbench_tui.core.verify.runner import Executor, Unverifiable, app_session
from secbench_tui.core.verify.sandbox import Roles, sandbox_roles
from secbench_tui.core.verify.server import postgres
from secbench_tui.core.verify.stopping import Stop


@dataclass(frozen=True)
class Dropped:
    variant: Variant
    reason: str


@dataclass
class GateReport:
    """What the gate decided: variants proven, dropped (with why) and sent unproven."""

    engine: str = ""
    proven: list[Variant] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    unproven: list[Variant] = field(default_factory=list)
    seconds: float = 0.0
    kept: int = 0  # decisions read back from earlier proofs, not proved again
    decided: list[tuple[Variant, str | None]] = field(default_factory=list)  # proved here


def _as_run(case: Case, code: str) -> Case:
    """The original's identity (its scenario and `# Run NN` block) around other code."""
    return replace(case, code=code)


def _prove_scenario(
    execute: Executor,
    scenario: Scenario,
    state: Scenario,
    originals: Sequence[Case],
    variants: Sequence[Variant],
    report: GateReport,
    tally: Tally,
) -> None:
    labelled: dict[str, tuple[Execution, ...]] = {}
    compared: dict[str, tuple[eq.Baseline, ...]] = {}
    needed = {v.original.case_id for v in variants}
    for case in originals:
        first = execute(case, state)
        if case.case_id in needed:
            again = execute(case, state)
            # (what it left too deep to read: its variants prove nothing)
            compared[case.case_id] = eq.safe_baselines(first, again, scenario, eq.ordered(case))
        labelled[case.case_id] = execute(case, scenario) if scenario.property_sql else first
    runs = [
        CaseRun(c.app, c.case_id, c.expected, labelled[c.case_id], case_rule(c)) for c in originals
    ]
    for variant in variants:
        original = variant.original
        mine = execute(_as_run(original, variant.code), state)
        why = eq.compared(compared[original.case_id], mine, scenario, eq.ordered(original))
        if why is None:
            labelled_run = (
                execute(_as_run(original, variant.code), scenario)
                if scenario.property_sql
                else mine
            )
            run = CaseRun(
                original.app, variant.case_id, original.expected, labelled_run, case_rule(original)
            )
            proof = judge([*runs, run], scenario)[-1]
            if proof.proof is not Proof.PROVEN:
                why = f"does not verify as {original.expected}: {proof.detail or proof.proof.value}"
        if why is None:
            report.proven.append(variant)
        else:
            report.dropped.append(Dropped(variant, why))
        report.decided.append((variant, why))
        tally.tick()


def _prove_app(
    server: tuple[str, Roles, Watchdog],
    data: AppData,
    cases: Sequence[Case],
    variants: Sequence[Variant],
    report: GateReport,
    keep_unproven: bool,
    tally: Tally,
) -> None:
    by_scenario: dict[str, list[Variant]] = {}
    for variant in variants:
        name = _scenario_name(data, variant)
        if name is None:
            _unverifiable(variant, NO_DATA, report, keep_unproven)
            continue
        by_scenario.setdefault(name, []).append(variant)
    if not by_scenario:
        return
    python = data.harness is not None
    try:
        with (
            app_session(*server, data) as (db, execute),
            tempfile.TemporaryDirectory(prefix="secbench-rewrites-") as tmp,
        ):
            tables = eq.table_names(db)
            for name, group in by_scenario.items():
                scenario, state = eq.scenario_pair(data.scenarios[name], Path(tmp), tables, python)
                originals = [c for c in cases if scenario_of(c.case_id) == name]
                _prove_scenario(execute, scenario, state, originals, group, report, tally)
    except Unverifiable as exc:
        decided = {id(v) for v in report.proven} | {id(d.variant) for d in report.dropped}
        for group in by_scenario.values():
            for variant in group:
                if id(variant) not in decided:
                    _unverifiable(variant, str(exc), report, keep_unproven)


NO_DATA = "its case has no verification data"


def _scenario_name(data: AppData, variant: Variant) -> str | None:
    """The verification scenario that can prove `variant`, if its app has one for it."""
    name = scenario_of(variant.original.case_id)
    if name is None or name not in data.scenarios or data.fixtures is None:
        return None
    return name


def _unverifiable(variant: Variant, why: str, report: GateReport, keep: bool) -> None:
    if keep:
        report.unproven.append(variant)
    else:
        report.dropped.append(Dropped(variant, f"not proven: {why} (--unproven-rewrites sends it)"))


def prove_variants(
    root: Path,
    cases: Sequence[Case],
    variants: Sequence[Variant],
    pg_url: str | None = None,
    keep_unproven: bool = False,
    progress: Callable[[Proving], None] | None = None,
    stop: Stop | None = None,
    proofs: ProofStore | None = None,
) -> GateReport:
    """Prove every variant against its original on the suite at `root`, reading back the
    decisions `proofs` keeps and keeping the new ones.

    Raises ServerError (from the verify machinery) when no PostgreSQL is at hand; the caller
    decides whether unproven variants may go (`--unproven-rewrites`). Raises Stopped once
    `stop` is set (Ctrl+C, SIGTERM, the app's stop): the statement in flight ends at once,
    and the databases, roles and embedded server are removed on the way out.
    """
    started = time.monotonic()
    report = GateReport()
    apps = {
        app: load_app_data(app, root / app)[0] for app in sorted({v.original.app for v in variants})
    }
    keys: dict[int, str] = {}
    if proofs is not None:
        variants = _read_back(root, apps, cases, variants, proofs, keys, report)
    if not any(_scenario_name(apps[v.original.app], v) for v in variants):
        for variant in variants:  # nothing to prove anything with: no server is started
            _unverifiable(variant, NO_DATA, report, keep_unproven)
        report.seconds = time.monotonic() - started
        return report
    tally = Tally(sum(1 for v in variants if _scenario_name(apps[v.original.app], v)), progress)
    try:
        with postgres(pg_url, stop) as (uri, engine), sandbox_roles(uri) as roles:
            report.engine = engine
            server = (uri, roles, Watchdog(uri, Limits(), stop))
            for app, data in apps.items():
                mine = [v for v in variants if v.original.app == app]
                app_cases = [c for c in cases if c.app == app]
                _prove_app(server, data, app_cases, mine, report, keep_unproven, tally)
    finally:  # what was decided before a stop is kept too
        if proofs is not None:
            _keep(report, keys, proofs)
    report.seconds = time.monotonic() - started
    return report


def _read_back(
    root: Path,
    apps: dict[str, AppData],
    cases: Sequence[Case],
    variants: Sequence[Variant],
    proofs: ProofStore,
    keys: dict[int, str],
    report: GateReport,
) -> list[Variant]:
    """The variants with no kept decision (their keys in `keys`); the others decided in
    `report` as they were."""
    digests = {app: app_digest(root / app) for app in apps}
    fresh = []
    for variant in variants:
        if _scenario_name(apps[variant.original.app], variant) is None:
            fresh.append(variant)
            continue
        key = proof_key(variant, cases, digests[variant.original.app])
        kept = proofs.get(key)
        if kept is None:
            keys[id(variant)] = key
            fresh.append(variant)
            continue
        report.kept += 1
        report.engine = report.engine or kept.engine
        if kept.decision == "proven":
            report.proven.append(variant)
        else:
            report.dropped.append(Dropped(variant, kept.reason))
    return fresh


# A refusal for want of time says nothing of the variant on another, less loaded day.
_TIMED_OUT = "s deadline"


def _keep(report: GateReport, keys: dict[int, str], proofs: ProofStore) -> None:
    engine = report.engine
    for variant, why in report.decided:
        key = keys.get(id(variant))
        if key is not None and (why is None or _TIMED_OUT not in why):
            proven = why is None
            proofs.put(key, KeptProof("proven" if proven else "refused", why or "", engine))


def unproven_report(variants: Sequence[Variant], why: str, keep: bool) -> GateReport:
    """Every variant unproven (kept, with `--unproven-rewrites`) or dropped, for one reason."""
    report = GateReport()
    for variant in variants:
        _unverifiable(variant, why, report, keep)
    return report
