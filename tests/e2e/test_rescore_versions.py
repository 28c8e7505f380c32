"""`--rescore` never scores a result again with an older scoring than the one that scored it.

Issue 30, item 8: a database shared between versions had the results a newer secbench-tui
scored scored again by the older one, undoing whatever the newer scoring fixed. A real run
(a baseline model: no network) writes the file; some of its results are then marked as a
newer version left them.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.results.grading import SCORING_VERSION
from tests.e2e.harness import cli_env, rows


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secbench_tui", *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_results_of_a_newer_scoring_are_left_as_they_are(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    cases = str(bundled_cases_dir())
    done = _cli(
        tmp_path, "--no-ui", "--model", "baseline/random", "--db", str(db), "--cases", cases
    )
    assert done.returncode == 0, done.stderr
    newer = SCORING_VERSION + 1
    with closing(sqlite3.connect(db)) as conn:  # as a newer version scored them: other words
        marked = conn.execute(
            "UPDATE evaluations SET scoring_version = ?, outcome = 'unparsed',"
            " reasons = '{\"newer\": true}' WHERE id % 3 = 0 AND raw_reply IS NOT NULL",
            [newer],
        ).rowcount
        conn.commit()
    assert marked > 0
    before = {r["id"]: r for r in rows(db)}

    done = _cli(tmp_path, "--rescore", "--db", str(db))

    assert done.returncode == 0, done.stderr
    assert f"left {marked} results as they are" in done.stdout, done.stdout
    assert f"scoring version up to {newer}" in done.stdout
    for row in rows(db):
        if before[row["id"]]["scoring_version"] == newer:
            assert row == before[row["id"]]  # untouched
        elif row["raw_reply"] is not None:
            assert row["scoring_version"] == SCORING_VERSION
