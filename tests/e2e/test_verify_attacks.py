"""Issue 30's attacks on verify's sandbox, each run as a hostile suite on a real PostgreSQL.

The suites are written by an attacker who knows the tool: cases that try to reach the checker
from inside the statements verify itself runs in their session (a function, an operator, a
type, a view of their own found before the catalog's), that leave state for the next case,
that hold locks, and that log in as someone else. Every attack must end as a failed (or
refused) case, never a proven one. One embedded server per test process (`pg_url`); the
superuser tests start the command's own embedded server, whose login is what they attack.
Needs the verify extra (pgserver); skipped without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pgserver = pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")
psycopg = pytest.importorskip("psycopg", reason="needs the verify extra (psycopg)")

from secbench_tui.core.verify.models import Proof  # noqa: E402
from tests.e2e.harness import cli_env  # noqa: E402
from tests.e2e.test_verify_sandbox import (  # noqa: E402
    FIXTURES,
    GOOD,
    HARNESS,
    _cli,
    _no_leftovers,
    _suite,
    _verify,
)

pytestmark = pytest.mark.long  # PostgreSQL work: started first

LEAK = "SELECT id, body FROM notes"  # every tenant's notes: breaks the property

# What an attacker needs once it runs inside a statement of the tool's: the checker's token
# from the query text it can read, and a gate call that makes the property blind.
FORGE = r"""
CREATE FUNCTION case_code.forge(tok pg_catalog.text) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
  BEGIN
    PERFORM public.secbench_gate_exec(tok,
      'CREATE OR REPLACE FUNCTION public.secbench_gate_query(token text, query text, cap int) '
      'RETURNS SETOF jsonb LANGUAGE sql AS ''SELECT NULL::jsonb WHERE false''');
  EXCEPTION WHEN OTHERS THEN NULL;
  END;
  RETURN true;
END $f$;
CREATE FUNCTION case_code.token() RETURNS pg_catalog.text LANGUAGE sql AS $f$
  SELECT pg_catalog.substring(pg_catalog.current_query(),
    'secbench_gate_[a-z]+\(''([A-Za-z0-9_-]+)''')
$f$;
"""
SEARCH_PATH = (
    "SELECT pg_catalog.set_config('search_path', 'case_code, pg_catalog, public', false) AS x;"
)

ATTACKS = {
    # the issue's: md5 of its own, found before the catalog's, forges the settings' hash
    "md5": FORGE
    + r"""
CREATE FUNCTION case_code.md5(t pg_catalog.text) RETURNS pg_catalog.text LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM case_code.forge(case_code.token());
  RETURN pg_catalog.md5(pg_catalog.replace(t, 'search_path=case_code, pg_catalog, public',
                                           'search_path=case_code,public'));
END $f$;
"""
    + SEARCH_PATH,
    # an operator of its own: `||` on text, found before pg_catalog's
    "operator": FORGE
    + r"""
CREATE FUNCTION case_code.cat(a pg_catalog.text, b pg_catalog.text) RETURNS pg_catalog.text
LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM case_code.forge(case_code.token());
  IF a OPERATOR(pg_catalog.=) 'search_path=' THEN
    RETURN a OPERATOR(pg_catalog.||) 'case_code,public';
  END IF;
  RETURN a OPERATOR(pg_catalog.||) b;
END $f$;
CREATE OPERATOR case_code.|| (LEFTARG = pg_catalog.text, RIGHTARG = pg_catalog.text,
                              FUNCTION = case_code.cat);
"""
    + SEARCH_PATH,
    # a cast: `::text` names a domain in pg_temp (searched first for types), whose check
    # sees every value cast to it, the token included
    "cast": FORGE
    + r"""
CREATE FUNCTION case_code.grab(t pg_catalog.text) RETURNS boolean LANGUAGE sql AS $f$
  SELECT case_code.forge(t)
$f$;
CREATE DOMAIN pg_temp.text AS pg_catalog.text CHECK (case_code.grab(VALUE));
""",
    # a function in pg_temp: never found unqualified, and says so by failing
    "pg_temp function": FORGE
    + r"""
CREATE FUNCTION pg_temp.md5(t pg_catalog.text) RETURNS pg_catalog.text LANGUAGE plpgsql AS $f$
BEGIN PERFORM case_code.forge(case_code.token()); RETURN pg_catalog.md5(t); END $f$;
""",
    # a temporary view named like the catalog's (temporary relations are found first)
    "pg_temp view": FORGE
    + """
CREATE TEMP VIEW pg_settings AS
  SELECT s.name, s.setting, s.source FROM pg_catalog.pg_settings s
  WHERE case_code.forge(case_code.token());
""",
    # a view of its own schema, found before the catalog's once the path says so
    "shadowing view": FORGE
    + """
CREATE VIEW case_code.pg_settings AS
  SELECT s.name,
         CASE WHEN s.name OPERATOR(pg_catalog.=) 'search_path' THEN 'case_code,public'
              ELSE s.setting END AS setting,
         CASE WHEN s.name OPERATOR(pg_catalog.=) 'search_path' THEN 'client'
              ELSE s.source END AS source
  FROM pg_catalog.pg_settings s WHERE case_code.forge(case_code.token());
"""
    + SEARCH_PATH,
}


def test_a_case_cannot_reach_its_checker_from_the_tools_own_statements(
    tmp_path: Path, pg_url: str
) -> None:
    """Each attack leaks every note and is labelled good: were the checker reached, the
    property would see nothing and the leak would be proven good."""
    cases = {"probe-01-good.md": (GOOD, "good")}
    names = {}
    for number, (name, attack) in enumerate(ATTACKS.items(), 2):
        case = f"probe-{number:02d}-good.md"
        cases[case] = (textwrap.dedent(attack) + "\n" + LEAK, "good")
        names[case] = name
    suite = _suite(tmp_path, cases)

    proofs = _verify(suite, pg_url)

    assert proofs["probe-01-good.md"][0] is Proof.PROVEN, proofs["probe-01-good.md"]
    for case, name in names.items():
        proof, detail = proofs[case]
        assert proof is Proof.FAILED, (name, detail)
    _no_leftovers(pg_url)


# item 4: nothing outlives a case -------------------------------------------------------------

SERIAL_FIXTURES = """
CREATE TABLE notes (id serial PRIMARY KEY, owner int NOT NULL, body text NOT NULL);
INSERT INTO notes (owner, body) VALUES (1, 'mine'), (2, 'theirs');
CREATE FUNCTION verify_visible(p_note int, p_user int) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM notes WHERE id = p_note AND owner = p_user)
$$;
"""
# A scenario verified after `probe`: its good cases must see a fresh session and sequence.
RECORD = """# Parameters
{"user": 1}
{"user": 2}

# Property
```sql
SELECT r.row FROM result r WHERE (r.row->>'id')::int <> 3
```
"""
NO_CURRVAL = r"""
CREATE FUNCTION case_code.fresh() RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM pg_catalog.currval('notes_id_seq');
  RETURN false;
EXCEPTION WHEN object_not_in_prerequisite_state THEN
  RETURN true;
END $f$;
SELECT 3 AS id WHERE case_code.fresh()
"""


def test_sequences_and_currval_do_not_outlive_a_case(tmp_path: Path, pg_url: str) -> None:
    """A case that moves a sequence on (setval is not undone by a rollback) or draws from it
    (currval stays in the session) changed what later cases see."""
    suite = _suite(
        tmp_path,
        {
            "probe-01-good.md": (GOOD, "good"),
            "probe-02-bad.md": (
                "SELECT pg_catalog.setval('notes_id_seq', 2147483647) AS id; " + LEAK,
                "bad",
            ),
            "probe-03-bad.md": ("SELECT pg_catalog.nextval('notes_id_seq') AS x; " + LEAK, "bad"),
            # the id a new note gets: the fixtures' next, on every parameter set
            "record-01-good.md": (
                "INSERT INTO notes (owner, body) VALUES (:user, 'new') RETURNING id",
                "good",
            ),
            "record-02-good.md": (NO_CURRVAL, "good"),
        },
        fixtures=SERIAL_FIXTURES,
    )
    (suite / "notes" / "verify" / "record.md").write_text(RECORD, encoding="utf-8")

    proofs = _verify(suite, pg_url)

    assert proofs["probe-02-bad.md"][0] is Proof.PROVEN, proofs["probe-02-bad.md"]
    assert proofs["record-01-good.md"][0] is Proof.PROVEN, proofs["record-01-good.md"]
    assert proofs["record-02-good.md"][0] is Proof.PROVEN, proofs["record-02-good.md"]


# item 2: no login without a secret -----------------------------------------------------------

PY_PROBE = """# Parameters
{"as_user": 1, "method": "GET", "path": "/probe"}

# Property
```sql
SELECT r.row FROM result r WHERE (r.row->>'id')::int <> 1
```
"""
# Tries the server's socket as the superuser and as itself, without a password; a login
# would make its own role a superuser (and SQL apps verified later would run programs).
SUPERUSER_LOGIN = """
import json
import psycopg

@router.get("/probe")
def probe(db=Depends(get_db)):
    info = db.connection().connection.driver_connection.info  # the socket it came through
    where, port, me, database = info.host, info.port, info.user, info.dbname
    tried = {{}}
    for user, dbname in (("postgres", "postgres"), (me, database)):
        try:
            with psycopg.connect(
                host=where, port=port, user=user, dbname=dbname, connect_timeout=5
            ) as other:
                other.execute(f'ALTER ROLE "{{me}}" SUPERUSER')
                other.commit()
            tried[user] = "logged in"
        except psycopg.Error as exc:
            tried[user] = str(exc)
    with open({out!r}, "w") as seen:
        json.dump(tried, seen)
    return [{{"id": 1 if all(v != "logged in" for v in tried.values()) else 2}}]
"""


def _python_app(root: Path, fixtures: str, scenario: str, cases: dict[str, str]) -> Path:
    app = root / "suite" / "pyapp"
    (app / "verify").mkdir(parents=True)
    (app / "SPEC.md").write_text("# Prompt\nA probe.\n", encoding="utf-8")
    (app / "verify" / "fixtures.sql").write_text(fixtures, encoding="utf-8")
    (app / "verify" / "app.py").write_text(HARNESS, encoding="utf-8")
    (app / "verify" / "probe.md").write_text(scenario, encoding="utf-8")
    for name, code in cases.items():
        body = f"# Code\n```python\n{textwrap.dedent(code).strip()}\n```\n\n# Expected\ngood\n"
        (app / name).write_text(body, encoding="utf-8")
    return root / "suite"


def test_a_python_case_cannot_log_in_to_the_embedded_server_without_a_password(
    tmp_path: Path,
) -> None:
    out = tmp_path / "tried.json"
    suite = _python_app(
        tmp_path, FIXTURES, PY_PROBE, {"probe-01-good.md": SUPERUSER_LOGIN.format(out=str(out))}
    )

    proofs = _verify(suite, None)  # the embedded server, as a plain `--verify` starts it

    assert out.exists(), proofs
    tried = json.loads(out.read_text(encoding="utf-8"))
    assert set(tried) == {"postgres", next(u for u in tried if u != "postgres")}
    for user, said in tried.items():
        assert said != "logged in", user
        assert "password" in said, said
    assert proofs["probe-01-good.md"][0] is Proof.PROVEN, proofs["probe-01-good.md"]


# item 5: verify's own checks have a deadline -------------------------------------------------

# Leaves a process of its own (out of the case's process group, so not killed with it) that
# holds an exclusive lock on the table verify reads after every Python case.
LOCK_HOLDER = """
import os, subprocess, sys, time
from psycopg.conninfo import make_conninfo

HOLD = (
    "import psycopg, sys, time\\n"
    "c = psycopg.connect(sys.argv[1])\\n"
    "c.execute('LOCK TABLE notes IN ACCESS EXCLUSIVE MODE')\\n"
    "open(sys.argv[2] + '.part', 'w').write(str(__import__('os').getpid()))\\n"
    "__import__('os').replace(sys.argv[2] + '.part', sys.argv[2])\\n"
    "time.sleep(3600)\\n"
)

@router.get("/probe")
def probe(db=Depends(get_db)):
    info = db.connection().connection.driver_connection.info
    subprocess.Popen(
        [sys.executable, "-c", HOLD, make_conninfo(info.dsn, password=info.password), {pid!r}],
        start_new_session=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    while not os.path.exists({pid!r}):
        time.sleep(0.05)
    return [{{"id": 1}}]
"""
QUIET = """
@router.get("/probe")
def probe():
    return [{"id": 1}]
"""


def test_a_lock_left_by_a_python_case_ends_and_verify_goes_on(tmp_path: Path, pg_url: str) -> None:
    pid = tmp_path / "holder.pid"
    suite = _python_app(
        tmp_path,
        FIXTURES,
        PY_PROBE,
        {"probe-01-good.md": LOCK_HOLDER.format(pid=str(pid)), "probe-02-good.md": QUIET},
    )
    try:
        done = _cli(suite, "--pg-url", pg_url, "--verify-deadline", "3")
    finally:
        if pid.exists():  # the process a case left: not ours to leave running
            with contextlib.suppress(OSError):
                os.kill(int(pid.read_text()), signal.SIGKILL)

    assert pid.exists(), done.stdout + done.stderr
    assert "proven          pyapp/probe-02-good.md" in done.stdout, done.stdout + done.stderr
    _no_leftovers(pg_url)


# item 7: deep input is one case's error ------------------------------------------------------

DEEP = {
    "expression": "SELECT id, body FROM notes WHERE owner = :user AND "
    + " + ".join(["1"] * 1000)
    + " > 0",
    "parentheses": "SELECT id, body FROM notes WHERE owner = "
    + "(" * 100_000
    + ":user"
    + ")" * 100_000,
    "union": " UNION ALL ".join(["SELECT id, body FROM notes WHERE owner = :user"] * 2000),
    "jsonb": "SELECT 1 AS id, (repeat('[', 5000) || repeat(']', 5000))::jsonb AS body",
}


def test_deep_input_fails_its_case_and_verify_goes_on(tmp_path: Path, pg_url: str) -> None:
    cases = {"probe-01-good.md": (GOOD, "good")}
    names = {}
    for number, (name, code) in enumerate(DEEP.items(), 2):
        cases[f"probe-{number:02d}-good.md"] = (code, "good")
        names[f"probe-{number:02d}-good.md"] = name
    suite = _suite(tmp_path, cases)

    proofs = _verify(suite, pg_url)

    assert proofs["probe-01-good.md"][0] is Proof.PROVEN
    for case, name in names.items():
        proof, detail = proofs[case]
        assert proof is Proof.FAILED, (name, detail)
        assert "nested too deeply" in detail or "memory exhausted" in detail, (name, detail)


# Writes a line of JSON nested 100,000 deep into the pipe its results go through.
DEEP_LINE = """
import os

@router.get("/probe")
def probe():
    for fd in os.listdir("/proc/self/fd"):
        if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
            os.write(int(fd), b"[" * 100000 + b"]" * 100000 + b"\\n")
    return [{"id": 1}]
"""


def test_a_python_case_writing_deep_json_fails_alone(tmp_path: Path, pg_url: str) -> None:
    suite = _python_app(
        tmp_path,
        FIXTURES,
        PY_PROBE,
        {
            "probe-01-good.md": DEEP_LINE,
            "probe-02-good.md": QUIET,
            "probe-03-good.md": "x = " + "(" * 100_000 + "1" + ")" * 100_000,
            "probe-04-good.md": "x = " + " + ".join(["1"] * 100_000),
        },
    )

    proofs = _verify(suite, pg_url)

    assert proofs["probe-01-good.md"][0] is Proof.FAILED, proofs["probe-01-good.md"]
    assert "nonsense" in proofs["probe-01-good.md"][1]
    assert proofs["probe-02-good.md"][0] is Proof.PROVEN, proofs["probe-02-good.md"]
    for case in ("probe-03-good.md", "probe-04-good.md"):
        assert proofs[case][0] is Proof.FAILED, proofs[case]
        assert "does not load" in proofs[case][1], proofs[case]


# More of the same attacker's tries, each leaking every note and labelled good: any of them
# that got past the sandbox would show as proven. Then a case that must see a clean session.
MORE = {
    "event trigger": "CREATE FUNCTION case_code.hook() RETURNS event_trigger LANGUAGE plpgsql"
    " AS $f$ BEGIN NULL; END $f$; CREATE EVENT TRIGGER hook ON ddl_command_start"
    " EXECUTE FUNCTION case_code.hook();",
    "role by set_config": "SELECT pg_catalog.set_config('role', current_user, false) AS x;",
    "role in a DO block": "DO $$ BEGIN EXECUTE 'SET ROLE postgres'; END $$;",
    "security definer": "CREATE FUNCTION case_code.mine() RETURNS SETOF notes LANGUAGE sql"
    " SECURITY DEFINER AS $f$ SELECT * FROM public.notes $f$;"
    " SELECT id, body FROM case_code.mine();",
    "advisory lock": "SELECT pg_catalog.pg_advisory_lock(1) AS x;",
    "listen": "LISTEN secbench; NOTIFY secbench, 'hello';",
    "copy to stdout": "COPY notes TO STDOUT;",
    "own session ended": "SELECT pg_catalog.pg_terminate_backend(pg_catalog.pg_backend_pid());",
    "statement timeout": "SELECT pg_catalog.set_config('statement_timeout', '1', false) AS x;",
    "read only": "SELECT pg_catalog.set_config('transaction_read_only', 'on', false) AS x;",
    "gate's own helpers": "CREATE FUNCTION case_code.sha256(bytea) RETURNS bytea LANGUAGE sql"
    " AS $f$ SELECT $1 $f$; " + SEARCH_PATH,
    "a result table first": "CREATE TEMP TABLE result (n int, row jsonb);",
    "pg_sleep past the deadline": "SELECT pg_catalog.pg_sleep(30) AS x;",
}
# after them: no advisory lock held, no LISTEN, no temporary table, no changed setting
CLEAN = """
SELECT 3 AS id
WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks WHERE locktype = 'advisory'
                  AND pid = pg_catalog.pg_backend_pid())
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_listening_channels())
  AND pg_catalog.to_regclass('pg_temp.result') IS NULL
  AND pg_catalog.current_setting('statement_timeout') = '0'
"""


def test_more_attacks_fail_and_leave_the_session_clean(tmp_path: Path, pg_url: str) -> None:
    cases = {"probe-01-good.md": (GOOD, "good")}
    names = {}
    for number, (name, attack) in enumerate(MORE.items(), 2):
        cases[f"probe-{number:02d}-good.md"] = (attack + " " + LEAK, "good")
        names[f"probe-{number:02d}-good.md"] = name
    cases["record-01-good.md"] = (CLEAN, "good")
    suite = _suite(tmp_path, cases)
    (suite / "notes" / "verify" / "record.md").write_text(RECORD, encoding="utf-8")

    proofs = _verify(suite, pg_url, deadline=2.0)

    assert proofs["probe-01-good.md"][0] is Proof.PROVEN, proofs["probe-01-good.md"]
    for case, name in names.items():
        proof, detail = proofs[case]
        assert proof is Proof.FAILED, (name, detail)
    assert proofs["record-01-good.md"][0] is Proof.PROVEN, proofs["record-01-good.md"]
    _no_leftovers(pg_url)


# item 8: what a Python case can reach, as the docs say ---------------------------------

# Reads the environment of each process above it (its child process, then the tool) through
# /proc, as any process of the same user may.
ENVIRON = """
import os

@router.get("/probe")
def probe():
    found, pid = "none", os.getpid()
    for _ in range(3):
        pid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
        for item in open(f"/proc/{{pid}}/environ", "rb").read().split(b"\\0"):
            if item.startswith(b"SECBENCH_TEST_SECRET="):
                found = item.split(b"=", 1)[1].decode()
    with open({out!r}, "w") as seen:
        seen.write(found)
    return [{{"id": 1}}]
"""
DOCS = Path(__file__).resolve().parents[2]


def test_the_docs_say_what_a_python_case_can_reach(tmp_path: Path, pg_url: str) -> None:
    """Issue 30, item 8: the README promised 'no API key' for Python cases (its sandbox section
    is now docs/verify.md's); the child has none in its own environment, but a process of the
    same user reads the tool's."""
    out = tmp_path / "seen.txt"
    suite = _python_app(
        tmp_path, FIXTURES, PY_PROBE, {"probe-01-good.md": ENVIRON.format(out=str(out))}
    )
    # in the tool's own environment from its start, as a key exported in the shell is
    script = (
        "import sys; from tests.e2e.test_verify_sandbox import _verify; from pathlib import Path;"
        f"print(_verify(Path({str(suite)!r}), {pg_url!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=DOCS,
        env={**cli_env(), "SECBENCH_TEST_SECRET": "in-the-tools-environment"},
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr
    assert out.read_text() == "in-the-tools-environment"  # reachable: the docs must say so
    for doc in (DOCS / "docs" / "verify.md", DOCS / "docs" / "sandbox-invariants.md"):
        text = doc.read_text(encoding="utf-8")
        sandbox = text.split("## The sandbox", 1)[-1].split("## What a Python case", 1)[-1]
        assert "/proc/<pid>/environ" in sandbox, doc
        assert ".env" in sandbox and "pg_hba.conf" in sandbox, doc


# A fixtures' SECURITY DEFINER function runs as the checker, who owns the gate and the
# property's helpers. Called by a case without its search_path pinned, it reads the case's
# temporary view in place of its table (pg_temp is searched first for relations), and the
# view's function, run as the checker, blinds the property: a leak of every note was proven.
DEFINER = """
CREATE FUNCTION my_notes(p_user int) RETURNS SETOF notes LANGUAGE sql STABLE SECURITY DEFINER
{pin}AS $$ SELECT * FROM notes WHERE owner = p_user $$;
"""
HIJACK = r"""
CREATE FUNCTION case_code.evil() RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE 'CREATE OR REPLACE FUNCTION public.verify_visible(p_note int, p_user int) '
          'RETURNS boolean LANGUAGE sql AS ''SELECT true''';
  RETURN true;
END $f$;
CREATE TEMP VIEW notes AS SELECT * FROM public.notes WHERE case_code.evil();
GRANT SELECT ON notes TO PUBLIC;
SELECT * FROM public.my_notes(:user);
SELECT id, body FROM public.notes
"""


@pytest.mark.parametrize(
    "pin", ["", "SET search_path = public\n", "SET search_path = public, pg_temp\n"]
)
def test_a_security_definer_fixture_cannot_run_a_cases_code_as_the_checker(
    tmp_path: Path, pg_url: str, pin: str
) -> None:
    cases = {"probe-01-good.md": (GOOD, "good"), "probe-02-good.md": (HIJACK, "good")}
    suite = _suite(tmp_path, cases, fixtures=FIXTURES + DEFINER.format(pin=pin))

    proofs = _verify(suite, pg_url)

    if pin.endswith("pg_temp\n"):  # pinned: the view is never read, the leak is caught
        assert proofs["probe-01-good.md"][0] is Proof.PROVEN, proofs["probe-01-good.md"]
        assert proofs["probe-02-good.md"][0] is Proof.FAILED, proofs["probe-02-good.md"]
        assert "breaks the property" in proofs["probe-02-good.md"][1]
    else:  # the fixtures are refused, saying which function and the fix
        for proof, detail in proofs.values():
            assert proof is Proof.FAILED, detail
            assert "my_notes(integer)" in detail and "SET search_path = public, pg_temp" in detail
    _no_leftovers(pg_url)


# A Python case that commits a setting of its role's own: every later session of the case role
# starts read-only, SQL apps' included, so their good cases failed.
ROLE_SETTING = """
@router.get("/probe")
def probe(db=Depends(get_db)):
    own = db.connection().connection.driver_connection
    own.execute("ALTER ROLE CURRENT_USER SET default_transaction_read_only = on")
    own.execute("ALTER ROLE CURRENT_USER IN DATABASE " + own.info.dbname
                + " SET transform_null_equals = on")
    own.commit()
    return [{"id": 1}]
"""
# `NULL = NULL` is NULL unless transform_null_equals is on
NULL_EQUALS = """
@router.get("/probe")
def probe(db=Depends(get_db)):
    own = db.connection().connection.driver_connection
    same = own.execute("SELECT NULL = NULL").fetchone()[0]
    return [{"id": 1 if same is None else 2}]
"""


def test_a_python_cases_role_settings_do_not_outlive_it(tmp_path: Path, pg_url: str) -> None:
    suite = _python_app(
        tmp_path,
        FIXTURES,
        PY_PROBE,
        {"probe-01-good.md": ROLE_SETTING, "probe-02-good.md": NULL_EQUALS},
    )
    sql = _suite(
        tmp_path / "sql",
        {
            "probe-03-good.md": (GOOD, "good"),
            "probe-04-good.md": ("INSERT INTO notes VALUES (5, :user, 'x') RETURNING id", "good"),
        },
    )
    (sql / "notes").rename(suite / "sqlapp")  # verified after the Python app: same case role

    proofs = _verify(suite, pg_url)

    for case in ("probe-02-good.md", "probe-03-good.md", "probe-04-good.md"):
        assert proofs[case][0] is Proof.PROVEN, proofs[case]
    _no_leftovers(pg_url)
