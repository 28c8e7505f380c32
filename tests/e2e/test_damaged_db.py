"""A results file with damaged pages: `--report`, `--export` and `--rescore` say so and stop.

Issue 30, item 8: each ended with a `sqlite3.DatabaseError` traceback from whichever page its
first query read. A real file, written by a real run (a baseline model: no network), then
damaged the way a disk or a copy cut short damages one: pages overwritten.
"""

from __future__ import annotations

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
