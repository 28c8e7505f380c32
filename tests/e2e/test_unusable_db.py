"""Results files the commands cannot use: each is named with the way out, and left as it was.

A file with damaged pages: `--report`, `--export` and `--rescore` ended with a
`sqlite3.DatabaseError` traceback from whichever page their first query read (issue 30, item
8). A real file, written by a real run (a baseline model: no network), then damaged the way a
disk or a copy cut short damages one: pages overwritten. And a database that is not the
original evaluator's, though it has a table named `evaluations`.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from secbench_tui.config import bundled_cases_dir
from tests.e2e.harness import cli_env

PAGE = 4096


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secbench_tui", *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("damaged")
    db = folder / "results.db"
    done = _cli(
        folder,
        "--no-ui",
        "--model",
        "baseline/always-good",
        "--db",
        str(db),
        "--cases",
        str(bundled_cases_dir()),
        "--apps",
        "purchase-order",
    )
    assert done.returncode == 0, done.stderr
    data = bytearray(db.read_bytes())
    for page in range(2, len(data) // PAGE, 3):  # the schema's page whole, data pages not
        data[page * PAGE : (page + 1) * PAGE] = b"\xab" * PAGE
    db.write_bytes(bytes(data))
    return db


@pytest.mark.parametrize(
    "command",
    [("--report", "--out", "report.html"), ("--export", "json"), ("--rescore",)],
    ids=["report", "export", "rescore"],
)
def test_a_damaged_database_is_named_with_the_way_out(
    damaged: Path, command: tuple[str, ...]
) -> None:
    before = damaged.read_bytes()

    done = _cli(damaged.parent, *command, "--db", str(damaged))

    assert done.returncode == 3, done.stdout + done.stderr  # as any database that cannot be used
    assert "Traceback" not in done.stderr
    assert f"--db {damaged}: the database is damaged" in done.stderr, done.stderr
    assert ".recover" in done.stderr
    assert damaged.read_bytes() == before  # nothing written into it
    assert not (damaged.parent / "report.html").exists()


# Not the original evaluator's: a table named evaluations with other columns (with or without
# an id), and a database of someone else's with no such table.
FOREIGN = {
    "with-id": "CREATE TABLE evaluations (id INTEGER PRIMARY KEY, score REAL, note TEXT);"
    "INSERT INTO evaluations (score, note) VALUES (0.5, 'junk')",
    "without-id": "CREATE TABLE evaluations (score REAL, note TEXT);"
    "INSERT INTO evaluations VALUES (0.5, 'junk')",
    "other-tables": "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL);"
    "INSERT INTO invoices (total) VALUES (12.5)",
}


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_a_foreign_database_is_refused_unchanged_and_uncopied(tmp_path: Path, kind: str) -> None:
    """Issue 30, item 8: any file with a table named `evaluations` was adopted as the original
    evaluator's (a junk imported run appeared, even on --report), and a refused one got one
    more backup copy per attempt."""
    db = tmp_path / "theirs.db"
    conn = sqlite3.connect(db)
    conn.executescript(FOREIGN[kind])
    conn.close()
    before = db.read_bytes()

    for _ in range(2):  # refused the same way each time, and never copied
        done = _cli(tmp_path, "--report", "--out", "report.html", "--db", str(db))
        assert done.returncode == 3, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        assert f"--db {db}: not a secbench-tui database" in done.stderr, done.stderr

    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs.db"]
