"""The real command against the loopback server: every way a reply can go, recorded as answered.

One run of `python -m secbench_tui --no-ui` asks a suite whose every case the server answers in
a different way (clean JSON, fences, prose, garbage, 429 with Retry-After, 5xx, 200 with an
error body, truncation, dropped connections...). The tests then read the SQLite file and check
each row against what the server's log says it answered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import server as srv
from tests.e2e.harness import (
    FAKE_KEY,
    MODEL,
    SuiteCase,
    all_bytes,
    by_case,
    run_cli,
    runs,
    write_suite,
)
from tests.e2e.server import Behaviour, LoopbackServer

PROGRESS = re.compile(r"^\[\s*\d+/\d+\]\s+(\S+)", re.MULTILINE)
MAX_RETRIES = 2
# far longer than the first backoff (at most 2 x harness.RETRY_BACKOFF), so only honouring it
# explains the wait
RETRY_AFTER = 0.5

# one worker makes the module's shared fixture once (pyproject: --dist=loadgroup)
pytestmark = pytest.mark.xdist_group("cli-session")


def other(verdict: str) -> str:
    return "good" if verdict == "bad" else "bad"


@dataclass(frozen=True)
class Expect:
    """How one case is answered and what the database must then hold for it."""

    name: str
    script: tuple[Behaviour, ...]  # answered first, in order
    then: Behaviour | None  # answers every later request (None: the expected verdict as JSON)
    outcome: str
    attempts: int
    error: str | None = None  # a fragment the recorded error must contain


def plan(expected: str) -> list[Expect]:
    """One entry per behaviour; `expected` is the verdict of the case it will be used for."""
    ok = srv.answer(expected)
    return [
        Expect("json", (), ok, "correct", 1),
        Expect("json-wrong", (), srv.answer(other(expected)), "wrong", 1),
        Expect("fenced", (), srv.fenced(expected), "correct", 1),
        Expect("prose", (), srv.prose(expected), "correct", 1),
        Expect(
            "assessment-in-capitals",
            (),
            srv.reply(json.dumps({"Assessment": expected.upper(), "Explanation": "caps"})),
            "correct",
            1,
        ),
        Expect("garbage", (), srv.garbage(), "unparsed", 1),
        Expect("429-then-ok", (srv.rate_limited(RETRY_AFTER),), ok, "correct", 2),
        Expect(
            "429-http-date-then-ok",
            (srv.rate_limited("Wed, 21 Oct 2015 07:28:00 GMT"),),
            ok,
            "correct",
            2,
        ),
        Expect("500-then-ok", (srv.server_error(500),), ok, "correct", 2),
        Expect(
            "502-503-then-ok",
            (srv.server_error(502, retry_after=0.05), srv.server_error(503, retry_after=0.05)),
            ok,
            "correct",
            3,
        ),
        Expect("error-body-then-ok", (srv.error_in_body(502),), ok, "correct", 2),
        Expect("finish-error-then-ok", (srv.finish_error(),), ok, "correct", 2),
        Expect("html-200-then-ok", (srv.garbage_body(),), ok, "correct", 2),
        Expect("empty-then-ok", (srv.empty(),), ok, "correct", 2),
        Expect("dropped-then-ok", (srv.dropped(),), ok, "correct", 2),
        Expect("delayed", (), ok.after(0.3), "correct", 1),
        Expect(
            "served-by-azure",
            (),
            srv.answer(expected, served_model="openai/gpt-4o-mini-2024-07-18", provider="Azure"),
            "correct",
            1,
        ),
        Expect("truncated", (), srv.truncated(), "error", 1, "finish_reason=length"),
        Expect(
            "400", (), srv.bad_request("Provider returned error: bad input"), "error", 1, "HTTP 400"
        ),
        Expect("403", (), srv.forbidden(), "error", 1, "HTTP 403"),
        Expect("429-always", (), srv.rate_limited(0.05), "error", MAX_RETRIES + 1, "429"),
        Expect(
            "error-body-always",
            (),
            srv.error_in_body(503, headers=(("Retry-After", "0.05"),)),
            "error",
            MAX_RETRIES + 1,
            "in a 200 body",
        ),
    ]


@dataclass
class Session:
    server: LoopbackServer
    db: Path
    cases: list[SuiteCase]
    plans: dict[str, Expect]  # by case id
    result: Any
    summary_path: Path


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """One real run over a suite that exercises every behaviour, with concurrency 4."""
    tmp = tmp_path_factory.mktemp("cli")
    n = len(plan("good"))
    verdicts = ["bad" if i % 2 else "good" for i in range(n)]
    cases = write_suite(tmp / "suite", {"api": verdicts})
    plans: dict[str, Expect] = {}
    with LoopbackServer(require_key=FAKE_KEY) as server:
        for i, case in enumerate(cases):
            expect = plan(case.expected)[i]
            plans[case.case_id] = expect
            server.script(case.marker, *expect.script, then=expect.then)
        db = tmp / "results.db"
        summary = tmp / "summary.json"
        result = run_cli(
            server.base_url,
            db,
            tmp / "suite",
            "--max-retries",
            str(MAX_RETRIES),
            "--concurrency",
            "4",
            "--max-tokens",
            "321",
            "--temperature",
            "0",
            "--seed",
            "7",
            "--summary-json",
            str(summary),
            key=FAKE_KEY,
        )
        yield Session(server, db, cases, plans, result, summary)


def answered(server: LoopbackServer, marker: str) -> dict[str, Any]:
    """The last reply the server sent for a case."""
    replies = [r for r in server.requests_for(marker) if r.response is not None]
    assert replies, f"the server never answered {marker}"
    return replies[-1].response  # type: ignore[no-any-return]


def test_run_completes_with_exit_code_zero(session: Session) -> None:
    assert session.result.returncode == 0, session.result.stderr
    (run,) = runs(session.db)
    assert run["status"] == "completed"
    assert run["model_name"] == MODEL
    assert run["total_cases"] == len(session.cases)


def test_every_case_is_recorded_once_with_the_outcome_the_reply_earns(session: Session) -> None:
    recorded = by_case(session.db)
    assert sorted(recorded) == sorted(c.case_id for c in session.cases)
    for case in session.cases:
        row, expect = recorded[case.case_id], session.plans[case.case_id]
        assert (row["outcome"], row["attempts"]) == (expect.outcome, expect.attempts), expect.name
        assert session.server.count(case.marker) == expect.attempts, expect.name
        assert row["expected_result"] == case.expected
        assert row["model_name"] == MODEL
        if expect.error is None:
            assert row["error"] is None, expect.name
        else:
            assert expect.error in row["error"], (expect.name, row["error"])


def test_answered_cases_keep_the_raw_reply_tokens_cost_and_who_served_them(
    session: Session,
) -> None:
    recorded = by_case(session.db)
    for case in session.cases:
        row, expect = recorded[case.case_id], session.plans[case.case_id]
        if expect.outcome == "error":
            continue
        sent = answered(session.server, case.marker)
        assert row["raw_reply"] == sent["choices"][0]["message"]["content"], expect.name
        # tokens and cost add up every attempt the server billed, failed ones included
        billed = [
            r.response["usage"]
            for r in session.server.requests_for(case.marker)
            if isinstance(r.response, dict) and isinstance(r.response.get("usage"), dict)
        ]
        assert row["prompt_tokens"] == sum(u["prompt_tokens"] for u in billed), expect.name
        assert row["completion_tokens"] == sum(u["completion_tokens"] for u in billed)
        assert row["cost"] == pytest.approx(sum(u["cost"] for u in billed))
        assert row["served_model"] == sent["model"]
        assert row["provider"] == sent["provider"]
        assert row["http_status"] == 200
        assert row["finish_reason"] == "stop"
        if expect.name in ("json", "json-wrong"):
            verdict = json.loads(row["raw_reply"])
            assert row["actual_result"] == verdict["assessment"]
            assert row["explanation"] == verdict["explanation"]


def test_served_model_and_provider_are_the_ones_the_server_named(session: Session) -> None:
    recorded = by_case(session.db)
    (case,) = [c for c in session.cases if session.plans[c.case_id].name == "served-by-azure"]
    assert recorded[case.case_id]["served_model"] == "openai/gpt-4o-mini-2024-07-18"
    assert recorded[case.case_id]["provider"] == "Azure"


def test_unparsed_and_truncated_replies_keep_the_raw_text(session: Session) -> None:
    rows_by_case = by_case(session.db)
    recorded = {session.plans[c.case_id].name: rows_by_case[c.case_id] for c in session.cases}
    assert recorded["garbage"]["actual_result"] is None
    assert recorded["garbage"]["raw_reply"] == srv.garbage().content
    assert recorded["assessment-in-capitals"]["actual_result"] in ("good", "bad")
    truncated = recorded["truncated"]
    assert truncated["raw_reply"] == srv.truncated().content
    assert truncated["finish_reason"] == "length"
    assert truncated["actual_result"] is None
    assert "--max-tokens" in truncated["error"]


def test_a_retry_waits_as_long_as_retry_after_says(session: Session) -> None:
    (case,) = [c for c in session.cases if session.plans[c.case_id].name == "429-then-ok"]
    first, second = session.server.requests_for(case.marker)
    assert first.status == 429
    assert first.answered_at is not None
    # The client's first backoff is at most 0.02 s; Retry-After asked for 0.5 s.
    assert second.received_at - first.answered_at >= RETRY_AFTER - 0.05


def test_every_request_carries_the_settings_and_schema(session: Session) -> None:
    requests = session.server.completions()
    assert requests
    for request in requests:
        body = request.body
        assert body["model"] == MODEL
        assert body["max_tokens"] == 321
        assert body["temperature"] == 0
        assert body["seed"] == 7
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema"
        assert fmt["json_schema"]["strict"] is True
        schema = fmt["json_schema"]["schema"]
        assert schema["properties"]["assessment"]["enum"] == ["good", "bad"]
        assert set(schema["required"]) == {"assessment", "explanation", "violations"}
        # OpenRouter's attribution goes to OpenRouter only (tests/unit/test_client.py)
        assert request.header("HTTP-Referer") is None and request.header("X-Title") is None
        assert (request.header("User-Agent") or "").startswith("secbench-tui/")
        assert request.header("Authorization") == f"Bearer {FAKE_KEY}"
        (message,) = body["messages"]
        assert message["role"] == "user"
        assert "The api service." in message["content"]  # SPEC.md's prompt comes first
        assert message["content"].index("The api service.") < message["content"].index("SELECT")


def test_the_key_is_never_written_or_printed(session: Session) -> None:
    secret = FAKE_KEY.encode()
    assert secret not in all_bytes(session.db, session.summary_path)
    assert FAKE_KEY not in session.result.stdout
    assert FAKE_KEY not in session.result.stderr
    assert FAKE_KEY[8:24] not in session.result.stdout + session.result.stderr


def test_output_shows_progress_in_case_order_errors_and_a_summary(session: Session) -> None:
    out, err = session.result.stdout, session.result.stderr
    progress = [m.group(1) for m in PROGRESS.finditer(out)]
    assert progress == [c.case_id for c in session.cases]
    errors = [c for c in session.cases if session.plans[c.case_id].outcome == "error"]
    for case in errors:
        assert f"error: {case.case_id}:" in err
    assert "retry:" in err
    counts = {
        o: sum(1 for p in session.plans.values() if p.outcome == o)
        for o in ("correct", "wrong", "unparsed", "error")
    }
    assert (
        f"cases {len(session.cases)}  correct {counts['correct']}  wrong {counts['wrong']}"
        f"  unparsed {counts['unparsed']}  errors {counts['error']}"
    ) in out


def test_summary_json_matches_the_database(session: Session) -> None:
    data = json.loads(session.summary_path.read_text(encoding="utf-8"))
    recorded = by_case(session.db)
    outcomes = [r["outcome"] for r in recorded.values()]
    assert data["status"] == "completed"
    assert data["model"] == MODEL
    assert data["run_id"] == runs(session.db)[0]["id"]
    assert data["cases"] == len(recorded)
    assert data["correct"] == outcomes.count("correct")
    assert data["wrong"] == outcomes.count("wrong")
    assert data["unparsed"] == outcomes.count("unparsed")
    assert data["errors"] == outcomes.count("error")
    assert data["prompt_tokens"] == sum(r["prompt_tokens"] or 0 for r in recorded.values())
    assert data["cost"] == pytest.approx(sum(r["cost"] or 0 for r in recorded.values()))


def test_the_run_records_its_settings_without_the_key(session: Session) -> None:
    (run,) = runs(session.db)
    settings = json.loads(run["settings"])
    assert settings["max_tokens"] == 321
    assert settings["temperature"] == 0
    assert settings["seed"] == 7
    assert settings["max_retries"] == MAX_RETRIES
    assert FAKE_KEY not in run["settings"]
