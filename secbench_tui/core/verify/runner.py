"""Verify a markdown suite: run each case that has verification data and judge its label.

Per app: cases without a scenario file are not verifiable; the fixtures load into a database
of the app's own; then each scenario's cases run on every parameter set (SQL on one
connection, or a Python app's handlers through its harness) and `judge` decides. Proofs are
handed to `progress` as they are decided, scenario by scenario.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from fnmatch import fnmatchcase
from pathlib import Path

import psycopg

from secbench_tui.core.models import Case
from secbench_tui.core.suites.markdown import SuiteError, load_markdown_suite
from secbench_tui.core.verify import sql
from secbench_tui.core.verify.data import AppData, Scenario, load_app_data, scenario_of
from secbench_tui.core.verify.deadline import DeadlineExceeded, Limits, Watchdog
from secbench_tui.core.verify.execution import Execution
from secbench_tui.core.verify.judge import CaseRun, case_rule, judge
from secbench_tui.core.verify.models import CaseProof, Proof, VerifyReport
from secbench_tui.core.verify.mutants import Mutation
from secbench_tui.core.verify.python_child import CaseJob, ChildError, PythonChild
from secbench_tui.core.verify.sandbox import AppDatabase, Roles, sandbox_roles
from secbench_tui.core.verify.server import ServerError, postgres
from secbench_tui.core.verify.stopping import Stop

Progress = Callable[[CaseProof], None]
# Runs one case on every parameter set of its scenario.
Executor = Callable[[Case, Scenario], tuple[Execution, ...]]


class Unverifiable(Exception):
    """Every case of the app gets this reason, with `proof` (failed or not verifiable)."""

    def __init__(self, proof: Proof, reason: str) -> None:
        super().__init__(reason)
        self.proof = proof


def _proofs(cases: Sequence[Case], proof: Proof, reason: str) -> list[CaseProof]:
    return [CaseProof(c.app, c.case_id, c.expected, proof, reason) for c in cases]


def _by_scenario(cases: Sequence[Case], data: AppData) -> tuple[dict[str, list[Case]], list[Case]]:
    """Cases grouped by their scenario, and the cases without verification data."""
    groups: dict[str, list[Case]] = {}
    missing: list[Case] = []
    for case in cases:
        name = scenario_of(case.case_id)
        if name is not None and name in data.scenarios:
            groups.setdefault(name, []).append(case)
        else:
            missing.append(case)
    return groups, missing


@contextmanager
def _sql_executor(db: AppDatabase, fixtures: str) -> Iterator[Executor]:
    session = sql.CaseSession(db, fixtures, db.watchdog)

    def execute(case: Case, scenario: Scenario) -> tuple[Execution, ...]:
        return tuple(
            sql.run_case(session, case.code, scenario, i, case.case_id)
            for i in range(len(scenario.parameters))
        )

    try:
        yield execute
    finally:
        session.close()


@contextmanager
def _python_executor(db: AppDatabase, fixtures: str, harness: Path) -> Iterator[Executor]:
    limits = db.watchdog.limits
    child = PythonChild(
        harness, limits.deadline, limits.grace, limits.rows, limits.startup, db.watchdog.stop
    )
    try:
        child.start()
    except ChildError as exc:
        child.close()
        if exc.missing:
            reason = f"the Python app needs the verify extra (fastapi, sqlalchemy): {exc}"
            raise Unverifiable(Proof.NOT_VERIFIABLE, reason) from exc
        raise Unverifiable(Proof.FAILED, str(exc)) from exc
    before = db.fingerprint()

    def execute(case: Case, scenario: Scenario) -> tuple[Execution, ...]:
        nonlocal before
        job: CaseJob = {
            "conninfo": db.case_conninfo,
            "token": db.token,
            "case_id": case.case_id,
            "code": case.code,
            "scenario": str(scenario.path.resolve()),  # the child runs in another folder
            "sequences": [[oid, value, int(called)] for oid, value, called in db.sequences],
            "parameters": list(scenario.parameters),
            "added_rows": list(scenario.rows),
        }
        runs = child.run(job, len(scenario.parameters))
        db.lock_out(db.roles.case)  # a process the case left: no session, no lock, no login
        try:
            changed = db.fingerprint() != before
            reason = "the case's changes outlived its transaction (a COMMIT in the handler)"
        except psycopg.Error as exc:  # a lock held past the deadline, by a process of its own
            changed = True
            reason = (
                f"verify's check of the tables after the case did not finish within the "
                f"{limits.deadline:g} s deadline ({exc.diag.message_primary or exc})"
            )
        if changed:  # rows (or objects) outlived the case
            runs = [Execution(r.params_index, error=reason) for r in runs]
            db.drop()
            db.create()
            sql.load_fixtures(db, fixtures)
            before = db.fingerprint()
        return tuple(runs)

    try:
        yield execute
    finally:
        child.close()


def _run_groups(
    execute: Executor,
    data: AppData,
    groups: dict[str, list[Case]],
    emit: Progress,
    mutation: Mutation | None = None,
) -> None:
    for name, group in groups.items():
        scenario = data.scenarios[name]
        runs = [
            CaseRun(c.app, c.case_id, c.expected, execute(c, scenario), case_rule(c)) for c in group
        ]
        for proof in judge(runs, scenario):
            emit(proof)
        if mutation is not None:
            mutation.check(execute, scenario, group, runs)


def _verify_app(
    uri: str,
    roles: Roles,
    watchdog: Watchdog,
    data: AppData,
    cases: Sequence[Case],
    emit: Progress,
    mutation: Mutation | None,
) -> None:
    groups, missing = _by_scenario(cases, data)
    for case in missing:
        name = scenario_of(case.case_id)
        where = f"verify/{name}.md" if name else "a <scenario>-NN-good|bad.md file name"
        for proof in _proofs([case], Proof.NOT_VERIFIABLE, f"no verification data ({where})"):
            emit(proof)
    waiting = [c for g in groups.values() for c in g]
    if not groups:
        return
    try:
        with app_session(uri, roles, watchdog, data) as (_db, execute):
            _run_groups(execute, data, groups, emit, mutation)
    except Unverifiable as exc:
        for proof in _proofs(waiting, exc.proof, str(exc)):
            emit(proof)


@contextmanager
def app_session(
    uri: str, roles: Roles, watchdog: Watchdog, data: AppData
) -> Iterator[tuple[AppDatabase, Executor]]:
    """The app's database with its fixtures loaded, and an executor that runs a case of it on
    every parameter set of a scenario; the database is dropped on exit. Raises Unverifiable
    (no fixtures, fixtures that do not load, a harness that does not start) and ServerError."""
    db = AppDatabase(uri, roles, watchdog)
    try:
        if data.fixtures is None:
            reason = "no fixtures (verify/fixtures.sql with the schema and seed rows)"
            raise Unverifiable(Proof.NOT_VERIFIABLE, reason)
        try:
            fixtures = data.fixtures.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise Unverifiable(Proof.FAILED, f"{data.fixtures} cannot be read: {exc}") from exc
        try:
            db.create()
        except psycopg.Error as exc:
            raise ServerError(f"cannot create a database to verify {data.name}: {exc}") from exc
        try:
            sql.load_fixtures(db, fixtures)
        except (psycopg.Error, sql.CodeError, DeadlineExceeded) as exc:
            raise Unverifiable(Proof.FAILED, f"{data.fixtures} does not load: {exc}") from exc
        executor = (
            _python_executor(db, fixtures, data.harness)
            if data.harness is not None
            else _sql_executor(db, fixtures)
        )
        with executor as execute:
            yield db, execute
    finally:
        db.drop()


def verify_suite(
    root: Path,
    apps: Sequence[str] | None = None,
    pg_url: str | None = None,
    progress: Progress | None = None,
    limits: Limits | None = None,
    mutants: bool = False,
    only: Sequence[str] = (),
    stop: Stop | None = None,
) -> VerifyReport:
    """Raises SuiteError for an unusable suite and ServerError when no PostgreSQL is at hand.
    With `mutants`, every good case's mutants are verified too (`report.mutants`). With `only`
    (`--filter` globs), only the cases whose id matches one.

    Whatever happens (an error, KeyboardInterrupt, a SIGTERM turned into an exception, a
    `stop`, which raises Stopped), the databases and roles it made are dropped and the
    embedded server is stopped and removed."""
    started = time.monotonic()
    mutation = Mutation() if mutants else None
    suite = load_markdown_suite(root, apps)
    picked = [c for c in suite.cases if not only or any(fnmatchcase(c.case_id, p) for p in only)]
    if not picked:
        example = suite.cases[0].case_id if suite.cases else "app/case.md"
        raise SuiteError(
            f"--filter {' '.join(only)}: matches no case in {root}; case ids look like {example}"
        )
    with postgres(pg_url, stop) as (uri, engine), sandbox_roles(uri) as roles:
        watchdog = Watchdog(uri, limits or Limits(), stop)
        report = VerifyReport(engine)

        def emit(proof: CaseProof) -> None:
            report.cases.append(proof)
            if progress is not None:
                progress(proof)

        for app in suite.apps:
            data, problems = load_app_data(app.name, app.root)
            cases = [c for c in picked if c.app == app.name]
            if not cases:
                continue
            for problem in problems:  # a scenario file that cannot be used fails its cases
                broken = [c for c in cases if scenario_of(c.case_id) == problem.path.stem]
                for proof in _proofs(broken, Proof.FAILED, str(problem)):
                    emit(proof)
                cases = [c for c in cases if c not in broken]
            _verify_app(uri, roles, watchdog, data, cases, emit, mutation)
    report.seconds = time.monotonic() - started
    if mutation is not None:
        report.mutants = mutation.results
        report.mutants_seconds = mutation.seconds
        report.ignored_declarations = mutation.ignored
        report.seconds -= mutation.seconds
    return report
