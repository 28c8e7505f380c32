"""Helpers for end-to-end tests: write a suite, run the real command, read the database back.

Every case written by `write_suite` carries a unique marker in its code (`<<case:app-0003>>`)
so the loopback server can be scripted per case and can count the requests made for it.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_SUITE = REPO_ROOT / "tests" / "fixtures" / "suite"
MODEL = "openai/gpt-4o-mini"
# A key shaped like OpenRouter's; it must never show up in the database or the output.
FAKE_KEY = "sk-or-v1-e2e0d1c2b3a4f5e6d7c8b9a0fedcba9876543210secret"


@dataclass(frozen=True)
class SuiteCase:
    app: str
    name: str
    expected: str
    marker: str

    @property
    def case_id(self) -> str:
        return f"{self.app}/{self.name}.md"


def write_suite(root: Path, apps: dict[str, Sequence[str]]) -> list[SuiteCase]:
    """One folder per app; `apps` maps an app to its cases' expected verdicts, in order.

    The code of each case names its expected verdict (`expect:bad`), which the loopback
    server's default responder answers, so an unscripted case comes out correct.
    """
    cases: list[SuiteCase] = []
    for app, verdicts in apps.items():
        folder = root / app
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SPEC.md").write_text(
            f"# Prompt\nThe {app} service. Orders(id, tenant_id, total).\n"
            "1. Every query filters by tenant_id.\n",
            encoding="utf-8",
        )
        for n, expected in enumerate(verdicts, start=1):
            case = SuiteCase(app, f"case-{n:04d}-{expected}", expected, f"<<case:{app}-{n:04d}>>")
            where = "" if expected == "bad" else " AND tenant_id = :tenant_id"
            (folder / f"{case.name}.md").write_text(
                f"# Code\n```sql\n-- {case.marker} expect:{expected}\n"
                f"SELECT id, total FROM orders WHERE id = :id{where};\n```\n\n"
                f"# Expected\n{expected}\n",
                encoding="utf-8",
            )
            cases.append(case)
    return cases


# --- a hostile suite and an endpoint URL with credentials (issue 10) ---------------------------

USER, PASSWORD, QUERY_SECRET = "alice", "pa55-in-userinfo", "qs-secret-0123456789"
# Case file names: an OSC title and a clear-screen, a newline, Textual markup.
EVIL_NAME = "evil-\x1b]0;pwned-title\x07\x1b[2J-01-bad"
NEWLINE_NAME = "split\nline-02-good"
MARKUP_NAME = "[bold red]loud [@click=app.quit]quit-03-good"  # no "/" in a file name


def secret_url(port: int) -> str:
    """The loopback server's --base-url with credentials in the user info and the query."""
    return f"http://{USER}:{PASSWORD}@127.0.0.1:{port}/api/v1?api_key={QUERY_SECRET}"


def write_hostile_suite(root: Path) -> dict[str, str]:
    """Four cases; returns each one's marker by case id."""
    folder = root / "shop"
    folder.mkdir(parents=True)
    (folder / "SPEC.md").write_text(
        "# Prompt\nThe shop service.\n1. Every query filters by tenant_id.\n", encoding="utf-8"
    )
    markers = {}
    for n, (name, expected) in enumerate(
        [(EVIL_NAME, "bad"), (NEWLINE_NAME, "good"), (MARKUP_NAME, "good"), ("plain-04", "bad")],
        start=1,
    ):
        marker = f"<<hostile:{n}>>"
        (folder / f"{name}.md").write_text(
            f"# Code\n```sql\n-- {marker}\nSELECT 1;\n```\n\n# Expected\n{expected}\n",
            encoding="utf-8",
        )
        markers[f"shop/{name}.md"] = marker
    return markers


@functools.cache
def _scratch_cache() -> str:
    """A cache folder for this process's commands, removed when it ends: never `~/.cache`."""
    folder = tempfile.mkdtemp(prefix="secbench-cache-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def cli_env(key: str | None = None, **extra: str) -> dict[str, str]:
    """The environment for the command: this work tree importable, no stray key or proxy."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.upper().startswith(("OPENROUTER_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"))
        and k.upper() != "NO_PROXY"
    }
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    )
    env["PYTHONUNBUFFERED"] = "1"
    # tests set their own (tests/conftest.py); any other caller gets a folder of its own
    env.setdefault("XDG_CACHE_HOME", _scratch_cache())
    if key is not None:
        env["OPENROUTER_API_KEY"] = key
    env.update(extra)
    return env


# Retries come after 10 ms, not after half a second doubling: the tests check that and how a
# failure is retried, not the backoff's length (tests/unit/test_retry.py does). A test that
# gives --retry-backoff itself gets its own (the last of a flag given twice wins).
RETRY_BACKOFF = 0.01


def cli_args(base_url: str, db: Path, cases: Path, *extra: str, model: str = MODEL) -> list[str]:
    return [
        sys.executable,
        "-m",
        "secbench_tui",
        "--no-ui",
        "--model",
        model,
        "--base-url",
        base_url,
        "--db",
        str(db),
        "--cases",
        str(cases),
        "--retry-backoff",
        str(RETRY_BACKOFF),
        *extra,
    ]


def run_cli(
    base_url: str,
    db: Path,
    cases: Path,
    *extra: str,
    key: str | None = None,
    model: str = MODEL,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m secbench_tui --no-ui ...` to the end, from `db`'s folder."""
    return subprocess.run(
        cli_args(base_url, db, cases, *extra, model=model),
        cwd=db.parent,
        env=env if env is not None else cli_env(key),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_cli(
    base_url: str, db: Path, cases: Path, *extra: str, key: str | None = None
) -> subprocess.Popen[str]:
    out = open(db.parent / "stdout.txt", "w", encoding="utf-8")  # noqa: SIM115 - owned by Popen
    err = open(db.parent / "stderr.txt", "w", encoding="utf-8")  # noqa: SIM115
    return subprocess.Popen(
        cli_args(base_url, db, cases, *extra),
        cwd=db.parent,
        env=cli_env(key),
        stdout=out,
        stderr=err,
        text=True,
    )


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    """Poll a condition on state (a file, a row count); fail with `what` if it never holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def interrupt(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)


def connect(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    conn.row_factory = sqlite3.Row
    return conn


def rows(db: Path, run_id: int | None = None) -> list[dict[str, Any]]:
    """Every evaluation (of one run), in case order."""
    with closing(connect(db)) as conn:
        if run_id is None:
            cur = conn.execute("SELECT * FROM evaluations ORDER BY run_id, case_index, repeat")
        else:
            cur = conn.execute(
                "SELECT * FROM evaluations WHERE run_id=? ORDER BY case_index, repeat", (run_id,)
            )
        return [dict(r) for r in cur.fetchall()]


def count_rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with closing(connect(db)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def runs(db: Path) -> list[dict[str, Any]]:
    with closing(connect(db)) as conn:
        return [dict(r) for r in conn.execute("SELECT * FROM runs ORDER BY id").fetchall()]


def by_case(db: Path, run_id: int | None = None) -> dict[str, dict[str, Any]]:
    """Rows keyed by case id; fails if a case appears twice."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows(db, run_id):
        key = row["case_id"] if row["repeat"] == 0 else f"{row['case_id']}#{row['repeat']}"
        assert key not in found, f"{key} recorded twice"
        found[key] = row
    return found


def all_bytes(*paths: Path) -> bytes:
    """The bytes of files that exist (a database with its -wal and -shm, an output file)."""
    data = b""
    for path in paths:
        for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-journal")):
            if candidate.exists():
                data += candidate.read_bytes()
    return data
