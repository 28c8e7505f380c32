"""Headless output piped into `head`: the run ends quietly when the reader goes away."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.e2e.harness import cli_env

EXIT_BROKEN_PIPE = 141  # secbench_tui.exit_codes: 128 + SIGPIPE, as a shell reports `| head`


def test_a_reader_that_leaves_ends_the_run_quietly_and_keeps_the_results(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "secbench_tui", "--no-ui", "--model", "baseline/random"]
        + ["--db", str(db), "--summary-json", str(tmp_path / "s.json")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
        cwd=tmp_path,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `head -1` does after its line
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == EXIT_BROKEN_PIPE, err
    assert first.startswith("Run 1 started")
    assert "Traceback" not in err and "BrokenPipe" not in err
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
        (status,) = conn.execute("SELECT status FROM runs").fetchone()
    assert stored >= 1 and status in ("stopped", "completed")
    assert (tmp_path / "s.json").exists()  # the summary is still written where asked
