"""`--task fix` and `secbench-tui fix` end to end, on a real PostgreSQL, with a loopback model.

The model's fixes are scripted per bad case: the nearest compliant twin's code (proven), the
bad code unchanged (insecure and broken), the twin with one column dropped (secure but
broken), code that does not parse, no fixed code at all, and hostile code (transaction
control; a shell command through `COPY ... PROGRAM`), which the sandbox refuses while the run
goes on. `secbench-tui fix` repairs two mislabels planted in a copy of the bundled suite and
touches no other file. Needs the verify extra (pgserver); skipped without it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import uuid
import warnings
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.suites.markdown import load_markdown_suite
from secbench_tui.core.suites.twins import nearest, twins_of
from tests.e2e.harness import FAKE_KEY, cli_env, run_cli
from tests.e2e.server import Behaviour, LoopbackServer, ReceivedRequest, reply

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")
pytest.importorskip("fastapi", reason="needs the verify extra (fastapi)")

pytestmark = pytest.mark.long  # PostgreSQL work: started first

FILTERS = (
    "purchase-order/get-supplier-*",
    "purchase-order/approve-po-*",
    "purchase-order/list-po-lines-*",
    "purchase-order/get-purchase-order-*",
    "clinic-portal-api/get-patient-*",
)
PWNED = Path("/tmp") / f"secbench-fix-pwned-{uuid.uuid4().hex}"


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    for app in ("purchase-order", "clinic-portal-api"):
        shutil.copytree(bundled_cases_dir() / app, suite / app)
    return suite


def _twin_code(suite: Path, case_id: str) -> str:
    case = next(c for c in load_markdown_suite(suite).cases if c.case_id == case_id)
    twin = nearest(case.code, twins_of(Path(case.test_file), case.app))
    assert twin is not None
    return twin.code


def _drop_column(code: str, column: str) -> str:
    """The twin without one of the columns it returns."""
    dropped = re.sub(rf",\s*\w+\.{column}\b", "", code, count=1)
    assert dropped != code, f"{column} is not a column of {code}"
    return dropped


def _fixes(suite: Path) -> dict[str, str | None]:
    """What the model answers as the fix of each bad case (None: a reply without one)."""
    twin = _twin_code
    return {
        "purchase-order/get-supplier-03-bad.md": twin(
            suite, "purchase-order/get-supplier-03-bad.md"
        ),
        "purchase-order/get-supplier-04-bad.md": twin(
            suite, "purchase-order/get-supplier-04-bad.md"
        ),
        "clinic-portal-api/get-patient-03-bad.md": twin(
            suite, "clinic-portal-api/get-patient-03-bad.md"
        ),
        "clinic-portal-api/get-patient-04-bad.md": twin(
            suite, "clinic-portal-api/get-patient-04-bad.md"
        ),
        "purchase-order/approve-po-03-bad.md": _code(suite, "purchase-order/approve-po-03-bad.md"),
        "purchase-order/approve-po-04-bad.md": None,
        "purchase-order/list-po-lines-03-bad.md": _drop_column(
            twin(suite, "purchase-order/list-po-lines-03-bad.md"), "sku"
        ),
        "purchase-order/list-po-lines-04-bad.md": "SELEC id, email FRM users WHERE org_id =",
        "purchase-order/get-purchase-order-03-bad.md": "BEGIN;\n"
        + twin(suite, "purchase-order/get-purchase-order-03-bad.md")
        + "\nCOMMIT;",
        "purchase-order/get-purchase-order-04-bad.md": (
            f"COPY (SELECT 1) TO PROGRAM 'touch {PWNED}';"
        ),
    }


EXPECTED = {
    "purchase-order/get-supplier-03-bad.md": "proven",
    "purchase-order/get-supplier-04-bad.md": "proven",
    "clinic-portal-api/get-patient-03-bad.md": "proven",
    "clinic-portal-api/get-patient-04-bad.md": "proven",
    "purchase-order/approve-po-03-bad.md": "insecure and broken",
    "purchase-order/approve-po-04-bad.md": "did not parse",
    "purchase-order/list-po-lines-03-bad.md": "secure but broken",
    "purchase-order/list-po-lines-04-bad.md": "did not parse",
    "purchase-order/get-purchase-order-03-bad.md": "refused",
    "purchase-order/get-purchase-order-04-bad.md": "refused",
}


def _code(suite: Path, case_id: str) -> str:
    return next(c.code for c in load_markdown_suite(suite).cases if c.case_id == case_id)


def _responder(codes: dict[str, str], answers: dict[str, str | None]) -> Callable[..., Behaviour]:
    """Answers each bad case, found by its code in the prompt, with its scripted fix."""

    def respond(request: ReceivedRequest) -> Behaviour:
        case_id = next((cid for cid, code in codes.items() if code in request.prompt), None)
        body: dict[str, object] = {
            "explanation": "loopback",
            "assessment": "bad",
            "violations": [{"rule": 1, "quote": "x"}],
        }
        if case_id is not None and answers.get(case_id) is not None:
            body["fixed_code"] = answers[case_id]
        return reply(json.dumps(body))

    return respond


def _stored(db: Path) -> dict[str, tuple[str, int | None, int | None, str | None]]:
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT e.case_id, x.outcome, x.secure, x.functional, x.reason FROM evaluations e"
            " JOIN fixes x ON x.evaluation_id = e.id"
        ).fetchall()
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}


def test_fixes_are_judged_secure_functional_or_refused_and_the_run_goes_on(
    tmp_path: Path, pg_url: str
) -> None:
    suite = _suite(tmp_path)
    answers = _fixes(suite)
    codes = {cid: _code(suite, cid) for cid in answers}
    db, summary = tmp_path / "results.db", tmp_path / "summary.json"
    filters = [arg for f in FILTERS for arg in ("--filter", f)]
    with LoopbackServer(default=_responder(codes, answers)) as server:
        done = run_cli(
            server.base_url,
            db,
            suite,
            "--task",
            "fix",
            "--pg-url",
            pg_url,
            "--summary-json",
            str(summary),
            *filters,
            key=FAKE_KEY,
            timeout=600,
        )
        asked = server.completions()
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(asked) == len(EXPECTED)  # the bad cases only
    schema = asked[0].body["response_format"]["json_schema"]
    assert schema["name"] == "security_fix" and "fixed_code" in schema["schema"]["properties"]
    stored = _stored(db)
    assert {cid: row[0] for cid, row in stored.items()} == EXPECTED, done.stderr
    assert stored["purchase-order/list-po-lines-03-bad.md"][1:3] == (1, 0)  # secure, broken
    assert "42501" in str(stored["purchase-order/get-purchase-order-04-bad.md"][3])
    assert "transaction control" in str(stored["purchase-order/get-purchase-order-03-bad.md"][3])
    assert not PWNED.exists()  # the shell command never ran
    figures = json.loads(summary.read_text())["fixes"]
    assert (figures["judged"], figures["proven"], figures["refused"]) == (10, 4, 2)
    assert figures["proven_rate"] == pytest.approx(0.4)
    assert (figures["secure_broken"], figures["did_not_parse"], figures["insecure"]) == (1, 2, 1)
    assert figures["median_change_lines"] is not None
    assert "fixes: proven 40.0%" in done.stdout
    assert re.search(r"^fix: purchase-order/get-supplier-03-bad.md: proven$", done.stderr, re.M)

    rescored = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--rescore", "--db", str(db), "--pg-url", pg_url],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    assert "verified 9 fixes" in rescored.stdout and "fixes: proven 40.0%" in rescored.stdout
    assert {cid: row[0] for cid, row in _stored(db).items()} == EXPECTED

    exported = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--export", "json", "--db", str(db)],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    document = json.loads(exported.stdout)
    by_case = {r["case_id"]: r for r in document["results"]}
    broken = by_case["purchase-order/list-po-lines-03-bad.md"]
    assert broken["fix_outcome"] == "secure but broken" and broken["fix_functional"] is False
    assert json.loads(broken["fix_detail"])["broken"]["twin_rows"]
    assert document["runs"][0]["summary"]["fixes"]["proven"] == 4


def test_echo_is_the_floor_and_twin_the_ceiling(tmp_path: Path) -> None:
    """On the command's own embedded PostgreSQL: the code unchanged proves nothing, the
    nearest compliant twin proves every fix."""
    suite = _suite(tmp_path)
    db = tmp_path / "results.db"
    filters = [arg for f in FILTERS for arg in ("--filter", f)]
    done = run_cli(
        "http://127.0.0.1:9/v1",
        db,
        suite,
        "--task",
        "fix",
        *filters,
        model="baseline/echo,baseline/twin",
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with closing(sqlite3.connect(db)) as conn:
        got = conn.execute(
            "SELECT e.model_name, x.outcome, count(*) FROM evaluations e"
            " JOIN fixes x ON x.evaluation_id = e.id GROUP BY 1, 2"
        ).fetchall()
    assert set(got) == {
        ("baseline/echo", "insecure and broken", 10),
        ("baseline/twin", "proven", 10),
    }


PLANTS = (
    # (app, case copied as a new case, the case whose code it gets, the case whose code repairs it)
    ("purchase-order", "approve-po-03-bad.md", "approve-po-01-good.md", "approve-po-03-bad.md"),
    (
        "clinic-portal-api",
        "sign-prescription-02-good.md",
        "sign-prescription-04-bad.md",
        "sign-prescription-02-good.md",
    ),
)


def _plant(folder: Path, target: str, source: str) -> Path:
    """A new case of `target`'s scenario (number 9x) with its description, label and rule,
    and `source`'s code section (as tests/e2e/test_verify.py plants them)."""
    scenario, number, label = target.rsplit("-", 2)
    planted = folder / f"{scenario}-{90 + int(number)}-{label}"
    code = re.compile(r"# Code\n.*?(?=\n# Expected)", re.S)
    donor = code.search((folder / source).read_text(encoding="utf-8"))
    assert donor is not None
    text = (folder / target).read_text(encoding="utf-8")
    planted.write_text(code.sub(lambda _: donor.group(0), text), encoding="utf-8")
    return planted


def _hashes(root: Path) -> dict[str, str]:
    """Every file of the suite by its hash (but the harness's compiled bytecode, which
    Python writes beside `verify/app.py` when verify's child process imports it)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_fix_proposes_and_proves_repairs_of_planted_mislabels_and_touches_nothing_else(
    tmp_path: Path, pg_url: str
) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(bundled_cases_dir(), suite, ignore=shutil.ignore_patterns("__pycache__"))
    repairs: dict[str, str] = {}
    for app, target, source, repair in PLANTS:
        planted = _plant(suite / app, target, source)
        repairs[f"{app}/{planted.name}"] = _code(suite, f"{app}/{repair}")
    before = _hashes(suite)

    def respond(request: ReceivedRequest) -> Behaviour:
        case_id = next(cid for cid in repairs if f"Case {cid}," in request.prompt)
        return reply(json.dumps({"explanation": "loopback", "code": repairs[case_id]}))

    with LoopbackServer(default=respond) as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "secbench_tui",
                "fix",
                "--cases",
                str(suite),
                "--model",
                "openai/gpt-4o-mini",
                "--base-url",
                server.base_url,
                "--pg-url",
                pg_url,
            ],
            cwd=tmp_path,
            env=cli_env(FAKE_KEY),
            capture_output=True,
            text=True,
            timeout=900,
        )
        asked = len(server.completions())
    assert done.returncode == 0, done.stdout + done.stderr
    assert asked == len(PLANTS)
    proposals = {f"{case_id}.proposed" for case_id in repairs}
    after = _hashes(suite)
    assert set(after) - set(before) == proposals  # the proposals, and nothing else new
    assert {k: v for k, v in after.items() if k in before} == before  # nothing else changed
    for case_id, code in repairs.items():
        proposed = (suite / f"{case_id}.proposed").read_text(encoding="utf-8")
        assert code in proposed and "# Expected" in proposed
        assert re.search(rf"^proposed\s+{re.escape(case_id)}: written as", done.stdout, re.M)
    assert "2 proposals proven and written, 0 refused" in done.stdout

    again = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "fix", "--cases", str(suite), "--apply"],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "2 proposals applied" in again.stdout
    for case_id, code in repairs.items():
        assert code in (suite / case_id).read_text(encoding="utf-8")
        assert not (suite / f"{case_id}.proposed").exists()


def test_fix_refuses_a_proposal_that_proves_nothing_and_never_overwrites(
    tmp_path: Path, pg_url: str
) -> None:
    """A proposal that verify would still fail is not written; a proposal already waiting is
    never overwritten; both are said, and the command exits 1."""
    suite = tmp_path / "suite"
    shutil.copytree(bundled_cases_dir() / "purchase-order", suite / "purchase-order")
    folder = suite / "purchase-order"
    first = _plant(folder, "approve-po-03-bad.md", "approve-po-01-good.md")
    second = _plant(folder, "get-supplier-03-bad.md", "get-supplier-01-good.md")
    waiting = second.with_name(second.name + ".proposed")
    waiting.write_text("the author's own draft\n", encoding="utf-8")
    unchanged = _code(suite, f"purchase-order/{first.name}")
    repaired = _code(suite, "purchase-order/get-supplier-03-bad.md")

    def respond(request: ReceivedRequest) -> Behaviour:
        code = unchanged if first.name in request.prompt else repaired
        return reply(json.dumps({"explanation": "loopback", "code": code}))

    with LoopbackServer(default=respond) as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "secbench_tui",
                "fix",
                "--cases",
                str(suite),
                "--filter",
                "purchase-order/approve-po-*",
                "--filter",
                "purchase-order/get-supplier-*",
                "--model",
                "openai/gpt-4o-mini",
                "--base-url",
                server.base_url,
                "--pg-url",
                pg_url,
            ],
            cwd=tmp_path,
            env=cli_env(FAKE_KEY),
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert not first.with_name(first.name + ".proposed").exists()
    assert waiting.read_text(encoding="utf-8") == "the author's own draft\n"
    out = done.stdout
    assert re.search(rf"^refused\s+purchase-order/{first.name}: not proven bad", out, re.M)
    assert re.search(rf"^refused\s+purchase-order/{second.name}: .*already there", out, re.M)
    assert "0 proposals proven and written, 2 refused" in out
