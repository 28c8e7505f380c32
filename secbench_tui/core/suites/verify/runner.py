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
from pathlib import Path

import psycopg

from secbench_tui.core.models import Case
from secbench_tui.core.suites.markdown import load_markdown_suite
from secbench_tui.core.suites.verify import python_app, sql
from secbench_tui.core.suites.verify.data import AppData, Scenario, load_app_data, scenario_of
from secbench_tui.core.suites.verify.execution import Execution
from secbench_tui.core.suites.verify.judge import CaseRun, case_rule, judge
from secbench_tui.core.suites.verify.models import CaseProof, Proof, VerifyReport
from secbench_tui.core.suites.verify.mutants import Mutation
from secbench_tui.core.suites.verify.server import app_database, postgres

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
def _sql_executor(conninfo: str) -> Iterator[Executor]:
    with psycopg.connect(conninfo) as conn:

        def execute(case: Case, scenario: Scenario) -> tuple[Execution, ...]:
            return tuple(
                sql.run_case(conn, case.code, scenario, i, case.case_id)
                for i in range(len(scenario.parameters))
            )

        yield execute


@contextmanager
def _python_executor(conninfo: str, harness_path: Path) -> Iterator[Executor]:
    try:
        from sqlalchemy import create_engine
        from sqlalchemy.pool import StaticPool

        harness = python_app.load_harness(harness_path)
    except ImportError as exc:
        reason = f"the Python app needs the verify extra (fastapi, sqlalchemy): {exc}"
        raise Unverifiable(Proof.NOT_VERIFIABLE, reason) from exc
    except Exception as exc:  # the suite's harness is suite code: its failure is data
        raise Unverifiable(Proof.FAILED, f"{harness_path} does not load: {exc}") from exc
    engine = create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(conninfo), poolclass=StaticPool
    )

    def execute(case: Case, scenario: Scenario) -> tuple[Execution, ...]:
        handler = python_app.HandlerApp(harness, case.code, case.case_id)
        try:
            return tuple(
                python_app.run_case(engine, handler, scenario, i)
                for i in range(len(scenario.parameters))
            )
        finally:
            handler.close()

    try:
        yield execute
    finally:
        engine.dispose()


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
    uri: str, data: AppData, cases: Sequence[Case], emit: Progress, mutation: Mutation | None
) -> None:
    groups, missing = _by_scenario(cases, data)
    for case in missing:
        name = scenario_of(case.case_id)
        where = f"verify/{name}.md" if name else "a <scenario>-NN-good|bad.md file name"
        for proof in _proofs([case], Proof.NOT_VERIFIABLE, f"no verification data ({where})"):
            emit(proof)
    waiting = [c for g in groups.values() for c in g]
    try:
        if not groups:
            return
        if data.fixtures is None:
            reason = "no fixtures (verify/fixtures.sql with the schema and seed rows)"
            raise Unverifiable(Proof.NOT_VERIFIABLE, reason)
        with app_database(uri, data.name) as conninfo:
            try:
                with psycopg.connect(conninfo) as conn:
                    sql.load_fixtures(conn, data.fixtures.read_text(encoding="utf-8"))
            except (psycopg.Error, OSError, UnicodeDecodeError) as exc:
                raise Unverifiable(Proof.FAILED, f"{data.fixtures} does not load: {exc}") from exc
            executor = (
                _python_executor(conninfo, data.harness)
                if data.harness is not None
                else _sql_executor(conninfo)
            )
            with executor as execute:
                _run_groups(execute, data, groups, emit, mutation)
    except Unverifiable as exc:
        for proof in _proofs(waiting, exc.proof, str(exc)):
            emit(proof)


def verify_suite(
    root: Path,
    apps: Sequence[str] | None = None,
    pg_url: str | None = None,
    progress: Progress | None = None,
    mutants: bool = False,
) -> VerifyReport:
    """Raises SuiteError for an unusable suite and ServerError when no PostgreSQL is at hand.
    With `mutants`, every good case's mutants are verified too (`report.mutants`)."""
    started = time.monotonic()
    mutation = Mutation() if mutants else None
    suite = load_markdown_suite(root, apps)
    with postgres(pg_url) as (uri, engine):
        report = VerifyReport(engine)

        def emit(proof: CaseProof) -> None:
            report.cases.append(proof)
            if progress is not None:
                progress(proof)

        for app in suite.apps:
            data, problems = load_app_data(app.name, app.root)
            cases = [c for c in suite.cases if c.app == app.name]
            for problem in problems:  # a scenario file that cannot be used fails its cases
                broken = [c for c in cases if scenario_of(c.case_id) == problem.path.stem]
                for proof in _proofs(broken, Proof.FAILED, str(problem)):
                    emit(proof)
                cases = [c for c in cases if c not in broken]
            _verify_app(uri, data, cases, emit, mutation)
    report.seconds = time.monotonic() - started
    if mutation is not None:
        report.mutants = mutation.results
        report.mutants_seconds = mutation.seconds
        report.seconds -= mutation.seconds
    return report
