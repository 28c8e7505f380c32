"""`--batch` against a loopback emulation of each batch API (issue 35).

The same suite is run live and through a batch: the stored verdicts, tokens and raw replies
are the same, the cost is what the batch server reported; a partly failed batch leaves
exactly its failed cases for `--retry-errors`; a batch that expires leaves the requests that
did not run as errors; a model whose batch API refuses it gets a clear error.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.e2e.batch_server import BATCH_DISCOUNT, BatchLoopback, BatchPlan
from tests.e2e.harness import FAKE_KEY, SuiteCase, by_case, rows, run_cli, runs, write_suite
from tests.e2e.server import bad_request

POLL = ("--batch-poll", "0.01")
OPENROUTER = ("--batch-api", "openrouter")
SAME = ("outcome", "actual_result", "raw_reply", "prompt_tokens", "completion_tokens",
        "finish_reason", "request_hash", "explanation")  # fmt: skip
ANTHROPIC_FORMAT = ("--response-format", "json_object")


def suite(root: Path, n: int = 6) -> list[SuiteCase]:
    return write_suite(root, {"alpha": ["good", "bad"] * (n // 4 + 1), "beta": ["bad", "good"]})


def batches(db: Path) -> list[dict[str, object]]:
    with closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM batches ORDER BY id")]


def base_url(server: BatchLoopback, protocol: str) -> str:
    return server.root + "/v1" if protocol == "anthropic" else server.base_url


@pytest.mark.parametrize("protocol", ["openrouter", "openai", "anthropic"])
def test_a_batch_run_stores_what_a_live_run_stores(tmp_path: Path, protocol: str) -> None:
    cases = suite(tmp_path / "suite")
    extra = ANTHROPIC_FORMAT if protocol == "anthropic" else ()
    with BatchLoopback(protocol) as server:
        url = base_url(server, protocol)
        live = run_cli(url, tmp_path / "live.db", tmp_path / "suite", *extra, key=FAKE_KEY)
        assert live.returncode == 0, live.stderr
        asked_live = len(server.completions())
        server.plan(BatchPlan(statuses=("validating", "in_progress", "in_progress")))
        batch = run_cli(
            url, tmp_path / "batch.db", tmp_path / "suite", "--batch",
            "--batch-api", protocol, *POLL, *extra, key=FAKE_KEY,
        )  # fmt: skip
        assert batch.returncode == 0, batch.stderr
        assert len(server.completions()) == asked_live  # nothing asked live the second time
        assert len(server.submissions) == 1 and server.polls >= 4
    live_rows, batch_rows = by_case(tmp_path / "live.db"), by_case(tmp_path / "batch.db")
    assert set(live_rows) == set(batch_rows) == {c.case_id for c in cases}
    for case_id, row in batch_rows.items():
        assert {k: row[k] for k in SAME} == {k: live_rows[case_id][k] for k in SAME}, case_id
        if protocol == "openrouter":  # the cost the batch server reported, at its discount
            assert row["cost"] == pytest.approx(live_rows[case_id]["cost"] * BATCH_DISCOUNT)
        else:
            assert row["cost"] is None  # neither OpenAI nor Anthropic report a cost
    assert "waiting on the provider" in batch.stdout
    assert f"asked in batches ({protocol}): these tokens cost ~$" in batch.stdout
    (record,) = batches(tmp_path / "batch.db")
    assert record["protocol"] == protocol and record["read_at"] is not None
    assert f'"batch": "{protocol}"' in runs(tmp_path / "batch.db")[0]["settings"]


def test_a_batch_answer_and_a_live_answer_reuse_each_other(tmp_path: Path) -> None:
    suite(tmp_path / "suite")
    db = tmp_path / "r.db"
    with BatchLoopback("openrouter") as server:
        first = run_cli(
            server.base_url, db, tmp_path / "suite", "--batch", *OPENROUTER, *POLL, key=FAKE_KEY
        )
        assert first.returncode == 0, first.stderr
        again = run_cli(server.base_url, db, tmp_path / "suite", key=FAKE_KEY)
        assert again.returncode == 0, again.stderr
        assert server.completions() == [] and "reused" in again.stdout
        assert len(server.submissions) == 1


def test_a_partly_failed_batch_leaves_exactly_its_failed_cases_for_retry_errors(
    tmp_path: Path,
) -> None:
    cases = suite(tmp_path / "suite", 8)
    failing = {cases[1].marker, cases[4].marker}
    db = tmp_path / "r.db"
    with BatchLoopback("openai") as server:
        server.plan(BatchPlan(fail_markers=tuple(failing)))
        first = run_cli(server.base_url, db, tmp_path / "suite", "--batch", *POLL, key=FAKE_KEY)
        assert first.returncode == 0, first.stderr
        errors = {r["case_id"] for r in rows(db) if r["outcome"] == "error"}
        assert errors == {c.case_id for c in cases if c.marker in failing}
        retried = run_cli(
            server.base_url, db, tmp_path / "suite", "--retry-errors", "--batch", *POLL,
            key=FAKE_KEY,
        )  # fmt: skip
        assert retried.returncode == 0, retried.stderr
        assert [s["requests"] for s in server.submissions] == [len(cases), 2]
    final = by_case(db, 1)
    assert all(row["outcome"] == "correct" for row in final.values())


@pytest.mark.parametrize("protocol", ["openrouter", "anthropic"])
def test_an_expired_batch_leaves_what_did_not_run_as_errors(tmp_path: Path, protocol: str) -> None:
    suite(tmp_path / "suite", 8)
    db = tmp_path / "r.db"
    extra = ANTHROPIC_FORMAT if protocol == "anthropic" else ()
    with BatchLoopback(protocol, inline=False) as server:
        server.plan(BatchPlan(end="expired", answered=3))
        result = run_cli(
            base_url(server, protocol), db, tmp_path / "suite", "--batch", "--batch-api",
            protocol, *POLL, *extra, key=FAKE_KEY,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        live = run_cli(
            base_url(server, protocol), db, tmp_path / "suite", "--retry-errors", *extra,
            key=FAKE_KEY,
        )  # fmt: skip
        assert live.returncode == 0, live.stderr
        assert len(server.completions()) == len(rows(db, 1)) - 3  # asked live, the second time
    outcomes = [r["outcome"] for r in rows(db, 1)]
    assert outcomes.count("error") == 0 and len(outcomes) == 8


def test_a_model_the_batch_api_refuses_is_named_with_what_to_do(tmp_path: Path) -> None:
    suite(tmp_path / "suite")
    db = tmp_path / "r.db"
    with BatchLoopback("openrouter") as server:
        server.refusal = bad_request("Model openai/gpt-4o-mini does not support batch")
        result = run_cli(
            server.base_url, db, tmp_path / "suite", "--batch", *OPENROUTER, *POLL, key=FAKE_KEY
        )
    assert result.returncode == 3, result.stdout
    assert "does not support batch" in result.stderr and "without --batch" in result.stderr
    assert [b["status"] for b in batches(db)] == ["refused"]
    assert rows(db) == []


@pytest.mark.long
def test_ten_thousand_cases_split_into_batches_within_the_limits(tmp_path: Path) -> None:
    # 100 apps of 100 cases: a scenario's pairs are every (good, bad) of it, so one scenario
    # of 10,000 cases would have the summary count 25 million pairs, which no suite has
    apps = {f"app{n:03d}": ["good", "bad"] * 50 for n in range(100)}
    cases = write_suite(tmp_path / "suite", apps)
    db = tmp_path / "r.db"
    with BatchLoopback("openrouter", keep_bodies=False) as server:
        server.plan(BatchPlan(statuses=("validating",)), BatchPlan(statuses=("validating",)))
        result = run_cli(
            server.base_url, db, tmp_path / "suite", "--batch", *OPENROUTER, *POLL,
            key=FAKE_KEY, timeout=600,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        sizes = [s["requests"] for s in server.submissions]
    assert sizes == [5_000, 5_000]  # OpenRouter's limit is 5,000 requests a batch
    with closing(sqlite3.connect(db)) as conn:
        stored = conn.execute("SELECT COUNT(*), SUM(outcome = 'correct') FROM evaluations")
        assert tuple(stored.fetchone()) == (len(cases), len(cases))
        mapped = conn.execute("SELECT COUNT(DISTINCT custom_id) FROM batch_requests").fetchone()
        assert mapped[0] == len(cases)


def test_the_dry_run_prices_the_batch_beside_live_and_sends_nothing(tmp_path: Path) -> None:
    suite(tmp_path / "suite")
    with BatchLoopback("openrouter") as server:
        result = run_cli(
            server.base_url, tmp_path / "r.db", tmp_path / "suite", "--batch", *OPENROUTER,
            "--dry-run", key=FAKE_KEY,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert server.submissions == [] and server.completions() == []
    assert "; in a batch $" in result.stdout
    assert "--batch: $" in result.stdout and "live price at 50%" in result.stdout


def test_a_matrix_sends_a_batch_per_run_and_stores_every_cell(tmp_path: Path) -> None:
    cases = suite(tmp_path / "suite")
    db = tmp_path / "r.db"
    models = "openai/gpt-4o-mini,meta-llama/llama-3.1-8b-instruct,baseline/random"
    with BatchLoopback("openrouter") as server:
        result = run_cli(
            server.base_url, db, tmp_path / "suite", "--batch", *OPENROUTER, *POLL,
            "--prompt", "default,attacker", key=FAKE_KEY, model=models,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert len(server.submissions) == 4 and server.completions() == []
    assert [r["status"] for r in runs(db)] == ["completed"] * 6
    assert len(rows(db)) == 6 * len(cases)
    remote = {r["id"] for r in runs(db) if not str(r["model_name"]).startswith("baseline/")}
    assert sorted(b["run_id"] for b in batches(db)) == sorted(remote)  # one batch each


@pytest.mark.parametrize("style", ["secbench-tui", "security-bench"])
def test_a_batch_carries_the_exact_body_a_live_run_sends(tmp_path: Path, style: str) -> None:
    suite(tmp_path / "suite")
    with BatchLoopback("openrouter") as server:
        for name, extra in (("live", ()), ("batch", ("--batch", *OPENROUTER, *POLL))):
            result = run_cli(
                server.base_url, tmp_path / f"{name}.db", tmp_path / "suite",
                "--request-style", style, *extra, key=FAKE_KEY,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
        live = sorted(json.dumps(r.body, sort_keys=True) for r in server.completions())
        (batch,) = server.batches.values()
    assert sorted(json.dumps(line["body"], sort_keys=True) for line in batch.lines) == live
