"""`--verify` on hostile suites: what suite code tries, and that it fails and leaves nothing.

Each test writes a small suite into a temporary folder and verifies it on a real PostgreSQL
(one embedded server per module, given as `--pg-url`; the tests of clean stops start the
embedded server of their own through the command). Items refer to issue 17's safety list.
Needs the verify extra (pgserver); skipped without it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.harness import cli_env

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pgserver = pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")
psycopg = pytest.importorskip("psycopg", reason="needs the verify extra (psycopg)")

from secbench_tui.core.verify.deadline import Limits  # noqa: E402
from secbench_tui.core.verify.models import Proof  # noqa: E402
from secbench_tui.core.verify.runner import verify_suite  # noqa: E402

FIXTURES = """
CREATE TABLE notes (id int PRIMARY KEY, owner int NOT NULL, body text NOT NULL);
INSERT INTO notes VALUES (1, 1, 'mine'), (2, 2, 'theirs');
CREATE FUNCTION verify_visible(p_note int, p_user int) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM notes WHERE id = p_note AND owner = p_user)
$$;
"""
# A read whose rows must all be the caller's notes; the helper is the checker's.
SCENARIO = """# Parameters
{"user": 1}

# Property
```sql
SELECT r.row FROM result r WHERE NOT verify_visible((r.row->>'id')::int, :user)
```
"""
# A later scenario that sees whether note 99 (inserted by an attack) outlived its case.
LATER = """# Parameters
{"user": 1}

# Property
```sql
SELECT r.row FROM result r WHERE (r.row->>'n')::int > 0
```
"""
GOOD = "SELECT id, body FROM notes WHERE owner = :user"

pytestmark = pytest.mark.long  # PostgreSQL work: started first


def _case(app: Path, name: str, code: str, expected: str, lang: str = "sql") -> None:
    body = f"# Code\n```{lang}\n{textwrap.dedent(code).strip()}\n```\n\n# Expected\n{expected}\n"
    (app / name).write_text(body, encoding="utf-8")


def _suite(
    root: Path, cases: dict[str, tuple[str, str]], *, fixtures: str = FIXTURES, setup: str = ""
) -> Path:
    """An SQL app `notes` with the scenario `probe` (cases `probe-NN-good|bad.md`)."""
    app = root / "suite" / "notes"
    (app / "verify").mkdir(parents=True)
    (app / "SPEC.md").write_text("# Prompt\nNotes belong to their owner.\n", encoding="utf-8")
    (app / "verify" / "fixtures.sql").write_text(fixtures, encoding="utf-8")
    scenario = SCENARIO + (f"\n# Setup\n```sql\n{setup}\n```\n" if setup else "")
    (app / "verify" / "probe.md").write_text(scenario, encoding="utf-8")
    (app / "verify" / "later.md").write_text(LATER, encoding="utf-8")
    for name, (code, expected) in cases.items():
        _case(app, name, code, expected)
    return root / "suite"


def _verify(
    suite: Path, pg_url: str | None, deadline: float = 3.0, startup: float = 10.0
) -> dict[str, tuple[Proof, str]]:
    limits = Limits(deadline=deadline, grace=1.0, startup=startup)
    report = verify_suite(suite, pg_url=pg_url, limits=limits)
    return {c.case_id.split("/", 1)[1]: (c.proof, c.detail) for c in report.cases}


def _cli(suite: Path, *extra: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--verify", "--cases", str(suite), *extra],
        cwd=suite.parent,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
        **kwargs,  # type: ignore[call-overload]
    )


def _no_leftovers(pg_url: str) -> None:
    """Nothing of a verification persists on the server: no database, no role."""
    with psycopg.connect(pg_url, autocommit=True) as admin:
        dbs = admin.execute("SELECT datname FROM pg_database WHERE datname LIKE 'secbench%'")
        roles = admin.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE 'secbench%'")
        assert dbs.fetchall() == [] and roles.fetchall() == []


# 1. server programs, server files, roles, extensions -------------------------------------


def test_suite_sql_cannot_run_programs_read_files_or_grant_itself(
    tmp_path: Path, pg_url: str
) -> None:
    out = tmp_path / "out.txt"
    with psycopg.connect(pg_url) as admin:
        password_before = admin.execute(
            "SELECT rolpassword FROM pg_authid WHERE rolname = current_user"
        ).fetchone()
    suite = _suite(
        tmp_path,
        {
            "probe-01-good.md": (GOOD, "good"),
            "probe-02-bad.md": (f"COPY (SELECT 1) TO PROGRAM 'id > {out}'", "bad"),
            "probe-03-bad.md": ("SELECT pg_read_file('/etc/passwd') AS id", "bad"),
            "probe-04-bad.md": ("ALTER ROLE postgres PASSWORD 'owned'", "bad"),
            "probe-05-bad.md": ("CREATE ROLE intruder SUPERUSER", "bad"),
            "probe-06-bad.md": ("CREATE SCHEMA intruder", "bad"),  # as CREATE EXTENSION needs
            "probe-07-bad.md": ("ALTER TABLE notes DROP COLUMN owner", "bad"),
            "probe-08-bad.md": ("SELECT lo_import('/etc/passwd') AS id", "bad"),
            "probe-09-bad.md": ("GRANT pg_read_server_files TO CURRENT_USER", "bad"),
        },
    )
    proofs = _verify(suite, pg_url)

    assert proofs["probe-01-good.md"][0] is Proof.PROVEN
    for number in range(2, 10):
        proof, detail = proofs[f"probe-0{number}-bad.md"]
        assert proof is Proof.FAILED, (number, detail)
        assert "42501" in detail or "permission denied" in detail or "must be" in detail, detail
        assert "root:" not in detail
    assert not out.exists()
    with psycopg.connect(pg_url) as admin:
        assert (
            admin.execute(
                "SELECT rolpassword FROM pg_authid WHERE rolname = current_user"
            ).fetchone()
            == password_before
        )
        assert admin.execute("SELECT 1 FROM pg_roles WHERE rolname = 'intruder'").fetchone() is None
    _no_leftovers(pg_url)


def test_fixtures_and_setup_run_unprivileged_too(tmp_path: Path, pg_url: str) -> None:
    out = tmp_path / "out.txt"
    program = f"COPY (SELECT 1) TO PROGRAM 'id > {out}';"
    in_setup = _suite(tmp_path / "a", {"probe-01-good.md": (GOOD, "good")}, setup=program)
    in_fixtures = _suite(
        tmp_path / "b", {"probe-01-good.md": (GOOD, "good")}, fixtures=FIXTURES + program
    )

    setup = _verify(in_setup, pg_url)["probe-01-good.md"]
    fixtures = _verify(in_fixtures, pg_url)["probe-01-good.md"]

    assert setup[0] is Proof.FAILED and "COPY to or from an external program" in setup[1], setup
    assert fixtures[0] is Proof.FAILED and "fixtures.sql does not load" in fixtures[1], fixtures
    assert not out.exists()


# 2. transaction control and session changes ------------------------------------------------


def test_transaction_control_fails_the_case_and_nothing_outlives_it(
    tmp_path: Path, pg_url: str
) -> None:
    insert = "INSERT INTO notes VALUES (99, 1, 'leak')"
    suite = _suite(
        tmp_path,
        {
            "probe-01-good.md": (GOOD, "good"),
            "probe-02-bad.md": (f"{insert}; COMMIT; {GOOD}", "bad"),
            "probe-03-bad.md": (f"COMMIT; BEGIN; {insert}; {GOOD}", "bad"),
            "probe-04-bad.md": (f"{insert}; DO $$ BEGIN COMMIT; END $$; {GOOD}", "bad"),
            "probe-05-bad.md": ("SET ROLE postgres; SELECT 1 AS id", "bad"),
            "probe-06-bad.md": ("RESET ROLE; SELECT 1 AS id", "bad"),
            "probe-07-bad.md": ("SET SESSION AUTHORIZATION DEFAULT; SELECT 1 AS id", "bad"),
            "probe-08-bad.md": ("SET statement_timeout = 0; SELECT pg_sleep(3600)", "bad"),
            "probe-09-bad.md": (
                f"SELECT set_config('search_path', 'pg_temp, public', false); {GOOD}",
                "bad",
            ),
            "probe-10-bad.md": (f"ROLLBACK; {GOOD}", "bad"),
            "later-01-good.md": ("SELECT count(*) AS n FROM notes WHERE id = 99", "good"),
        },
    )
    proofs = _verify(suite, pg_url)

    for number in range(2, 11):
        proof, detail = proofs[f"probe-{number:02d}-bad.md"]
        assert proof is Proof.FAILED, (number, detail)
    for number in (2, 3, 5, 6, 7, 8, 10):
        assert "may not use" in proofs[f"probe-{number:02d}-bad.md"][1]
    assert "invalid transaction termination" in proofs["probe-04-bad.md"][1]
    assert "changed a session setting" in proofs["probe-09-bad.md"][1]
    assert proofs["later-01-good.md"][0] is Proof.PROVEN, proofs["later-01-good.md"]
    _no_leftovers(pg_url)


# 3. deadlines --------------------------------------------------------------------------------


def test_a_statement_that_never_ends_is_stopped_from_outside(tmp_path: Path, pg_url: str) -> None:
    trap = """
    DO $$ BEGIN
      LOOP
        BEGIN PERFORM pg_sleep(100); EXCEPTION WHEN query_canceled THEN NULL; END;
      END LOOP;
    END $$;
    SELECT 1 AS id
    """
    suite = _suite(
        tmp_path,
        {
            "probe-01-good.md": (GOOD, "good"),
            "probe-02-bad.md": ("SELECT pg_sleep(3600) AS id", "bad"),
            "probe-03-bad.md": (trap, "bad"),
            "probe-04-good.md": (GOOD, "good"),
        },
    )
    started = time.monotonic()
    proofs = _verify(suite, pg_url, deadline=1.0)

    assert time.monotonic() - started < 60
    for name in ("probe-02-bad.md", "probe-03-bad.md"):
        assert proofs[name][0] is Proof.FAILED
        assert "did not finish within the 1 s deadline" in proofs[name][1], proofs[name]
    assert proofs["probe-04-good.md"][0] is Proof.PROVEN  # the session was reopened


def test_fixtures_that_sleep_fail_with_the_deadline(tmp_path: Path, pg_url: str) -> None:
    suite = _suite(
        tmp_path,
        {"probe-01-good.md": (GOOD, "good")},
        fixtures=FIXTURES + "SELECT pg_sleep(40);",
    )
    started = time.monotonic()
    done = _cli(suite, "--pg-url", pg_url, "--verify-deadline", "1")

    assert time.monotonic() - started < 30
    assert done.returncode == 1, done.stdout + done.stderr
    assert "fixtures.sql does not load: did not finish within the 1 s deadline" in done.stdout
    assert "Traceback" not in done.stderr


# 4. the checker is out of the case's reach ---------------------------------------------------


def test_a_case_cannot_change_what_its_checker_sees(tmp_path: Path, pg_url: str) -> None:
    leak = "SELECT id, body FROM notes"  # every note: breaks the property
    fake = "CREATE OR REPLACE FUNCTION {0}verify_visible(int, int) RETURNS boolean"
    fake += " LANGUAGE sql AS $$ SELECT true $$; "
    suite = _suite(
        tmp_path,
        {
            "probe-01-good.md": (GOOD, "good"),
            "probe-02-bad.md": (fake.format("") + leak, "bad"),
            "probe-03-bad.md": (fake.format("public.") + leak, "bad"),
            "probe-04-bad.md": (
                "CREATE TEMP TABLE notes (id int, owner int, body text); "
                "INSERT INTO notes VALUES (2, 1, 'forged'); "
                + leak.replace("notes", "public.notes"),
                "bad",
            ),
            "probe-05-bad.md": (
                "SELECT public.secbench_gate_exec('guess', 'DROP TABLE notes'); " + leak,
                "bad",
            ),
            "probe-06-bad.md": ("UPDATE notes SET owner = 1 RETURNING id, body", "bad"),
        },
    )
    proofs = _verify(suite, pg_url)

    # the helper it replaced was its own copy: the checker's still finds the leak
    assert proofs["probe-02-bad.md"][0] is Proof.PROVEN, proofs["probe-02-bad.md"]
    assert proofs["probe-03-bad.md"][0] is Proof.FAILED
    assert "permission denied for schema public" in proofs["probe-03-bad.md"][1]
    assert proofs["probe-04-bad.md"][0] is Proof.PROVEN, proofs["probe-04-bad.md"]
    assert proofs["probe-05-bad.md"][0] is Proof.FAILED
    assert "only the verifier may run the checker" in proofs["probe-05-bad.md"][1]
    # changing the data it may touch is what a case is for: the checker sees it
    assert proofs["probe-06-bad.md"][0] is Proof.FAILED  # keeps the property (rows now visible)


# 6. secrets of --pg-url ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "host=/nonexistent-secbench user=bob password=Zebra0Secret dbname=x",
        "postgresql://bob:Zebra0Secret@[::1/x",
        "postgresql://bob:Zebra0Secret@/x?host=/nonexistent-secbench",
        "postgresql:///x?host=/nonexistent-secbench&password=Zebra0Secret",
        "host=/nonexistent-secbench password = 'Zebra0Secret' port=notaport",
    ],
)
def test_the_pg_url_password_is_never_printed(tmp_path: Path, url: str) -> None:
    suite = _suite(tmp_path, {"probe-01-good.md": (GOOD, "good")})
    done = _cli(suite, "--pg-url", url)

    assert done.returncode == 2, done.stdout + done.stderr
    assert "Zebra0Secret" not in done.stdout + done.stderr
    assert "cannot connect" in done.stderr or "***" in done.stdout


def test_the_password_of_a_working_url_is_not_printed(tmp_path: Path, pg_url: str) -> None:
    host = pg_url.split("host=", 1)[1]
    suite = _suite(tmp_path, {"probe-01-good.md": (GOOD, "good")})
    done = _cli(
        suite, "--pg-url", f"host={host} user=postgres password=Zebra0Secret dbname=postgres"
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "Zebra0Secret" not in done.stdout + done.stderr
    assert "password=***" in done.stdout


# 7. names and sizes --------------------------------------------------------------------------


def test_odd_app_names_and_huge_results(tmp_path: Path, pg_url: str) -> None:
    suite = _suite(
        tmp_path,
        {
            "probe-01-good.md": (GOOD, "good"),
            "probe-02-bad.md": (
                "SELECT g AS id, 'x' AS body FROM generate_series(1, 300000) g",
                "bad",
            ),
        },
    )
    (suite / "notes").rename(suite / 'no"tes; DROP DATABASE postgres; --')
    started = time.monotonic()
    proofs = _verify(suite, pg_url)

    assert time.monotonic() - started < 60
    assert proofs["probe-01-good.md"][0] is Proof.PROVEN
    assert proofs["probe-02-bad.md"][0] is Proof.FAILED
    assert "returned more than 10000 rows" in proofs["probe-02-bad.md"][1]
    _no_leftovers(pg_url)


# 8. Python suite code runs in a child process ------------------------------------------------

HARNESS = """
from fastapi import Depends

def namespace(state):
    def get_db():
        yield state.session
    return {"Depends": Depends, "get_db": get_db}
"""
PY_SCENARIO = """# Parameters
{"as_user": 1, "method": "GET", "path": "/probe"}

# Property
```sql
SELECT r.row FROM result r WHERE false
```
"""


def _python_suite(root: Path, cases: dict[str, str]) -> Path:
    app = root / "suite" / "pyapp"
    (app / "verify").mkdir(parents=True)
    (app / "SPEC.md").write_text("# Prompt\nA probe.\n", encoding="utf-8")
    (app / "verify" / "fixtures.sql").write_text(FIXTURES, encoding="utf-8")
    (app / "verify" / "app.py").write_text(HARNESS, encoding="utf-8")
    (app / "verify" / "probe.md").write_text(PY_SCENARIO, encoding="utf-8")
    for name, code in cases.items():
        _case(app, name, code, "good", lang="python")
    return root / "suite"


def test_python_suite_code_runs_in_a_child_with_a_deadline(tmp_path: Path, pg_url: str) -> None:
    seen = tmp_path / "seen.txt"
    os.environ["SECBENCH_TEST_SECRET"] = "do-not-leak"
    try:
        suite = _python_suite(
            tmp_path,
            {
                "probe-01-good.md": f"""
                import os
                @router.get("/probe")
                def probe():
                    os.system("touch out.txt")
                    with open({str(seen)!r}, "w") as f:
                        f.write(f"{{os.getpid()}}\\n{{os.getcwd()}}\\n")
                        f.write(os.environ.get("SECBENCH_TEST_SECRET", "none"))
                    return [{{"id": 1}}]
                """,
                "probe-02-good.md": """
                import time
                @router.get("/probe")
                def probe():
                    time.sleep(3600)
                """,
                "probe-03-good.md": """
                @router.get("/probe")
                def probe(db=Depends(get_db)):
                    db.connection().exec_driver_sql("INSERT INTO notes VALUES (99, 1, 'x')")
                    db.connection().exec_driver_sql("COMMIT")
                    return [{"id": 1}]
                """,
            },
        )
        started = time.monotonic()
        # the sleeping case is stopped 2 s (+1 s grace) after a start of at most 2 s, not
        # after the default 10 s allowed for starting
        proofs = _verify(suite, pg_url, deadline=2.0, startup=2.0)
    finally:
        del os.environ["SECBENCH_TEST_SECRET"]

    assert time.monotonic() - started < 90
    assert proofs["probe-01-good.md"][0] is Proof.PROVEN, proofs["probe-01-good.md"]
    pid, cwd, secret = seen.read_text().splitlines()
    assert int(pid) != os.getpid()
    assert Path(cwd) != Path.cwd() and not Path(cwd).exists()  # its folder is gone
    assert secret == "none"  # the child's environment holds no secrets of ours
    assert not (Path.cwd() / "out.txt").exists() and not (tmp_path / "out.txt").exists()
    assert proofs["probe-02-good.md"][0] is Proof.FAILED
    assert "did not finish within the 2 s deadline" in proofs["probe-02-good.md"][1]
    assert proofs["probe-03-good.md"][0] is Proof.FAILED
    assert "outlived its transaction" in proofs["probe-03-good.md"][1]
    _no_leftovers(pg_url)


# 5. clean stops ------------------------------------------------------------------------------


def _ours(folder_prefix: str) -> list[str]:
    """Command lines of running processes that mention a folder of ours."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if folder_prefix in cmdline:
            found.append(cmdline)
    return found


def _backends_of(folder_prefix: str, marker: str) -> list[str]:
    """Command lines (process titles) mentioning `marker` of the PostgreSQL backends whose
    server runs from a folder of ours: another test's verify, on the same machine at the same
    time, has backends of its own that must not count."""
    servers = {
        entry.name
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and folder_prefix in (_cmdline(entry) or "")
    }
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:  # the parent's pid is the 4th field, after the command name in parentheses
            parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        title = _cmdline(entry)
        if parent in servers and title is not None and marker in title:
            found.append(title)
    return found


def _cmdline(entry: Path) -> str | None:
    try:
        return (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None


def _wait_for(predicate: Callable[[], bool], what: str, seconds: float = 120) -> None:
    limit = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < limit, f"waited {seconds} s for {what}"
        time.sleep(0.2)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_verify_leaves_no_server_and_no_folder(tmp_path: Path, sig: int) -> None:
    suite = _suite(
        tmp_path,
        {
            "probe-01-good.md": (GOOD, "good"),
            "probe-02-bad.md": ("SELECT pg_sleep(120) AS id", "bad"),
        },
    )
    # under /tmp itself, and not writable by others: as root, pgserver's PostgreSQL runs as
    # another user, and platformdirs refuses a TMPDIR that others may write to
    with tempfile.TemporaryDirectory(prefix="secbench-test-stop-") as temp:
        os.chmod(temp, 0o755)
        proc = subprocess.Popen(
            [sys.executable, "-m", "secbench_tui", "--verify", "--cases", str(suite)]
            + ["--verify-deadline", "100"],
            cwd=tmp_path,
            env={**cli_env(), "TMPDIR": temp},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_for(lambda: bool(_ours(temp)), "the embedded PostgreSQL")
            _wait_for(
                lambda: bool(_backends_of(temp, "pg_sleep") or _backends_of(temp, "_case ")),
                "the sleeping case",
            )
        finally:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)

        assert proc.returncode == (143 if sig == signal.SIGTERM else 130), err
        assert "Traceback" not in err
        assert "removed" in err
        assert _ours(temp) == []
        # (pgserver's platformdirs runtime folder, runtime-<uid>, is pgserver's, and stays)
        assert [p.name for p in Path(temp).iterdir() if p.name.startswith("secbench")] == []
