"""A dead, stalled or flaky endpoint never wastes the user's time: the real command against
loopback servers that trickle, refuse, stall or answer oddly.

- `--timeout` bounds the whole attempt, so a server sending one byte at a time cannot hold a
  case (or a stop) for ever;
- a refused endpoint ends the run at once with exit 3 and one message naming it, and nothing
  is recorded as the model's error;
- SIGTERM stops like Ctrl+C, and requests still stalled after a short grace are cancelled and
  left for `--resume`;
- a case waiting to retry gives its concurrency slot back;
- a reply nested thousands of levels deep, or with odd field types, keeps its raw text,
  tokens and cost; one that cannot be read is `unparsed` with a one-line reason.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import server as srv
from tests.e2e.harness import (
    by_case,
    count_rows,
    rows,
    run_cli,
    runs,
    start_cli,
    wait_for,
    write_suite,
)
from tests.e2e.server import LoopbackServer

EXIT_ABORTED = 3
EXIT_TERMINATED = 143


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> int:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound (so nothing else takes it), no listen."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()


def test_timeout_bounds_the_whole_reply_of_a_server_that_trickles(
    tmp_path: Path, server: LoopbackServer
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["bad", "good", "bad"]})
    # 0.2 s a byte: every read returns well within --timeout, the reply takes minutes.
    server.always(cases[1].marker, srv.trickled(0.2, srv.answer("good")))
    db = tmp_path / "r.db"
    result = run_cli(
        server.base_url, db, tmp_path / "suite", "--timeout", "2", "--max-retries", "0"
    )

    assert result.returncode == 0, result.stderr
    recorded = by_case(db)
    assert recorded[cases[0].case_id]["outcome"] == "correct"
    assert recorded[cases[2].case_id]["outcome"] == "correct"
    slow = recorded[cases[1].case_id]
    assert slow["outcome"] == "error"
    assert "no complete reply within --timeout 2s" in slow["error"]


def test_a_refused_endpoint_stops_the_run_at_once_naming_it(
    tmp_path: Path, refused_port: int
) -> None:
    write_suite(tmp_path / "suite", {"app": ["bad", "good"] * 20})
    base_url = f"http://user:hunter2@127.0.0.1:{refused_port}/api/v1"
    db = tmp_path / "r.db"
    result = run_cli(base_url, db, tmp_path / "suite", "--concurrency", "8")

    assert result.returncode == EXIT_ABORTED, result.stderr
    (aborted,) = [line for line in result.stderr.splitlines() if " aborted: " in line]
    assert f"cannot reach the endpoint http://***@127.0.0.1:{refused_port}/api/v1" in aborted
    assert "--base-url" in aborted and "--resume" in aborted
    assert "hunter2" not in result.stdout + result.stderr
    assert rows(db) == []  # no case is recorded as the model's error
    (run,) = runs(db)
    assert run["status"] == "aborted" and "cannot reach" in run["message"]


def test_a_refused_endpoint_one_request_at_a_time_still_ends_without_recording(
    tmp_path: Path, refused_port: int
) -> None:
    write_suite(tmp_path / "suite", {"app": ["bad", "good"] * 3})
    db = tmp_path / "r.db"
    result = run_cli(f"http://127.0.0.1:{refused_port}/v1", db, tmp_path / "suite")

    assert result.returncode == EXIT_ABORTED, result.stderr
    assert "5 attempt(s) in a row" in result.stderr
    assert count_rows(db) == 0


def test_sigterm_stops_like_ctrl_c_and_cancels_stalled_requests_for_resume(
    tmp_path: Path,
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["bad", "good"] * 4})
    db = tmp_path / "r.db"
    with LoopbackServer() as server:
        for case in cases[2:]:  # stalled: headers, then a byte every 30 s
            server.always(case.marker, srv.trickled(30, srv.answer(case.expected)))
        proc = start_cli(
            server.base_url, db, tmp_path / "suite", "--concurrency", "4", "--stop-grace", "0.5"
        )
        try:
            wait_for(
                lambda: count_rows(db) == 2 and sum(server.count(c.marker) for c in cases[2:]) == 4,
                "two cases recorded and four stalled in flight",
            )
            proc.send_signal(signal.SIGTERM)
            code = finish(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
        stderr = (tmp_path / "stderr.txt").read_text(encoding="utf-8")

        assert code == EXIT_TERMINATED, stderr
        assert "stopping (SIGTERM): the requests in flight get 0.5s" in stderr
        (run,) = runs(db)
        assert run["status"] == "stopped"
        assert sorted(by_case(db)) == sorted(c.case_id for c in cases[:2])

        server.reset()  # the endpoint recovers: --resume asks what was cancelled
        result = run_cli(server.base_url, db, tmp_path / "suite", "--resume")
        assert result.returncode == 0, result.stderr
        recorded = by_case(db)
        assert sorted(recorded) == sorted(c.case_id for c in cases)
        assert all(r["outcome"] == "correct" for r in recorded.values())
        assert all(server.count(c.marker) == 1 for c in cases[2:])
        assert all(server.count(c.marker) == 0 for c in cases[:2])


def test_a_case_waiting_to_retry_gives_its_slot_back(tmp_path: Path) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["bad", "good"] * 6})
    with LoopbackServer(delay=0.2) as server:
        # The first case meets a 503 asking for a 2 s wait; it is not a rate limit, so the
        # concurrency stays 2, and both slots should serve other cases meanwhile.
        server.script(cases[0].marker, srv.server_error(503, retry_after=2))
        result = run_cli(
            server.base_url, tmp_path / "r.db", tmp_path / "suite", "--concurrency", "2"
        )
        requests = server.completions()

    assert result.returncode == 0, result.stderr
    first = [r for r in requests if cases[0].marker in r.prompt]
    assert [r.status for r in first] == [503, 200]
    assert first[0].answered_at is not None
    during = [
        r
        for r in requests
        if first[0].answered_at < r.received_at < first[1].received_at
        and cases[0].marker not in r.prompt
    ]
    assert max(r.in_flight for r in during) == 2  # two other cases at once while it waited
    assert len(by_case(tmp_path / "r.db")) == len(cases)


def _completion_text(content: str, finish_reason: object = "stop", extra: str = "") -> str:
    """An OpenRouter reply written by hand, so it can hold what json.dumps would not make."""
    choice = {"finish_reason": finish_reason, "message": {"role": "assistant", "content": content}}
    body = {
        "id": "gen-odd",
        "model": "openai/gpt-4o-mini",
        "provider": "Odd",
        "choices": [choice],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "cost": 0.0125},
    }
    text = json.dumps(body)
    return text[:-1] + extra + "}" if extra else text


DEEP = ', "deep": ' + "[" * 5000 + "]" * 5000


def test_deeply_nested_and_odd_replies_keep_raw_text_tokens_and_cost(
    tmp_path: Path, server: LoopbackServer
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["bad", "good", "bad", "good", "bad"]})
    verdict = srv.verdict_json
    deep_reply = _completion_text(verdict("bad"), extra=DEEP)
    server.always(cases[0].marker, srv.raw_body(deep_reply))
    server.always(cases[1].marker, srv.raw_body(_completion_text(verdict("good"), 7)))
    not_json = '{"choices": [{"message": {"content": "{\\"assessment\\": \\"bad\\"'
    server.always(cases[2].marker, srv.raw_body(not_json))
    number = _completion_text("x").replace('"content": "x"', '"content": 42')
    server.always(cases[3].marker, srv.raw_body(number))
    server.always(cases[4].marker, srv.raw_body('{"error": ' + "[" * 5000 + "]" * 5000 + "}", 500))
    db = tmp_path / "r.db"
    result = run_cli(server.base_url, db, tmp_path / "suite", "--max-retries", "0")

    assert result.returncode == 0, result.stderr
    assert "RecursionError" not in result.stdout + result.stderr
    assert "ValidationError" not in result.stdout + result.stderr
    got = by_case(db)
    deep, odd_finish, cut, numeric, deep_error = (got[c.case_id] for c in cases)

    # Deep junk beside a good answer: the answer is read, its tokens and cost are kept.
    assert deep["outcome"] == "correct" and deep["raw_reply"] == verdict("bad")
    assert (deep["prompt_tokens"], deep["completion_tokens"], deep["cost"]) == (11, 7, 0.0125)
    # A finish reason that is a number is recorded as its text; the answer still counts.
    assert odd_finish["outcome"] == "correct" and odd_finish["finish_reason"] == "7"
    assert (odd_finish["prompt_tokens"], odd_finish["cost"]) == (11, 0.0125)
    # Replies that cannot be read: unparsed, the body kept exactly, one line saying why.
    assert cut["outcome"] == "unparsed" and cut["raw_reply"] == not_json
    assert "not JSON" in cut["error"] and "\n" not in cut["error"]
    assert numeric["outcome"] == "unparsed" and numeric["raw_reply"] == number
    assert "int, not text" in numeric["error"]
    assert (numeric["prompt_tokens"], numeric["completion_tokens"], numeric["cost"]) == (
        11,
        7,
        0.0125,
    )
    # An error status with a deep body is that case's error, on one line.
    assert deep_error["outcome"] == "error" and deep_error["error"].startswith("HTTP 500")
    assert "\n" not in deep_error["error"]


def test_an_unreadable_reply_stays_unparsed_when_reused(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """A body with no choices whose text happens to read as a verdict is still no answer,
    the second time too: reuse must not score the raw body that was kept."""
    (case,) = write_suite(tmp_path / "suite", {"app": ["bad"]})
    server.always(case.marker, srv.raw_body(srv.verdict_json("bad")))  # no `choices`
    db = tmp_path / "r.db"
    for _ in range(2):
        result = run_cli(server.base_url, db, tmp_path / "suite", "--max-retries", "0")
        assert result.returncode == 0, result.stderr
    first, reused = rows(db)
    assert first["outcome"] == "unparsed" and "no choices" in first["error"]
    assert reused["reused_from"] == first["id"]
    assert (reused["outcome"], reused["error"]) == ("unparsed", first["error"])
