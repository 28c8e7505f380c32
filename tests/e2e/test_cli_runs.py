"""Paid work is never repeated unless asked: reuse, --force, --retry-errors, --repeats,
--max-cost and --resume, run as the real command and counted by the server."""

from __future__ import annotations

import itertools
from pathlib import Path

from tests.e2e import server as srv
from tests.e2e.harness import by_case, rows, run_cli, runs, write_suite
from tests.e2e.server import LoopbackServer


def test_an_identical_run_reuses_every_result_and_force_asks_again(
    tmp_path: Path, server: LoopbackServer
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["good", "bad", "bad", "good", "bad", "good"]})
    db, suite = tmp_path / "r.db", tmp_path / "suite"

    first = run_cli(server.base_url, db, suite)
    second = run_cli(server.base_url, db, suite)
    assert (first.returncode, second.returncode) == (0, 0), second.stderr
    assert all(server.count(c.marker) == 1 for c in cases)
    assert f"reused {len(cases)}" in second.stdout
    run1, run2 = (r["id"] for r in runs(db))
    originals = {r["case_id"]: r for r in rows(db, run1)}
    for row in rows(db, run2):
        source = originals[row["case_id"]]
        assert row["reused_from"] == source["id"]
        for column in ("outcome", "actual_result", "raw_reply", "cost", "served_model"):
            assert row[column] == source[column], column

    forced = run_cli(server.base_url, db, suite, "--force")
    assert forced.returncode == 0, forced.stderr
    assert all(server.count(c.marker) == 2 for c in cases)
    assert all(r["reused_from"] is None for r in rows(db, runs(db)[-1]["id"]))

    # A different request (another max_tokens) is a different question: nothing to reuse.
    other = run_cli(server.base_url, db, suite, "--max-tokens", "77")
    assert other.returncode == 0, other.stderr
    assert all(server.count(c.marker) == 3 for c in cases)


def test_retry_errors_asks_again_only_the_cases_that_ended_in_an_error(
    tmp_path: Path, server: LoopbackServer
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["good", "bad", "bad", "good", "bad"]})
    server.script(cases[1].marker, srv.bad_request())
    server.script(cases[3].marker, srv.server_error(502))
    db, suite = tmp_path / "r.db", tmp_path / "suite"

    first = run_cli(server.base_url, db, suite, "--max-retries", "0")
    assert first.returncode == 0, first.stderr
    errors = {r["case_id"] for r in rows(db) if r["outcome"] == "error"}
    assert errors == {cases[1].case_id, cases[3].case_id}

    again = run_cli(server.base_url, db, suite, "--retry-errors", "--max-retries", "0")
    assert again.returncode == 0, again.stderr
    for i, case in enumerate(cases):
        assert server.count(case.marker) == (2 if i in (1, 3) else 1), case.case_id
    latest = by_case(db, runs(db)[-1]["id"])
    assert sorted(latest) == sorted(c.case_id for c in cases)
    assert all(r["outcome"] == "correct" for r in latest.values())


def test_repeats_ask_each_case_n_times_and_keep_each_answer(
    tmp_path: Path, server: LoopbackServer
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["bad", "good", "bad", "good"]})
    server.script(cases[0].marker, srv.answer("bad"), srv.answer("good"), srv.garbage())
    db, suite = tmp_path / "r.db", tmp_path / "suite"

    result = run_cli(server.base_url, db, suite, "--repeats", "3")
    assert result.returncode == 0, result.stderr
    recorded = rows(db)
    assert len(recorded) == 3 * len(cases)
    assert sorted((r["case_id"], r["repeat"]) for r in recorded) == sorted(
        itertools.product([c.case_id for c in cases], range(3))
    )
    assert all(server.count(c.marker) == 3 for c in cases)
    first_case = [r for r in recorded if r["case_id"] == cases[0].case_id]
    assert [r["outcome"] for r in sorted(first_case, key=lambda r: r["repeat"])] == [
        "correct",
        "wrong",
        "unparsed",
    ]

    again = run_cli(server.base_url, db, suite, "--repeats", "3")
    assert again.returncode == 0, again.stderr
    assert all(server.count(c.marker) == 3 for c in cases)
    assert f"reused {3 * len(cases)}" in again.stdout


def test_max_cost_stops_cleanly_and_resume_finishes_the_rest(
    tmp_path: Path, server: LoopbackServer
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["good", "bad"] * 5})
    db, suite = tmp_path / "r.db", tmp_path / "suite"
    for case in cases:
        server.always(case.marker, srv.answer(case.expected, cost=0.01))
    result = run_cli(server.base_url, db, suite, "--max-cost", "0.035")
    assert result.returncode == 0, result.stderr

    sent = [r.response["usage"]["cost"] for r in server.completions()]
    spent = list(itertools.accumulate(sent))
    stop_after = next(i for i, total in enumerate(spent, start=1) if total >= 0.035)
    assert stop_after == 4
    assert len(sent) == stop_after  # sequential: nothing asked after the budget was reached
    (run,) = runs(db)
    assert run["status"] == "stopped"
    assert "max-cost" in run["message"]
    assert len(rows(db)) == stop_after

    resumed = run_cli(server.base_url, db, suite, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert len(runs(db)) == 1
    assert sorted(by_case(db)) == sorted(c.case_id for c in cases)
    assert all(server.count(c.marker) == 1 for c in cases)


def test_resume_only_continues_a_run_with_the_same_settings(
    tmp_path: Path, server: LoopbackServer
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["good", "bad"] * 3})
    db, suite = tmp_path / "r.db", tmp_path / "suite"
    for case in cases:
        server.always(case.marker, srv.answer(case.expected, cost=0.01))
    first = run_cli(server.base_url, db, suite, "--max-cost", "0.02")
    assert first.returncode == 0, first.stderr
    assert runs(db)[0]["status"] == "stopped"

    other = run_cli(server.base_url, db, suite, "--resume", "--temperature", "0.5")
    assert other.returncode == 0, other.stderr
    # A different temperature is a different question: no run of it to resume (issue 22:
    # nothing is started, nothing written), and the stopped run is left alone.
    assert "nothing to resume" in other.stderr
    (first_run,) = runs(db)
    assert first_run["status"] == "stopped"
    assert [server.count(c.marker) for c in cases] == [1, 1, 0, 0, 0, 0]
    same = run_cli(server.base_url, db, suite, "--resume")
    assert same.returncode == 0, same.stderr
    (first_run,) = runs(db)
    assert first_run["status"] == "completed" and len(by_case(db)) == len(cases)
    assert [server.count(c.marker) for c in cases] == [1] * len(cases)


def test_max_cost_counts_what_the_resumed_run_already_spent(
    tmp_path: Path, server: LoopbackServer
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["good", "bad"] * 5})
    for case in cases:
        server.always(case.marker, srv.answer(case.expected, cost=0.01))
    db, suite = tmp_path / "r.db", tmp_path / "suite"
    first = run_cli(server.base_url, db, suite, "--max-cost", "0.035")
    assert first.returncode == 0, first.stderr
    assert len(server.completions()) == 4

    again = run_cli(server.base_url, db, suite, "--resume", "--max-cost", "0.035")
    assert again.returncode == 0, again.stderr
    # The run had already spent 0.04 >= 0.035: nothing more should be bought.
    assert len(server.completions()) == 4
    assert runs(db)[0]["status"] == "stopped"
