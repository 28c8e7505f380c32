"""`--resume` continues exactly what is unfinished, and nothing else (issue 22).

- a run whose answers are all stored but whose status is still `running` (what kill -9 leaves
  between the last answer and the run's end) is finished, not duplicated;
- in a matrix, only the cells with an unfinished run are continued; the others are left alone;
- when nothing is unfinished it says "nothing to resume", exits 0 and writes nothing.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from tests.e2e.harness import rows, run_cli, runs, write_suite
from tests.e2e.server import LoopbackServer

DEAD_PID = 2**22 + 12345  # above any pid_max: no such process


def kill_9_state(db: Path, run_id: int, drop_last: bool = False) -> None:
    """What kill -9 leaves: the run still `running` under a process that is gone."""
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(
            "UPDATE runs SET status='running', finished_at=NULL, pid=? WHERE id=?",
            (DEAD_PID, run_id),
        )
        if drop_last:
            conn.execute(
                "DELETE FROM evaluations WHERE id = (SELECT MAX(id) FROM evaluations"
                " WHERE run_id=?)",
                (run_id,),
            )
        conn.commit()


def contents(db: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with closing(sqlite3.connect(db)) as conn:
        return (
            conn.execute("SELECT * FROM runs ORDER BY id").fetchall(),
            conn.execute("SELECT * FROM evaluations ORDER BY id").fetchall(),
        )


def test_a_killed_run_with_every_answer_stored_is_finished_not_duplicated(
    tmp_path: Path, server: LoopbackServer
) -> None:
    write_suite(tmp_path / "suite", {"app": ["bad", "good"] * 2})
    db = tmp_path / "r.db"
    assert run_cli(server.base_url, db, tmp_path / "suite").returncode == 0
    kill_9_state(db, 1)
    server.reset()

    result = run_cli(server.base_url, db, tmp_path / "suite", "--resume")

    assert result.returncode == 0, result.stderr
    assert "Run 1 resumed" in result.stdout and "0 to ask" in result.stdout
    assert server.completions() == []
    assert [(r["id"], r["status"]) for r in runs(db)] == [(1, "completed")]
    assert len(rows(db)) == 4


def test_resume_in_a_matrix_continues_only_the_unfinished_cell_then_has_nothing_to_do(
    tmp_path: Path, server: LoopbackServer
) -> None:
    suite = tmp_path / "suite"
    cases = write_suite(suite, {"app": ["bad", "good"] * 2})
    db = tmp_path / "r.db"
    matrix = ("--prompt", "default,attacker")
    assert run_cli(server.base_url, db, suite, *matrix).returncode == 0
    first = {r["prompt_name"]: r["id"] for r in runs(db)}
    kill_9_state(db, first["attacker"], drop_last=True)
    server.reset()

    result = run_cli(server.base_url, db, suite, *matrix, "--resume")

    assert result.returncode == 0, result.stderr
    assert len(server.completions()) == 1  # the one case the killed run had not stored
    assert server.count(cases[-1].marker) == 1
    assert "note: nothing to resume for openai/gpt-4o-mini · default" in result.stderr
    assert {r["id"]: r["status"] for r in runs(db)} == {
        first["default"]: "completed",
        first["attacker"]: "completed",
    }
    assert len(rows(db)) == 8

    before = contents(db)
    server.reset()
    again = run_cli(server.base_url, db, suite, *matrix, "--resume")

    assert again.returncode == 0, again.stderr
    assert "nothing to resume: no unfinished run with these settings" in again.stderr
    assert again.stdout == ""
    assert server.completions() == []
    assert contents(db) == before  # no run, no row written


def test_resume_without_a_database_writes_none(tmp_path: Path, server: LoopbackServer) -> None:
    write_suite(tmp_path / "suite", {"app": ["bad", "good"]})
    db = tmp_path / "r.db"
    result = run_cli(server.base_url, db, tmp_path / "suite", "--resume")
    assert result.returncode == 0, result.stderr
    assert "nothing to resume" in result.stderr
    assert not db.exists() and server.completions() == []


def test_resume_names_the_unfinished_runs_it_will_not_continue_and_why(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """An unfinished run of the same model and prompt whose settings or prompt text differ
    (another version's, say) is not continued; "nothing to resume" names it and says why."""
    suite = tmp_path / "suite"
    write_suite(suite, {"app": ["bad", "good"] * 2})
    prompt = tmp_path / "p" / "judge.txt"
    prompt.parent.mkdir()
    prompt.write_text("Judge the code.\n", encoding="utf-8")
    db = tmp_path / "r.db"
    assert run_cli(server.base_url, db, suite, "--prompt", str(prompt)).returncode == 0
    kill_9_state(db, 1, drop_last=True)

    other = run_cli(
        server.base_url, db, suite, "--prompt", str(prompt), "--temperature", "0.5", "--resume"
    )
    prompt.write_text("Judge the code, strictly.\n", encoding="utf-8")
    changed = run_cli(server.base_url, db, suite, "--prompt", str(prompt), "--resume")

    for result in (other, changed):
        assert result.returncode == 0, result.stderr
        assert "nothing to resume: no unfinished run with these settings" in result.stderr
        assert "  run 1 (interrupted, 3 of 4 stored) is unfinished but not this run: " in (
            result.stderr
        )
    assert "temperature None then, 0.5 now" in other.stderr
    assert "prompt 'judge'" not in other.stderr
    assert "the text of prompt 'judge' has changed since" in changed.stderr
    assert "temperature" not in changed.stderr
    assert len(runs(db)) == 1  # nothing written
