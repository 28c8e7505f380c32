"""`--batch` is crash-safe (issue 35): `kill -9` while a batch is in progress, then `--resume`
or the same command again, submits nothing new and stores every result; polls that fail (a
dropped connection, 503, 429 with Retry-After) are polled again, not fatal.

The emulator's counts are the witness: the batches it accepted, the polls it answered.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.e2e.batch_server import BatchLoopback, BatchPlan
from tests.e2e.harness import (
    FAKE_KEY,
    by_case,
    interrupt,
    rows,
    run_cli,
    runs,
    start_cli,
    wait_for,
    write_suite,
)
from tests.e2e.server import dropped, rate_limited, server_error

BATCH = ("--batch", "--batch-api", "openrouter", "--batch-poll", "0.01")


def open_batches(db: Path) -> list[tuple[object, ...]]:
    if not db.exists():
        return []
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            return conn.execute(
                "SELECT provider_batch_id, status FROM batches WHERE read_at IS NULL"
            ).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []


@pytest.mark.parametrize("again", ["--resume", "rerun"])
def test_kill_9_while_a_batch_is_in_progress_then_again_submits_nothing_new(
    tmp_path: Path, again: str
) -> None:
    cases = write_suite(tmp_path / "suite", {"alpha": ["good", "bad"] * 3})
    db = tmp_path / "r.db"
    with BatchLoopback("openrouter") as server:
        server.plan(BatchPlan(statuses=("validating", "in_progress"), hold=True))
        proc = start_cli(server.base_url, db, tmp_path / "suite", *BATCH, key=FAKE_KEY)
        try:  # polled twice: the batch's id was committed before the first poll
            wait_for(lambda: server.polled() >= 2, "the batch polled twice")
            assert [status for _, status in open_batches(db)] != ["submitting"]
        finally:
            proc.kill()  # SIGKILL: no handler runs, nothing is flushed or closed
            proc.wait()
        (kept,) = open_batches(db)
        assert kept[0] in server.batches  # the provider's id, committed
        assert rows(db) == []
        server.finish()  # the batch ends while nobody watches

        extra = ["--resume"] if again == "--resume" else []
        result = run_cli(server.base_url, db, tmp_path / "suite", *BATCH, *extra, key=FAKE_KEY)

        assert result.returncode == 0, result.stderr
        assert len(server.submissions) == 1  # the same batch, polled, never sent again
        assert server.completions() == []
    run_id = 1 if again == "--resume" else 2
    stored = by_case(db, run_id)
    assert set(stored) == {c.case_id for c in cases}
    assert all(row["outcome"] == "correct" for row in stored.values())
    assert runs(db)[run_id - 1]["status"] == "completed"
    assert open_batches(db) == []


def test_polls_that_fail_are_polled_again(tmp_path: Path) -> None:
    write_suite(tmp_path / "suite", {"alpha": ["good", "bad"]})
    db = tmp_path / "r.db"
    with BatchLoopback("openrouter") as server:
        server.poll_faults = [dropped(), server_error(503), rate_limited(0.02), server_error(502)]
        result = run_cli(server.base_url, db, tmp_path / "suite", *BATCH, key=FAKE_KEY)
        assert result.returncode == 0, result.stderr
        assert server.polls >= 4 + 3 and len(server.submissions) == 1
    assert [r["outcome"] for r in rows(db)] == ["correct", "correct"]
    assert "last poll:" in result.stdout  # the failure was said, and waited out


def test_ctrl_c_while_waiting_stops_at_once_and_resume_collects(tmp_path: Path) -> None:
    write_suite(tmp_path / "suite", {"alpha": ["good", "bad"] * 2})
    db = tmp_path / "r.db"
    with BatchLoopback("openrouter") as server:
        server.plan(BatchPlan(hold=True))
        proc = start_cli(server.base_url, db, tmp_path / "suite", *BATCH, key=FAKE_KEY)
        try:
            wait_for(lambda: server.polled() >= 2, "the batch polled twice")
            interrupt(proc)
            assert proc.wait(timeout=60) == 130
        finally:
            if proc.poll() is None:
                proc.kill()
        assert runs(db)[0]["status"] == "stopped" and rows(db) == []
        assert len(open_batches(db)) == 1
        server.finish()
        result = run_cli(server.base_url, db, tmp_path / "suite", *BATCH, "--resume", key=FAKE_KEY)
        assert result.returncode == 0, result.stderr
        assert len(server.submissions) == 1
    assert [r["outcome"] for r in rows(db, 1)] == ["correct"] * 4
