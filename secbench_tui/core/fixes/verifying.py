"""Verify fixes (`--task fix`): each one run as a good case of its bad case's scenario, on
verify's machinery, and compared with the scenario's compliant twins.

Per app: the fixtures in a fresh database (`runner.app_session`, the sandbox of `--verify`);
per scenario: every compliant twin (good case) run twice on the scenario's parameter sets with
the tables' state read back, so that the values a twin does not reproduce are known and left
out (the rewrite gate's comparison, `core.rewrites.equivalence`); then per fix:

- the fix with the scenario's `# Property`: **secure** when no parameter set yields a row;
- the fix with the state read back: **functional** when on every parameter set it agrees with
  its nearest twin (the good case it changes the fewest lines of), or, where the twins differ
  from each other on that set, with any one of them;
- **proven**: both. An error is never a proof: a fix that does not parse, that the sandbox
  refuses (transaction or session control, a privilege the case role lacks) or that fails on
  a parameter set ends there, with the reason, and the next fix runs.

A fix runs with its bad case's identity (its scenario, its `# Run NN` block); a Python fix
through the suite's harness in the child process, as `--verify` runs a case.
"""

from __future__ import annotations

import ast
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from secbench_tui.core.fixes.models import Failing, FixOutcome, FixVerdict
from secbench_tui.core.models import Case
from secbench_tui.core.rewrites import equivalence as eq
from secbench_tui.core.suites.twins import Twin, changed_lines, nearest
from secbench_tui.core.verify.data import AppData, Scenario, load_app_data, scenario_of
from secbench_tui.core.verify.deadline import Limits, Watchdog
from secbench_tui.core.verify.execution import Execution
from secbench_tui.core.verify.judge import WITNESS_ROWS
from secbench_tui.core.verify.runner import Executor, Unverifiable, app_session
from secbench_tui.core.verify.sandbox import sandbox_roles
from secbench_tui.core.verify.server import postgres
from secbench_tui.core.verify.stopping import Stop

Progress = Callable[["FixJob", FixVerdict], None]


@dataclass(frozen=True)
class FixJob:
    """A fix to verify: the bad case as it was asked, and the code the model gave."""

    case: Case
    code: str


@dataclass
class FixReport:
    engine: str = ""
    verdicts: list[FixVerdict] = field(default_factory=list)  # in the jobs' order
    seconds: float = 0.0


@dataclass(frozen=True)
class _Twins:
    """A scenario's compliant twins as every fix of it is compared with: each twin's
    baselines (what it gave on each set, the values it does not reproduce) and, per set,
    whether the twins differ from each other there."""

    cases: tuple[Case, ...]
    baselines: dict[str, tuple[eq.Baseline, ...]]
    ordered: dict[str, bool]
    differ: tuple[bool, ...]


# What the sandbox says when it will not run a case's code (`core.verify.sql`, the runner):
# refused, not failed.
_REFUSALS = (
    "which case code may not use",
    "may not control the transaction or session",
    "outlived its transaction",
    "ended verify's transaction",
)
_PERMISSION = "42501:"  # insufficient_privilege raised by the server, not by the case
_UNPARSED = "does not parse"


def _failure(error: str) -> FixOutcome:
    if _UNPARSED in error:
        return FixOutcome.UNPARSED
    if error.startswith(_PERMISSION) or any(words in error for words in _REFUSALS):
        return FixOutcome.REFUSED
    return FixOutcome.NOT_RUN


def _errored(executions: Sequence[Execution]) -> FixVerdict | None:
    for ex in executions:
        if ex.error is not None:
            where = f"parameter set {ex.params_index + 1}"
            return FixVerdict(_failure(ex.error), f"{where}: {ex.error}")
    return None


def _python_unparsed(code: str) -> str | None:
    """Why a Python fix is no Python (None when it parses)."""
    try:
        ast.parse(code)
    except SyntaxError as exc:
        return f"does not parse as Python: {exc.msg} (line {exc.lineno})"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"does not parse as Python: {type(exc).__name__}"
    return None


def _twins(execute: Executor, state: Scenario, labelled: Scenario, cases: Sequence[Case]) -> _Twins:
    baselines: dict[str, tuple[eq.Baseline, ...]] = {}
    ordered: dict[str, bool] = {}
    for case in cases:
        ordered[case.case_id] = eq.ordered(case)
        first, again = execute(case, state), execute(case, state)
        baselines[case.case_id] = eq.safe_baselines(first, again, labelled, ordered[case.case_id])
    sets = len(labelled.parameters)
    differ = tuple(_twins_differ(baselines, ordered, i) for i in range(sets))
    return _Twins(tuple(cases), baselines, ordered, differ)


def _twins_differ(
    baselines: dict[str, tuple[eq.Baseline, ...]], ordered: dict[str, bool], i: int
) -> bool:
    usable = [(k, b[i]) for k, b in baselines.items() if b[i].unusable is None]
    for n, (key, a) in enumerate(usable):
        for _, b in usable[n + 1 :]:
            masked = {
                t: a.masked.get(t, set()) | b.masked.get(t, set()) for t in (*a.masked, *b.masked)
            }
            if eq.safe_difference(a.first, b.first, masked, ordered[key]) is not None:
                return True
    return False


def _secure(executions: Sequence[Execution], scenario: Scenario) -> Failing | None:
    """The first parameter set on which the property returns rows (None: secure)."""
    for ex in executions:
        if ex.violations:
            return Failing(
                ex.params_index,
                dict(scenario.parameters[ex.params_index]),
                f"the property returns {len(ex.violations)} row(s)",
                violations=tuple(ex.violations[:WITNESS_ROWS]),
                rows=tuple(ex.rows[:WITNESS_ROWS]),
            )
    return None


def _functional(
    ours: Sequence[Execution], twins: _Twins, twin: Case, scenario: Scenario
) -> tuple[Failing | None, list[str]]:
    """The first parameter set on which the fix agrees with no twin it may agree with (None:
    functional), and the sets left out because no twin reproduces itself there."""
    notes: list[str] = []
    order = [twin, *(c for c in twins.cases if c.case_id != twin.case_id)]
    for i, ex in enumerate(ours):
        allowed = order if twins.differ[i] else order[:1]
        usable = [c for c in allowed if twins.baselines[c.case_id][i].unusable is None]
        if not usable:
            twin_id = allowed[0].case_id
            notes.append(f"parameter set {i + 1} not compared: {twin_id} does not reproduce itself")
            continue
        whys = []
        for case in usable:
            base = twins.baselines[case.case_id][i]
            why = eq.safe_difference(base.first, ex, base.masked, twins.ordered[case.case_id])
            if why is None:
                break
            whys.append((case, base, why))
        else:
            case, base, why = whys[0]
            return (
                Failing(
                    i,
                    dict(scenario.parameters[i]),
                    f"{why} (its twin {case.case_id})",
                    rows=tuple(ex.rows[:WITNESS_ROWS]),
                    twin_rows=tuple(base.first.rows[:WITNESS_ROWS]),
                ),
                notes,
            )
    return None, notes


_OUTCOMES = {
    (True, True): FixOutcome.PROVEN,
    (True, False): FixOutcome.SECURE_BROKEN,
    (False, True): FixOutcome.FUNCTIONAL_INSECURE,
    (False, False): FixOutcome.INSECURE,
}


def _judge(
    job: FixJob,
    execute: Executor,
    labelled: Scenario,
    state: Scenario,
    twins: _Twins,
    python: bool,
) -> FixVerdict:
    twin = nearest(job.code, [Twin(c.case_id, c.code) for c in twins.cases])
    assert twin is not None  # a scenario without twins is not verifiable
    size = changed_lines(job.case.code, job.code)
    if python and (why := _python_unparsed(job.code)) is not None:
        return FixVerdict(FixOutcome.UNPARSED, why, twin=twin.case_id, change_lines=size)
    fixed = replace(job.case, code=job.code)
    checked = execute(fixed, labelled) if labelled.property_sql else ()
    stated = execute(fixed, state)
    failed = _errored([*checked, *stated])
    if failed is not None:
        return replace(failed, twin=twin.case_id, change_lines=size)
    twin_case = next(c for c in twins.cases if c.case_id == twin.case_id)
    broken, notes = _functional(stated, twins, twin_case, labelled)
    insecure = _secure(checked, labelled) if labelled.property_sql else broken
    secure, functional = insecure is None, broken is None
    outcome = _OUTCOMES[(secure, functional)]
    reasons = []
    if insecure is not None:
        reasons.append(f"insecure on parameter set {insecure.params_index + 1}: {insecure.why}")
    if broken is not None:
        reasons.append(f"broken on parameter set {broken.params_index + 1}: {broken.why}")
    return FixVerdict(
        outcome,
        "; ".join(reasons),
        secure,
        functional,
        twin=twin.case_id,
        change_lines=size,
        insecure=insecure if labelled.property_sql else None,
        broken=broken,
        notes=tuple(notes),
    )


def _not_verifiable(job: FixJob, why: str) -> FixVerdict:
    return FixVerdict(
        FixOutcome.NOT_VERIFIABLE, why, change_lines=changed_lines(job.case.code, job.code)
    )


def _prove_app(
    execute: Executor,
    db_tables: list[str],
    data: AppData,
    groups: dict[str, list[tuple[int, FixJob]]],
    goods: dict[str, list[Case]],
    folder: Path,
    decide: Callable[[int, FixJob, FixVerdict], None],
) -> None:
    python = data.harness is not None
    for name, group in groups.items():
        labelled, state = eq.scenario_pair(data.scenarios[name], folder, db_tables, python)
        twins = _twins(execute, state, labelled, goods[name])
        for i, job in group:
            decide(i, job, _judge(job, execute, labelled, state, twins, python))


def verify_fixes(
    root: Path,
    jobs: Sequence[FixJob],
    pg_url: str | None = None,
    limits: Limits | None = None,
    progress: Progress | None = None,
    stop: Stop | None = None,
) -> FixReport:
    """Every fix verified, in order. Raises ServerError when no PostgreSQL is at hand and
    Stopped on a stop (whatever it made is removed on the way out)."""
    from secbench_tui.core.suites.markdown import load_markdown_suite

    started = time.monotonic()
    report = FixReport()
    verdicts: dict[int, FixVerdict] = {}

    def decide(i: int, job: FixJob, verdict: FixVerdict) -> None:
        verdicts[i] = verdict
        if progress is not None:
            progress(job, verdict)

    plans: dict[
        str, tuple[AppData, dict[str, list[tuple[int, FixJob]]], dict[str, list[Case]]]
    ] = {}
    for app in sorted({j.case.app for j in jobs}):
        data = load_app_data(app, root / app)[0]
        suite = load_markdown_suite(root, [app]) if (root / app).is_dir() else None
        goods: dict[str, list[Case]] = {}
        for case in suite.cases if suite else []:
            if case.expected == "good" and (name := scenario_of(case.case_id)):
                goods.setdefault(name, []).append(case)
        groups: dict[str, list[tuple[int, FixJob]]] = {}
        for i, job in enumerate(jobs):
            if job.case.app != app:
                continue
            name = scenario_of(job.case.case_id)
            if name is None or name not in data.scenarios or data.fixtures is None:
                decide(i, job, _not_verifiable(job, "its scenario has no verification data"))
            elif not goods.get(name):
                decide(i, job, _not_verifiable(job, "its scenario has no compliant twin"))
            else:
                groups.setdefault(name, []).append((i, job))
        if groups:
            plans[app] = (data, groups, goods)
    if plans:
        with postgres(pg_url, stop) as (uri, engine), sandbox_roles(uri) as roles:
            report.engine = engine
            watchdog = Watchdog(uri, limits or Limits(), stop)
            for data, groups, goods in plans.values():
                try:
                    with (
                        app_session(uri, roles, watchdog, data) as (db, execute),
                        tempfile.TemporaryDirectory(prefix="secbench-fixes-") as tmp,
                    ):
                        tables = eq.table_names(db)
                        _prove_app(execute, tables, data, groups, goods, Path(tmp), decide)
                except Unverifiable as exc:
                    for group in groups.values():
                        for i, job in group:
                            if i not in verdicts:
                                decide(i, job, _not_verifiable(job, str(exc)))
    report.verdicts = [verdicts[i] for i in range(len(jobs))]
    report.seconds = time.monotonic() - started
    return report
