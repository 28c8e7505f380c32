"""The real command when the run as a whole cannot go on, and the flags that shape requests.

A bad key (401), no credits (402) or an unknown model (404, or 400 "not a valid model") ends
the run at once with exit code 3 and a message that says what to do; a 400 or 403 on one case
is that case's error and the run goes on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e import server as srv
from tests.e2e.harness import (
    FAKE_KEY,
    FIXTURE_SUITE,
    MODEL,
    all_bytes,
    by_case,
    cli_env,
    rows,
    run_cli,
    runs,
    write_suite,
)
from tests.e2e.server import Behaviour, LoopbackServer

EXIT_ABORTED = 3  # secbench_tui.cli.EXIT_ABORTED
EXIT_USAGE = 2


@pytest.mark.parametrize(
    ("behaviour", "hint"),
    [
        (srv.unauthorized(), "OPENROUTER_API_KEY"),
        (srv.no_credits(), "credits"),
        (srv.not_found(MODEL), "--model"),
        (srv.bad_request(f"{MODEL} is not a valid model ID"), "--model"),
    ],
    ids=["401", "402", "404", "400-invalid-model"],
)
def test_a_run_level_fault_aborts_at_once_with_exit_3_and_what_to_do(
    tmp_path: Path, server: LoopbackServer, behaviour: Behaviour, hint: str
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["good", "bad", "good", "bad"]})
    server.always(cases[1].marker, behaviour)
    db = tmp_path / "results.db"
    result = run_cli(server.base_url, db, tmp_path / "suite", key=FAKE_KEY)

    assert result.returncode == EXIT_ABORTED, result.stderr
    assert "aborted" in result.stderr
    assert hint in result.stderr
    assert FAKE_KEY not in result.stdout + result.stderr
    assert FAKE_KEY.encode() not in all_bytes(db)
    (run,) = runs(db)
    assert run["status"] == "aborted"
    assert hint in run["message"]
    # Sequential: the first case was answered and kept, the fault was not retried, and
    # nothing after it was asked.
    assert [r["case_id"] for r in rows(db)] == [cases[0].case_id]
    assert server.count(cases[1].marker) == 1
    assert server.count(cases[2].marker) == 0
    assert server.count(cases[3].marker) == 0


def test_a_wrong_key_is_refused_by_the_server_and_reported_without_echoing_it(
    tmp_path: Path,
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["good", "bad"]})
    wrong = "sk-or-v1-0000000000000000000000000000000000000000wrongkey"
    with LoopbackServer(require_key=FAKE_KEY) as server:
        result = run_cli(server.base_url, tmp_path / "r.db", tmp_path / "suite", key=wrong)
        sent = [r.header("Authorization") for r in server.completions()]
    assert result.returncode == EXIT_ABORTED
    assert sent == [f"Bearer {wrong}"]
    assert "OPENROUTER_API_KEY" in result.stderr
    assert wrong not in result.stdout + result.stderr
    assert wrong.encode() not in all_bytes(tmp_path / "r.db")
    assert rows(tmp_path / "r.db") == []
    assert server.count(cases[1].marker) == 0


def test_without_a_key_a_local_server_is_asked_without_authorization(
    tmp_path: Path, server: LoopbackServer
) -> None:
    result = run_cli(server.base_url, tmp_path / "r.db", FIXTURE_SUITE)
    assert result.returncode == 0, result.stderr
    assert server.completions()
    assert all(r.header("Authorization") is None for r in server.completions())


def test_the_fixture_suite_runs_sequentially_and_names_the_skipped_files(
    tmp_path: Path, server: LoopbackServer
) -> None:
    # The unguarded edit handler assigns right after the signature; the server says bad.
    server.always("current_user, body):\n    post.body = body", srv.fenced("bad"))
    db = tmp_path / "results.db"
    result = run_cli(server.base_url, db, FIXTURE_SUITE, key=FAKE_KEY)

    assert result.returncode == 0, result.stderr
    for broken in ("broken-bad-expected.md", "broken-empty-code.md", "broken-no-code.md"):
        assert broken in result.stderr
    recorded = by_case(db)
    assert sorted(recorded) == [
        "blog/edit-post-01-good.md",
        "blog/edit-post-02-bad.md",
        "shop/get-order-01-bad.md",
        "shop/list-orders-01-good.md",
        "shop/list-orders-02-bad.md",
    ]
    assert recorded["blog/edit-post-02-bad.md"]["outcome"] == "correct"
    assert recorded["blog/edit-post-01-good.md"]["outcome"] == "correct"
    assert recorded["shop/list-orders-01-good.md"]["outcome"] == "correct"
    assert recorded["shop/get-order-01-bad.md"]["outcome"] == "wrong"  # server said good
    assert server.max_in_flight == 1
    assert len(server.completions()) == 5


@pytest.mark.parametrize(
    ("behaviour", "error"),
    [
        (srv.rate_limited(0.05), "429"),
        (srv.server_error(503), "503"),
        (srv.dropped(), "connection"),
        (srv.empty(), "empty"),
        (srv.error_in_body(502), "in a 200 body"),
    ],
    ids=["429", "503", "dropped", "empty", "error-body"],
)
def test_max_retries_zero_asks_once_and_records_the_error(
    tmp_path: Path, server: LoopbackServer, behaviour: Behaviour, error: str
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["bad", "good"]})
    server.always(cases[0].marker, behaviour)
    db = tmp_path / "results.db"
    result = run_cli(server.base_url, db, tmp_path / "suite", "--max-retries", "0")

    assert result.returncode == 0, result.stderr
    recorded = by_case(db)
    first = recorded[cases[0].case_id]
    assert (first["outcome"], first["attempts"]) == ("error", 1)
    assert error in first["error"]
    assert server.count(cases[0].marker) == 1
    assert recorded[cases[1].case_id]["outcome"] == "correct"
    assert "retry:" not in result.stderr


@pytest.mark.parametrize(
    ("flag", "expected"),
    [("json_object", {"type": "json_object"}), ("none", None)],
)
def test_response_format_fallbacks_for_servers_that_reject_json_schema(
    tmp_path: Path, server: LoopbackServer, flag: str, expected: dict[str, str] | None
) -> None:
    write_suite(tmp_path / "suite", {"app": ["bad"]})
    result = run_cli(
        server.base_url, tmp_path / "r.db", tmp_path / "suite", "--response-format", flag
    )
    assert result.returncode == 0, result.stderr
    (request,) = server.completions()
    assert request.body.get("response_format") == expected


def test_openrouter_gets_require_parameters_and_usage_accounting(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """Requests for openrouter.ai reach the loopback server through it acting as HTTP proxy."""
    write_suite(tmp_path / "suite", {"app": ["bad", "good"]})
    db = tmp_path / "r.db"
    env = cli_env(FAKE_KEY, HTTP_PROXY=server.root, http_proxy=server.root)
    result = run_cli(
        "http://openrouter.ai/api/v1", db, tmp_path / "suite", "--max-tokens", "64", env=env
    )

    assert result.returncode == 0, result.stderr
    requests = server.completions()
    assert len(requests) == 2
    for request in requests:
        assert request.header("Host") == "openrouter.ai"
        assert request.body["provider"] == {"require_parameters": True}
        assert request.body["usage"] == {"include": True}
        assert request.body["max_tokens"] == 64
        assert request.body["response_format"]["json_schema"]["strict"] is True
        assert request.header("Authorization") == f"Bearer {FAKE_KEY}"
    assert all(r["outcome"] == "correct" for r in rows(db))
    assert FAKE_KEY.encode() not in all_bytes(db)


def test_openrouter_without_a_key_is_a_usage_error_naming_the_variable(tmp_path: Path) -> None:
    write_suite(tmp_path / "suite", {"app": ["bad"]})
    result = run_cli("https://openrouter.ai/api/v1", tmp_path / "r.db", tmp_path / "suite")
    assert result.returncode == EXIT_USAGE
    assert "OPENROUTER_API_KEY" in result.stderr


def test_summary_json_of_an_aborted_run_says_so(tmp_path: Path, server: LoopbackServer) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["bad", "good"]})
    server.always(cases[1].marker, srv.no_credits())
    summary = tmp_path / "summary.json"
    result = run_cli(
        server.base_url,
        tmp_path / "r.db",
        tmp_path / "suite",
        "--summary-json",
        str(summary),
        key=FAKE_KEY,
    )
    assert result.returncode == EXIT_ABORTED
    data = json.loads(summary.read_text(encoding="utf-8"))
    assert data["status"] == "aborted"
    assert "402" in data["message"]
    assert data["cases"] == 1
    assert FAKE_KEY not in summary.read_text(encoding="utf-8")
