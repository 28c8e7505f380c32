"""Every bundled case is proven when it is verified alone, as `--verify --filter <case>` does.

Issue 30, item 3: `--verify --filter 'purchase-order/export-pos-fn-01-good.md'` failed ("the
case changed a session setting": loading plpgsql for the first time in a session lists its
settings), and the rewrite gate dropped 2 of 8 variants for the same reason, while the whole
suite verified: a case's proof depended on the cases before it in the session.

A `verify_suite` call per case (a server, roles, a database and its fixtures, for the Python
app a child process importing FastAPI: seconds each, minutes in all on a busy machine) is what
`--filter` does; here one server, one pair of roles and one database per app serve every case,
and each case is verified alone by the same machinery, in a session of its own where nothing
ran before it:

- an SQL case in a new session of the case role (`CaseSession`), which verify's own executor
  keeps open from case to case: the plpgsql false alarm showed only in a session's first case;
- a Python case in a fresh fork of the app's child process, with a session of its own, which
  is how every Python case runs, alone or not.

Every parameter set starts from the fixtures' state whatever ran before (the transaction is
rolled back, the sequences reset, the session discarded, a database whose transaction a case
ended rebuilt), which the sandbox tests check. It takes about a minute on 2 busy cores; the
CLI's own `--filter` is run on the issue's case.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from secbench_tui.config import bundled_cases_dir
from tests.e2e.harness import cli_env

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")
pytest.importorskip("fastapi", reason="needs the verify extra (fastapi)")

from secbench_tui.core.models import Case  # noqa: E402
from secbench_tui.core.suites.markdown import load_markdown_suite  # noqa: E402
from secbench_tui.core.verify import sql  # noqa: E402
from secbench_tui.core.verify.data import Scenario, load_app_data, scenario_of  # noqa: E402
from secbench_tui.core.verify.deadline import Limits, Watchdog  # noqa: E402
from secbench_tui.core.verify.execution import Execution  # noqa: E402
from secbench_tui.core.verify.judge import CaseRun, case_rule, judge  # noqa: E402
from secbench_tui.core.verify.models import Proof  # noqa: E402
from secbench_tui.core.verify.runner import Executor, app_session  # noqa: E402
from secbench_tui.core.verify.sandbox import AppDatabase, sandbox_roles  # noqa: E402

pytestmark = pytest.mark.long  # PostgreSQL work: started first


def _alone(
    db: AppDatabase, execute: Executor, fixtures: str | None, case: Case, scenario: Scenario
) -> tuple[Execution, ...]:
    """Every parameter set of `case`, in a session where nothing ran before it (`fixtures`:
    an SQL app's, to rebuild its database from; None for a Python app)."""
    if fixtures is None:
        return execute(case, scenario)  # a fresh fork of the child, a fresh session
    session = sql.CaseSession(db, fixtures, db.watchdog)
    try:
        return tuple(
            sql.run_case(session, case.code, scenario, i, case.case_id)
            for i in range(len(scenario.parameters))
        )
    finally:
        session.close()


def test_every_bundled_case_is_proven_alone(pg_url: str) -> None:
    root = bundled_cases_dir()
    suite = load_markdown_suite(root)
    failed: dict[str, str] = {}
    proven: set[str] = set()
    with sandbox_roles(pg_url) as roles:
        watchdog = Watchdog(pg_url, Limits())
        for app in suite.apps:
            data, problems = load_app_data(app.name, app.root)
            assert problems == [] and data.fixtures is not None
            sql_app = data.harness is None
            fixtures = data.fixtures.read_text(encoding="utf-8") if sql_app else None
            with app_session(pg_url, roles, watchdog, data) as (db, execute):
                for case in (c for c in suite.cases if c.app == app.name):
                    scenario = data.scenarios[str(scenario_of(case.case_id))]
                    runs = _alone(db, execute, fixtures, case, scenario)
                    alone = CaseRun(case.app, case.case_id, case.expected, runs, case_rule(case))
                    proof = judge([alone], scenario)[0]  # (every scenario has a property)
                    if proof.proof is Proof.PROVEN:
                        proven.add(case.case_id)
                    else:
                        failed[case.case_id] = proof.detail

    assert failed == {}
    assert len(proven) == 68 + 56 + 72  # the three apps, every case


def test_the_issues_case_verifies_alone_with_the_command(tmp_path: Path, pg_url: str) -> None:
    case = "purchase-order/export-pos-fn-01-good.md"
    done = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--verify", "--cases", str(bundled_cases_dir())]
        + ["--pg-url", pg_url, "--filter", case],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert f"proven          {case}" in done.stdout
