"""Reasoning models and the original evaluator's request, through the real command.

The loopback server plays a reasoning model as OpenRouter serves one (its catalog entry lists
`reasoning`; its thinking counts against `max_tokens`, so a small budget gets
`finish_reason: "length"`, empty content and text only in `message.reasoning`). With default
flags every case must be answered, its reasoning stored and shown. `--request-style
security-bench` must send glideapps/security-bench's request: compared here field by field
with the facts of issue 12, and byte for byte with its JSON.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from secbench_tui.core import numbers
from secbench_tui.tui.widgets.case_detail import render_result
from tests.e2e import server as srv
from tests.e2e.harness import FAKE_KEY, by_case, cli_env, connect, run_cli, runs, write_suite
from tests.e2e.server import LoopbackServer

REASONER = "deepseek/deepseek-r1:free"  # the loopback catalog lists reasoning for it


def _env(tmp_path: Path) -> dict[str, str]:
    """No model list cached from elsewhere: the catalog is asked, as a new user's would be."""
    return cli_env(FAKE_KEY, XDG_CACHE_HOME=str(tmp_path / "cache"))


def _shown_in_app(db: Path, row_id: int) -> str:
    """The app's case detail for one result, as text."""
    with closing(connect(db)) as conn:
        row = conn.execute(
            "SELECT e.*, c.code AS code, c.description AS description FROM evaluations e"
            " LEFT JOIN case_texts c ON c.hash = e.case_hash WHERE e.id=?",
            (row_id,),
        ).fetchone()
    console = Console(width=200, record=True, color_system=None)
    console.print(render_result(dict(row)))
    return console.export_text()


def _report(tmp_path: Path, db: Path, base_url: str) -> str:
    result = run_cli(base_url, db, tmp_path / "suite", "--report", env=_env(tmp_path))
    assert result.returncode == 0, result.stderr
    (report,) = (tmp_path / "reports").glob("report_*.html")
    return report.read_text(encoding="utf-8")


# --- reasoning models ---------------------------------------------------------------------


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content", "reasoning_details"])
def test_a_reasoning_model_with_default_flags_answers_and_its_reasoning_is_kept(
    tmp_path: Path, field: str
) -> None:
    cases = write_suite(tmp_path / "suite", {"api": ["bad", "good", "bad"]})
    db = tmp_path / "results.db"
    summary = tmp_path / "summary.json"
    with LoopbackServer(default=srv.thinking_model(field)) as server:
        result = run_cli(
            server.base_url,
            db,
            tmp_path / "suite",
            "--summary-json",
            str(summary),
            model=REASONER,
            env=_env(tmp_path),
        )
        assert result.returncode == 0, result.stderr
        bodies = [r.body for r in server.completions()]
        report = _report(tmp_path, db, server.base_url)
    assert len(bodies) == len(cases)
    for body in bodies:
        assert body["max_tokens"] == 32768  # not 1024: the catalog says the model reasons
        assert "reasoning" not in body  # no effort asked for, none sent
    recorded = by_case(db)
    assert [recorded[c.case_id]["outcome"] for c in cases] == ["correct"] * len(cases)
    for row in recorded.values():
        assert row["error"] is None
        assert row["reasoning"] == "Let me check each query against the rules (effort default)."
        assert row["reasoning_tokens"] == srv.THINKING_BUDGET // 2
    (run,) = runs(db)
    settings = json.loads(run["settings"])
    assert settings["max_tokens"] == 32768 and settings["reasoning_model"] is True
    assert settings["timeout"] == 600  # an attempt may think for a while
    data = json.loads(summary.read_text(encoding="utf-8"))
    assert data["reasoning_tokens"] == len(cases) * srv.THINKING_BUDGET // 2
    assert f"({data['reasoning_tokens']:,} reasoning)" in result.stdout
    shown = _shown_in_app(db, next(iter(recorded.values()))["id"])
    assert "reasoning (the model's thinking" in shown
    assert "Let me check each query against the rules" in shown
    assert f"({srv.THINKING_BUDGET // 2:,} reasoning)" in shown
    assert report.count("Let me check each query against the rules (effort default).") == len(cases)


def test_a_budget_too_small_to_answer_stays_an_error_with_advice_and_keeps_the_thinking(
    tmp_path: Path,
) -> None:
    write_suite(tmp_path / "suite", {"api": ["bad"]})
    db = tmp_path / "results.db"
    with LoopbackServer(default=srv.thinking_model()) as server:
        result = run_cli(
            server.base_url,
            db,
            tmp_path / "suite",
            "--max-tokens",
            "1024",
            model=REASONER,
            env=_env(tmp_path),
        )
        assert [r.body["max_tokens"] for r in server.completions()] == [1024]
    # every case was cut off: no answer at all is not a completed measurement (issue 22)
    assert result.returncode == 4, result.stderr
    (said,) = [line for line in result.stderr.splitlines() if "no case got an answer" in line]
    assert "1 of 1 cases ended with reply truncated at max_tokens=1024" in said
    assert "raise --max-tokens" in said
    (row,) = by_case(db).values()
    assert row["outcome"] == "error"
    assert "truncated at max_tokens=1024 while the model was still reasoning" in row["error"]
    assert "raise --max-tokens" in row["error"]
    assert row["reasoning"].endswith("First, the tenant filter")
    assert row["reasoning_tokens"] == 1024
    (run,) = runs(db)
    assert json.loads(run["settings"])["max_tokens"] == 1024  # what was asked for, as sent


def test_reasoning_effort_is_sent_recorded_and_reaches_the_model(tmp_path: Path) -> None:
    write_suite(tmp_path / "suite", {"api": ["good", "bad"]})
    db = tmp_path / "results.db"
    with LoopbackServer(default=srv.thinking_model()) as server:
        result = run_cli(
            server.base_url,
            db,
            tmp_path / "suite",
            "--reasoning-effort",
            "high",
            model=REASONER,
            env=_env(tmp_path),
        )
        assert result.returncode == 0, result.stderr
        bodies = [r.body for r in server.completions()]
    assert [b["reasoning"] for b in bodies] == [{"effort": "high"}] * 2
    assert all(r["reasoning"].endswith("(effort high).") for r in by_case(db).values())
    (run,) = runs(db)
    assert json.loads(run["settings"])["reasoning_effort"] == "high"


def test_a_model_that_does_not_reason_keeps_the_plain_default(tmp_path: Path) -> None:
    write_suite(tmp_path / "suite", {"api": ["good"]})
    with LoopbackServer() as server:
        result = run_cli(
            server.base_url, tmp_path / "results.db", tmp_path / "suite", env=_env(tmp_path)
        )
        assert result.returncode == 0, result.stderr
        assert [r.body["max_tokens"] for r in server.completions()] == [1024]
    settings = json.loads(runs(tmp_path / "results.db")[0]["settings"])
    assert settings["reasoning_model"] is False and settings["reasoning_effort"] is None
    assert settings["timeout"] == 120


# --- the original evaluator's request ------------------------------------------------------

SYSTEM = (
    "You are a security expert evaluating code for vulnerabilities. You will be given a "
    "database schema, security requirements, and a code fragment to analyze."
)
RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "security_assessment",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "explanation": {
                    "type": "string",
                    "description": "Explanation of the security assessment",
                },
                "assessment": {
                    "type": "string",
                    "enum": ["good", "bad"],
                    "description": "Whether the code is secure (good) or vulnerable (bad)",
                },
            },
            "required": ["explanation", "assessment"],
            "additionalProperties": False,
        },
    },
}
# CRLF line ends, a blank line and a trailing newline: sent exactly as read, not trimmed
EVALUATION_PROMPT = "Answer as JSON.\r\n\r\nSay “good” or “bad”.\r\n"
SPEC = (
    "# Shop\nIntro that is not sent.\n# Prompt\n\n  Orders(id, tenant_id, total) — café.\n"
    "#not a heading\n1. Every query filters by tenant_id.  \n\n# Notes\nNot sent either.\n"
)
SPEC_PROMPT = (
    "Orders(id, tenant_id, total) — café.\n#not a heading\n1. Every query filters by tenant_id."
)


def _original_suite(root: Path) -> list[tuple[str, str, str]]:
    """(case id, code as the original sends it, expected) for two cases of one app."""
    app = root / "shop"
    app.mkdir(parents=True)
    (app / "SPEC.md").write_text(SPEC, encoding="utf-8")
    cases = []
    for n, expected in enumerate(("bad", "good"), start=1):
        code = f"SELECT id FROM orders WHERE id = :id; -- expect:{expected} n{n}"
        (app / f"case-{n}.md").write_text(
            f"# Description\nNot sent.\n\n# Code\n\n```sql\n\n   {code}\n\n```\n\n"
            f"# Expected\n{expected}\n",
            encoding="utf-8",
        )
        cases.append((f"shop/case-{n}.md", code, expected))
    return cases


def test_security_bench_style_sends_the_original_request_field_by_field(tmp_path: Path) -> None:
    cases = _original_suite(tmp_path / "suite")
    prompt = tmp_path / "evaluation-prompt.txt"
    prompt.write_bytes(EVALUATION_PROMPT.encode("utf-8"))
    db = tmp_path / "results.db"
    with LoopbackServer() as server:
        result = run_cli(
            server.base_url,
            db,
            tmp_path / "suite",
            "--request-style",
            "security-bench",
            "--prompt",
            str(prompt),
            env=_env(tmp_path),
        )
        assert result.returncode == 0, result.stderr
        requests = server.completions()
        report = _report(tmp_path, db, server.base_url)
    assert len(requests) == len(cases)
    for request, (_, code, _) in zip(requests, cases, strict=True):
        body: dict[str, Any] = request.body
        assert list(body) == ["model", "messages", "response_format", "temperature", "max_tokens"]
        assert body["model"] == "openai/gpt-4o-mini"
        assert len(body["messages"]) == 4
        assert body["messages"][0] == {"role": "system", "content": SYSTEM}
        assert body["messages"][1] == {"role": "user", "content": SPEC_PROMPT}
        assert body["messages"][2] == {"role": "user", "content": EVALUATION_PROMPT}
        assert body["messages"][3] == {"role": "user", "content": code}
        assert body["response_format"] == RESPONSE_FORMAT
        assert body["temperature"] == 0.1 and isinstance(body["temperature"], float)
        assert body["max_tokens"] == 30000
        # byte for byte what JSON.stringify writes for the same object
        assert request.raw == json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    recorded = by_case(db)
    assert [recorded[c]["outcome"] for c, _, _ in cases] == ["correct", "correct"]
    (run,) = runs(db)
    settings = json.loads(run["settings"])
    assert settings["request_style"] == "security-bench"
    assert (settings["temperature"], settings["max_tokens"]) == (0.1, 30000)
    assert 'id="request-style"' in report and "request_style</span>=<code>security-bench" in report


def test_our_own_request_stays_the_default(tmp_path: Path) -> None:
    _original_suite(tmp_path / "suite")
    with LoopbackServer() as server:
        result = run_cli(
            server.base_url, tmp_path / "results.db", tmp_path / "suite", env=_env(tmp_path)
        )
        assert result.returncode == 0, result.stderr
        body = server.completions()[0].body
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["max_tokens"] == 1024 and "temperature" not in body
    assert body["response_format"]["json_schema"]["name"] == "security_verdict"
    (run,) = runs(tmp_path / "results.db")
    assert json.loads(run["settings"])["request_style"] == "secbench-tui"


@pytest.mark.parametrize(
    "flags",
    [
        ("--temperature", "0"),
        ("--max-tokens", "500"),
        ("--seed", "1"),
        ("--reasoning-effort", "low"),
        ("--response-format", "none"),
    ],
)
def test_flags_that_would_change_the_original_request_are_refused(
    tmp_path: Path, flags: tuple[str, str]
) -> None:
    _original_suite(tmp_path / "suite")
    with LoopbackServer() as server:
        result = run_cli(
            server.base_url,
            tmp_path / "results.db",
            tmp_path / "suite",
            "--request-style",
            "security-bench",
            *flags,
            env=_env(tmp_path),
        )
        assert server.completions() == []
    assert result.returncode == 2
    assert f"{flags[0]} cannot be combined with --request-style security-bench" in result.stderr


def test_a_seed_is_refused_for_the_original_request_whatever_model_comes_first(
    tmp_path: Path,
) -> None:
    """A baseline takes --seed; a model sent the original request does not, in any order."""
    _original_suite(tmp_path / "suite")
    with LoopbackServer() as server:
        result = run_cli(
            server.base_url,
            tmp_path / "results.db",
            tmp_path / "suite",
            "--request-style",
            "security-bench",
            "--seed",
            "3",
            model="baseline/random,openai/gpt-4o-mini",
            env=_env(tmp_path),
        )
        assert server.completions() == []
    assert result.returncode == 2, result.stdout
    assert "--seed cannot be combined with --request-style security-bench" in result.stderr


def test_stored_reasoning_survives_reuse(tmp_path: Path) -> None:
    """A result reused by a later identical run keeps its reasoning and reasoning tokens."""
    write_suite(tmp_path / "suite", {"api": ["bad"]})
    db = tmp_path / "results.db"
    with LoopbackServer(default=srv.thinking_model()) as server:
        for _ in range(2):
            result = run_cli(
                server.base_url, db, tmp_path / "suite", model=REASONER, env=_env(tmp_path)
            )
            assert result.returncode == 0, result.stderr
        assert len(server.completions()) == 1
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT reasoning, reasoning_tokens, reused_from FROM evaluations ORDER BY id"
        ).fetchall()
    assert rows[1][0] == rows[0][0] and rows[1][1] == rows[0][1] and rows[1][2] == 1


def test_odd_stored_reasoning_neither_aborts_reuse_nor_the_report(tmp_path: Path) -> None:
    """Reasoning columns edited by hand (or by another tool) read as unknown, like tokens."""
    write_suite(tmp_path / "suite", {"api": ["bad", "good"]})
    db = tmp_path / "results.db"
    with LoopbackServer(default=srv.thinking_model()) as server:
        first = run_cli(server.base_url, db, tmp_path / "suite", model=REASONER, env=_env(tmp_path))
        assert first.returncode == 0, first.stderr
        with closing(sqlite3.connect(db)) as conn:
            conn.execute("UPDATE evaluations SET reasoning_tokens='lots', reasoning=X'00ff41'")
            conn.execute("UPDATE evaluations SET reasoning_tokens=1e300 WHERE id=2")
            conn.commit()
        again = run_cli(server.base_url, db, tmp_path / "suite", model=REASONER, env=_env(tmp_path))
        report = _report(tmp_path, db, server.base_url)
    assert again.returncode == 0, again.stderr
    assert "2 reused" in again.stdout and "Traceback" not in again.stderr
    assert "<html" in report


def test_hostile_reasoning_is_stored_exactly_and_shown_inert(tmp_path: Path) -> None:
    (case,) = write_suite(tmp_path / "suite", {"api": ["bad"]})
    hostile = "<script>alert(1)</script>\x1b[2J\x1b]0;owned\x07 \u202eevil"
    db = tmp_path / "results.db"
    with LoopbackServer() as server:
        server.always(case.marker, replace(srv.answer("bad"), reasoning=hostile))
        result = run_cli(server.base_url, db, tmp_path / "suite", env=_env(tmp_path))
        assert result.returncode == 0, result.stderr
        report = _report(tmp_path, db, server.base_url)
    (row,) = by_case(db).values()
    assert row["reasoning"] == hostile
    shown = _shown_in_app(db, row["id"])
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "\\x1b[2J" in shown and "\\u202e" in shown
    assert "<script>alert(1)</script>" not in report
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in report


def test_exports_carry_each_results_reasoning_and_the_report_the_runs_total(
    tmp_path: Path,
) -> None:
    """Issue 22: JSON and CSV exports had no reasoning text or tokens per result, and the
    report's model table hid the run's reasoning-token total in a tooltip."""
    cases = write_suite(tmp_path / "suite", {"api": ["bad", "good"]})
    db = tmp_path / "results.db"
    with LoopbackServer(default=srv.thinking_model()) as server:
        done = run_cli(server.base_url, db, tmp_path / "suite", model=REASONER, env=_env(tmp_path))
        assert done.returncode == 0, done.stderr
        report = _report(tmp_path, db, server.base_url)
        as_json = run_cli(
            server.base_url, db, tmp_path / "suite", "--export", "json", env=_env(tmp_path)
        )
        as_csv = run_cli(
            server.base_url, db, tmp_path / "suite", "--export", "csv", env=_env(tmp_path)
        )
    per_case = srv.THINKING_BUDGET // 2
    results = json.loads(as_json.stdout)["results"]
    assert len(results) == len(cases)
    for result in results:
        assert result["reasoning"] == "Let me check each query against the rules (effort default)."
        assert result["reasoning_tokens"] == per_case
    (run,) = json.loads(as_json.stdout)["runs"]
    assert run["summary"]["reasoning_tokens"] == len(cases) * per_case
    table = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert [int(row["reasoning_tokens"]) for row in table] == [per_case] * len(cases)
    assert all(row["reasoning"].startswith("Let me check") for row in table)
    assert f"({numbers.compact(len(cases) * per_case)} reasoning)</span>" in report
