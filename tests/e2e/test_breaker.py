"""The circuit breaker stops a run only when the endpoint is really gone (issue 22).

A case that is slow on its own (always longer than `--timeout`) becomes that case's error after
its retries; the other cases are answered and the run completes. A server that accepts
connections but answers nothing stalls one case after another, and that ends the run with exit
3 and a message that says what was seen.
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e import server as srv
from tests.e2e.harness import by_case, run_cli, runs, write_suite
from tests.e2e.server import LoopbackServer

EXIT_ABORTED = 3


def test_slow_cases_at_the_end_of_a_run_are_their_own_errors(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """Before: the last two cases' timeouts came in a row, 5 of them tripped the breaker."""
    cases = write_suite(tmp_path / "suite", {"app": ["bad", "good"] * 6})
    for slow in cases[-2:]:
        server.always(slow.marker, srv.delayed(3.0))
    db = tmp_path / "r.db"
    result = run_cli(
        server.base_url,
        db,
        tmp_path / "suite",
        *("--timeout", "0.3", "--max-retries", "4", "--concurrency", "2"),
    )

    assert result.returncode == 0, result.stderr
    assert "cannot reach" not in result.stderr
    recorded = by_case(db)
    assert len(recorded) == 12
    for case in cases[:-2]:
        assert recorded[case.case_id]["outcome"] == "correct"
    for case in cases[-2:]:
        row = recorded[case.case_id]
        assert row["outcome"] == "error" and row["attempts"] == 5
        assert "no complete reply within --timeout 0.3s (not a byte" in row["error"]
    (run,) = runs(db)
    assert run["status"] == "completed"


def test_a_server_that_answers_nothing_trips_the_breaker_naming_what_was_seen(
    tmp_path: Path,
) -> None:
    write_suite(tmp_path / "suite", {"app": ["bad", "good"] * 5})
    db = tmp_path / "r.db"
    with LoopbackServer(default=lambda request: srv.delayed(5.0)) as stalled:
        # 3 attempts a case: one case's own timeouts in a row (3, the threshold) must not trip
        # it; only the third case does (the default of 5 retries only takes twice as long)
        result = run_cli(
            stalled.base_url, db, tmp_path / "suite", "--timeout", "0.3", "--max-retries", "2"
        )

    assert result.returncode == EXIT_ABORTED, result.stderr
    (aborted,) = [line for line in result.stderr.splitlines() if " aborted: " in line]
    assert "3 different cases timed out without a byte of a reply" in aborted
    assert "--resume asks them" in aborted
    (run,) = runs(db)
    assert run["status"] == "aborted" and "different cases" in run["message"]


def test_a_run_where_every_request_got_http_400_exits_4_with_the_reason(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """Before: exit 0 with "accuracy n/a", as if the model had been measured."""
    write_suite(tmp_path / "suite", {"app": ["bad", "good"] * 2})
    server.enqueue(*[srv.bad_request("Provider returned error: context too long")] * 4)
    db = tmp_path / "r.db"
    result = run_cli(server.base_url, db, tmp_path / "suite", "--summary-json", "s.json")

    assert result.returncode == 4, result.stderr
    (said,) = [line for line in result.stderr.splitlines() if "no case got an answer" in line]
    assert "4 of 4 cases ended with HTTP 400: Provider returned error: context too long" in said
    assert "no case got an answer" in result.stdout  # in the summary too
    (run,) = runs(db)
    assert run["status"] == "completed"
    assert "4 of 4 cases" in (tmp_path / "s.json").read_text(encoding="utf-8")


def test_exit_codes_are_listed_in_help() -> None:
    import subprocess
    import sys

    from tests.e2e.harness import cli_env

    shown = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--help"],
        capture_output=True,
        text=True,
        env=cli_env(),
        check=True,
    ).stdout
    assert "exit codes" in shown
    for code in ("0", "1", "2", "3", "4", "130", "141", "143"):
        assert any(line.split()[:1] == [code] for line in shown.splitlines()), code
