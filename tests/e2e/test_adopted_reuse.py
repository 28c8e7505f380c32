"""Answers the original security-bench evaluator paid for are not paid for again (issue 22).

A database is written in the original's layout (scripts/harness/original_db.py) holding, for
each case, the request body `--request-style security-bench` sends (captured at a loopback
server, as the original sends it byte for byte) and the reply it got. A run over that file with
the same model, prompt and style must send nothing it already has (counted at the server), ask
again only the case whose stored request differs, and the report and exports must list the
imported and the new results of the same files together, by model and prompt.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scripts.harness import original_db as original
from tests.e2e.harness import MODEL, SuiteCase, by_case, cli_env, run_cli, runs, write_suite
from tests.e2e.server import LoopbackServer

ROOT = "/home/u/security-bench"


def _captured(tmp_path: Path, suite: Path, prompt: Path) -> dict[str, tuple[bytes, object]]:
    """Each case's request body as sent in the original's style, and the reply it got."""
    with LoopbackServer() as server:
        done = run_cli(
            server.base_url,
            tmp_path / "scratch.db",
            suite,
            *("--request-style", "security-bench", "--prompt", str(prompt)),
        )
        assert done.returncode == 0, done.stderr
        sent = server.completions()
    captured = {}
    for request in sent:
        marker = request.prompt.split("<<case:", 1)[1].split(">>", 1)[0]
        captured[marker] = (request.raw, request.response)
    return captured


def _write_original(db: Path, cases: list[SuiteCase], captured: dict[str, tuple[bytes, object]]):
    original.create(db)
    rows = []
    for case in cases:
        raw, response = captured[case.marker.removeprefix("<<case:").removesuffix(">>")]
        reply = json.loads(response["choices"][0]["message"]["content"])  # type: ignore[index]
        rows.append(
            (
                f"{ROOT}/tests/{case.app}/{case.name}.md",
                MODEL,
                case.expected,
                reply["assessment"],
                reply["explanation"],
                raw.decode("utf-8"),  # the body the original stored for the request it sent
                json.dumps(response),
                "default.txt",
            )
        )
    original.append(db, rows)


def test_a_run_over_adopted_results_sends_only_what_is_not_stored(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    cases = write_suite(suite, {"shop": ["bad", "good"] * 3})
    prompts = tmp_path / "eval-prompts"
    prompts.mkdir()
    prompt = prompts / "default.txt"
    prompt.write_text("Answer as JSON: explanation, then assessment.\n", encoding="utf-8")
    db = tmp_path / "results.db"
    _write_original(db, cases, _captured(tmp_path, suite, prompt))
    # one stored request that is not what would be sent now (another temperature)
    changed = cases[2]
    with original.closing(original.sqlite3.connect(db)) as conn:  # type: ignore[attr-defined]
        (body,) = conn.execute(
            "SELECT request FROM evaluations WHERE test_file LIKE ?", (f"%/{changed.name}.md",)
        ).fetchone()
        conn.execute(
            "UPDATE evaluations SET request=? WHERE test_file LIKE ?",
            (body.replace('"temperature":0.1', '"temperature":0.2'), f"%/{changed.name}.md"),
        )
        conn.commit()

    server = LoopbackServer().start()
    try:
        plan = run_cli(
            server.base_url,
            db,
            suite,
            *("--request-style", "security-bench", "--prompt", str(prompt), "--dry-run"),
        )
        assert plan.returncode == 0, plan.stderr
        assert f"prompt default: {len(cases)} cases, 1 of {len(cases)} requests" in plan.stdout
        result = run_cli(
            server.base_url,
            db,
            suite,
            *("--request-style", "security-bench", "--prompt", str(prompt)),
        )
        asked = server.completions()
        server.reset()
        # the same run again (same endpoint) asks nothing at all
        again = run_cli(
            server.base_url,
            db,
            suite,
            *("--request-style", "security-bench", "--prompt", str(prompt)),
        )
        assert again.returncode == 0, again.stderr
        assert server.completions() == []
    finally:
        server.stop()

    assert result.returncode == 0, result.stderr
    assert len(asked) == 1 and changed.marker in asked[0].prompt
    assert f"1 to ask, {len(cases) - 1} reused" in result.stdout
    imported, new, _ = runs(db)
    assert imported["status"] == "imported" and new["status"] == "completed"
    recorded = by_case(db, new["id"])
    assert len(recorded) == len(cases)
    assert all(row["outcome"] == "correct" for row in recorded.values())
    reused = [row for row in recorded.values() if row["reused_from"] is not None]
    assert len(reused) == len(cases) - 1
    # the imported run now belongs to the suite whose files it answered
    assert imported["suite_path"] == new["suite_path"] != ""

    # the report ranks them as one model x prompt on one suite, not 2 x the cases
    exported = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--export", "json", "--db", str(db)],
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert exported.returncode == 0, exported.stderr
    data = json.loads(exported.stdout)
    assert len(data["results"]) == len(cases)
    report = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--report", "--db", str(db), "--out", "r.html"],
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "suite unknown (imported)" not in html
