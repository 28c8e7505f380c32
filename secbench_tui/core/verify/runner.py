"""Verify a markdown suite: run each case that has verification data and judge its label."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psycopg

from secbench_tui.core.models import Case
from secbench_tui.core.suites.markdown import load_markdown_suite
from secbench_tui.core.verify import python_app, sql
from secbench_tui.core.verify.data import AppData, Scenario, load_app_data, scenario_of
from secbench_tui.core.verify.judge import CaseRun, judge
from secbench_tui.core.verify.models import CaseProof, Proof, VerifyReport
from secbench_tui.core.verify.server import app_database, postgres

Progress = Callable[[CaseProof], None]


def _not_verifiable(cases: Sequence[Case], reason: str) -> list[CaseProof]:
    return [CaseProof(c.app, c.case_id, c.expected, Proof.NOT_VERIFIABLE, reason) for c in cases]


def _failed(cases: Sequence[Case], reason: str) -> list[CaseProof]:
    return [CaseProof(c.app, c.case_id, c.expected, Proof.FAILED, reason) for c in cases]


def _by_scenario(
    cases: Sequence[Case], data: AppData
) -> tuple[dict[str, list[Case]], list[CaseProof]]:
    groups: dict[str, list[Case]] = {}
    missing: list[CaseProof] = []
    for case in cases:
        name = scenario_of(case.case_id)
        if name is None or name not in data.scenarios:
            where = f"verify/{name}.md" if name else "a <scenario>-NN-good|bad.md name"
            missing += _not_verifiable([case], f"no verification data ({where})")
        else:
            groups.setdefault(name, []).append(case)
    return groups, missing


def _run_scenario(
    execute: Callable[[Case, Scenario, int], Any], scenario: Scenario, cases: Sequence[Case]
) -> list[CaseProof]:
    runs = [
        CaseRun(
            c.app,
            c.case_id,
            c.expected,
            tuple(execute(c, scenario, i) for i in range(len(scenario.parameters))),
        )
        for c in cases
    ]
    return judge(runs, scenario)


def _verify_app(
    uri: str, data: AppData, cases: Sequence[Case], progress: Progress
) -> list[CaseProof]:
    groups, proofs = _by_scenario(cases, data)
    for proof in proofs:
        progress(proof)
    if not groups:
        return proofs
    if data.fixtures is None:
        out = _not_verifiable(
            [c for g in groups.values() for c in g],
            "no fixtures (verify/fixtures.sql with the schema and seed rows)",
        )
        for proof in out:
            progress(proof)
        return proofs + out
    with app_database(uri, data.name) as conninfo:
        try:
            with psycopg.connect(conninfo) as conn:
                sql.load_fixtures(conn, data.fixtures.read_text(encoding="utf-8"))
        except (psycopg.Error, OSError, UnicodeDecodeError) as exc:
            out = _failed(
                [c for g in groups.values() for c in g],
                f"{data.fixtures}: fixtures do not load: {exc}",
            )
            for proof in out:
                progress(proof)
            return proofs + out
        if data.harness is not None:
            proofs += _verify_python(conninfo, data, groups, progress)
        else:
            with psycopg.connect(conninfo) as conn:
                for name, group in groups.items():

                    def execute(case: Case, sc: Scenario, i: int) -> Any:
                        return sql.run_case(conn, case.code, sc, i, case.case_id)

                    out = _run_scenario(execute, data.scenarios[name], group)
                    for proof in out:
                        progress(proof)
                    proofs += out
    return proofs


def _verify_python(
    conninfo: str, data: AppData, groups: dict[str, list[Case]], progress: Progress
) -> list[CaseProof]:
    assert data.harness is not None
    try:
        from sqlalchemy import create_engine
        from sqlalchemy.pool import StaticPool

        harness = python_app.load_harness(data.harness)
    except ImportError as exc:
        reason = f"the Python app needs the verify extra (fastapi, sqlalchemy): {exc}"
        return _not_verifiable([c for g in groups.values() for c in g], reason)
    engine = create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(conninfo), poolclass=StaticPool
    )
    proofs: list[CaseProof] = []
    try:
        for name, group in groups.items():
            scenario = data.scenarios[name]
            runs = []
            for case in group:
                handler = python_app.HandlerApp(harness, case.code, case.case_id)
                try:
                    executions = tuple(
                        python_app.run_case(engine, handler, scenario, i)
                        for i in range(len(scenario.parameters))
                    )
                finally:
                    handler.close()
                runs.append(CaseRun(case.app, case.case_id, case.expected, executions))
            out = judge(runs, scenario)
            for proof in out:
                progress(proof)
            proofs += out
    finally:
        engine.dispose()
    return proofs


def verify_suite(
    root: Path,
    apps: Sequence[str] | None = None,
    pg_url: str | None = None,
    progress: Progress | None = None,
) -> VerifyReport:
    """Raises SuiteError for an unusable suite and ServerError when no PostgreSQL is at hand."""
    started = time.monotonic()
    suite = load_markdown_suite(root, apps)
    notify: Progress = progress or (lambda proof: None)
    with postgres(pg_url) as (uri, engine):
        report = VerifyReport(engine)
        for app in suite.apps:
            data, problems = load_app_data(app.name, app.root)
            cases = [c for c in suite.cases if c.app == app.name]
            if problems:
                failed = {Path(p.split(":")[0]).stem for p in problems}
                bad = [c for c in cases if scenario_of(c.case_id) in failed]
                for proof in _failed(bad, "; ".join(problems)):
                    notify(proof)
                    report.cases.append(proof)
                cases = [c for c in cases if c not in bad]
            report.cases += _verify_app(uri, data, cases, notify)
    report.seconds = time.monotonic() - started
    return report
