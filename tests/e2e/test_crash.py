"""Proof that a run loses no paid work: SIGKILL midway, Ctrl+C, then resume.

The server's request log is the witness: a case whose result was in the database when the
process died must never be asked again, and every case must end up recorded exactly once.
"""

from __future__ import annotations

import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from tests.e2e import server as srv
from tests.e2e.harness import (
    FAKE_KEY,
    SuiteCase,
    by_case,
    count_rows,
    interrupt,
    rows,
    run_cli,
    runs,
    start_cli,
    wait_for,
    write_suite,
)
from tests.e2e.server import LoopbackServer

EXIT_INTERRUPTED = 130


def make_suite(root: Path, n: int) -> list[SuiteCase]:
    return write_suite(
        root, {"alpha": ["good", "bad"] * (n // 4), "beta": ["bad", "good"] * (n // 4)}
    )


def integrity(db: Path) -> str:
    with closing(sqlite3.connect(db)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> int:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


def stderr_of(db: Path) -> str:
    return (db.parent / "stderr.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("again", ["--resume", "rerun"])
def test_sigkill_midway_then_again_asks_only_what_was_missing(tmp_path: Path, again: str) -> None:
    cases = make_suite(tmp_path / "suite", 40)
    db = tmp_path / "results.db"
    with LoopbackServer(delay=0.1) as server:
        # a dozen answered, the rest held in flight: the kill comes midway however long the
        # test takes to see the dozen (without the hold a loaded machine saw the run finish)
        server.hold_after(12)
        proc = start_cli(
            server.base_url, db, tmp_path / "suite", "--concurrency", "4", key=FAKE_KEY
        )
        try:
            wait_for(lambda: count_rows(db) >= 12, "a dozen results")
        finally:
            proc.kill()  # SIGKILL: no handler runs, nothing is flushed or closed
            proc.wait()
        kept = {r["case_id"] for r in rows(db)}
        asked_before = len(server.completions())
        server.release()
        assert 12 <= len(kept) < len(cases)

        extra = ["--resume"] if again == "--resume" else []
        result = run_cli(
            server.base_url, db, tmp_path / "suite", "--concurrency", "4", *extra, key=FAKE_KEY
        )
        assert result.returncode == 0, result.stderr

        all_runs = runs(db)
        assert all_runs[-1]["status"] == "completed"
        final = by_case(db, all_runs[-1]["id"])  # fails on a duplicate
        assert sorted(final) == sorted(c.case_id for c in cases)
        for case in cases:
            asked = server.count(case.marker)
            if case.case_id in kept:
                assert asked == 1, f"{case.case_id} was finished, yet asked {asked} times"
            else:
                assert asked in (1, 2), case.case_id  # 2 when it was in flight at the kill
            assert final[case.case_id]["outcome"] == "correct"
        assert len(server.completions()) - asked_before <= len(cases) - len(kept)

    if again == "--resume":
        assert len(all_runs) == 1
        assert (
            f"resumed: openai/gpt-4o-mini, {len(cases)} cases, "
            f"{len(cases) - len(kept)} to ask" in result.stdout
        )
    else:
        # A new run: the paid-for results are reused, and the summary says so.
        assert len(all_runs) == 2
        reused = [r for r in final.values() if r["reused_from"] is not None]
        assert {r["case_id"] for r in reused} == kept
        assert f"reused {len(kept)}" in result.stdout
    assert integrity(db) == "ok"


def test_first_ctrl_c_finishes_the_cases_in_flight_and_exits_130(tmp_path: Path) -> None:
    cases = make_suite(tmp_path / "suite", 24)
    db = tmp_path / "results.db"
    with LoopbackServer() as server:
        server.hold_after(4)  # the second wave stays in flight until Ctrl+C has been heard
        proc = start_cli(server.base_url, db, tmp_path / "suite", "--concurrency", "4")
        try:
            wait_for(
                lambda: count_rows(db) >= 4 and server.in_flight == 4,
                "a first wave recorded and a second in flight",
            )
            interrupt(proc)
            wait_for(lambda: "stopping" in stderr_of(db), "the Ctrl+C to be heard")
            server.release()  # the cases in flight answer within their grace
            code = finish(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
        asked = {c.case_id for c in cases if server.count(c.marker)}

        assert code == EXIT_INTERRUPTED, stderr_of(db)
        assert "stopping" in stderr_of(db)
        (run,) = runs(db)
        assert run["status"] == "stopped"
        recorded = by_case(db)
        # Every case that was asked, in flight at Ctrl+C included, was finished and recorded.
        assert set(recorded) == asked
        assert len(recorded) < len(cases)
        assert all(r["outcome"] == "correct" for r in recorded.values())
        assert integrity(db) == "ok"
        assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0

        result = run_cli(server.base_url, db, tmp_path / "suite", "--concurrency", "4", "--resume")
        assert result.returncode == 0, result.stderr
        assert sorted(by_case(db)) == sorted(c.case_id for c in cases)
        assert all(server.count(c.marker) == 1 for c in cases)
        assert runs(db)[0]["status"] == "completed"


def test_second_ctrl_c_quits_at_once_keeping_what_was_finished(tmp_path: Path) -> None:
    cases = make_suite(tmp_path / "suite", 16)
    db = tmp_path / "results.db"
    with LoopbackServer(delay=0.2) as server:
        for case in cases[4:8]:  # the second wave hangs until long after the test
            server.always(case.marker, srv.answer(case.expected).after(10))
        proc = start_cli(server.base_url, db, tmp_path / "suite", "--concurrency", "4")
        try:
            wait_for(
                lambda: count_rows(db) >= 4 and server.in_flight == 4,
                "the slow second wave in flight",
            )
            interrupt(proc)
            wait_for(lambda: "stopping" in stderr_of(db), "the first Ctrl+C to be heard")
            interrupt(proc)
            code = finish(proc, timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert code == EXIT_INTERRUPTED
        recorded = by_case(db)
        assert sorted(recorded) == sorted(c.case_id for c in cases[:4])
        assert integrity(db) == "ok"

        server.reset()
        result = run_cli(server.base_url, db, tmp_path / "suite", "--concurrency", "4", "--resume")
        assert result.returncode == 0, result.stderr
        assert sorted(by_case(db)) == sorted(c.case_id for c in cases)
        assert all(server.count(c.marker) == 0 for c in cases[:4])
        assert all(server.count(c.marker) == 1 for c in cases[4:])
