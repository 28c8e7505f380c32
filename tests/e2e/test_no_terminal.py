"""No terminal, no app: the real command, its standard streams pipes, as in a CI job.

Without `--no-ui` the terminal app would start and wait for keys that never come; where
standard input or output is not a terminal the command runs headless instead and says so on
stderr, and without a model (nothing to run headless) it exits 2 naming `--no-ui`.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from tests.e2e.harness import REPO_ROOT, write_suite

LIMIT_SECONDS = 60  # the app, had it started, would never end on its own


def _command(
    tmp_path: Path, *args: str, stdin: int | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    return subprocess.run(
        [sys.executable, "-m", "secbench_tui", *args],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO_ROOT)},
        **({"input": ""} if stdin is None else {"stdin": stdin}),  # a pipe, or what is given
        capture_output=True,
        text=True,
        timeout=LIMIT_SECONDS,
    )


def test_a_piped_command_with_a_model_runs_headless_and_says_so(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    write_suite(suite, {"alpha": ["good", "bad"]})
    db = tmp_path / "r.db"
    result = _command(
        tmp_path, "--model", "baseline/always-bad", "--cases", str(suite), "--db", str(db)
    )
    assert result.returncode == 0, result.stderr
    assert "not a terminal: running headless (--no-ui)" in result.stderr
    assert "[2/2] alpha/" in result.stdout  # the headless progress lines, on the pipe
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 2


def test_only_output_piped_still_runs_headless(tmp_path: Path) -> None:
    """stdin from /dev/null, stdout a pipe: neither is a terminal."""
    suite = tmp_path / "suite"
    write_suite(suite, {"alpha": ["good", "bad"]})
    with open(os.devnull) as devnull:
        result = _command(
            tmp_path,
            *("--model", "baseline/random", "--cases", str(suite)),
            stdin=devnull.fileno(),
        )
    assert result.returncode == 0, result.stderr
    assert "running headless" in result.stderr


def test_without_a_model_it_exits_2_naming_no_ui(tmp_path: Path) -> None:
    result = _command(tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("secbench-tui: error: no terminal")
    assert "--no-ui" in result.stderr and "--model" in result.stderr
    assert result.stdout == ""
    assert not (tmp_path / "results.db").exists()  # nothing was started
