"""`--rewrites` on code nested deeper than a parser reads: one case's problem, not the run's.

Issue 30, item 7: an expression nested 1,000 deep, 100,000 parentheses or a 2,000-branch
UNION ALL ended `--rewrites` with a RecursionError traceback (sqlglot, or the JSON of
pglast's parse tree), exit 1, and every result lost. Here such cases sit beside an ordinary
one: the run must go on, ask the model, and say what became of the deep ones.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tests.e2e.harness import rows, run_cli
from tests.e2e.server import LoopbackServer, answer
from tests.e2e.test_verify_attacks import DEEP
from tests.e2e.test_verify_sandbox import GOOD, _suite

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")

pytestmark = pytest.mark.long  # PostgreSQL work: started first


def test_deep_code_does_not_end_a_rewrites_run(tmp_path: Path, pg_url: str) -> None:
    cases = {"probe-01-good.md": (GOOD, "good")}
    for number, (name, code) in enumerate(DEEP.items(), 2):
        if name != "jsonb":
            cases[f"probe-{number:02d}-good.md"] = (code, "good")
    suite = _suite(tmp_path, cases)
    db = tmp_path / "results.db"

    with LoopbackServer(default=lambda _request: answer("good")) as server:
        done = run_cli(
            server.base_url,
            db,
            suite,
            "--rewrites",
            "all",
            "--pg-url",
            pg_url,
            key="sk-test",
            timeout=600,
        )

    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "rewrites:" in done.stderr and "proven equivalent" in done.stderr
    asked = {r["case_id"] for r in rows(db)}
    assert {f"notes/{case}" for case in cases} <= asked  # every original was asked
    assert any("#" in case for case in asked)  # and the variants that were proven
