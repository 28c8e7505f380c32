"""The real command on data it must not trust or cannot write: keys, output paths, numbers.

Each test runs `python -m secbench_tui` as a subprocess against real files (and, where a model
is asked, the loopback server), then checks the exit code, the message and the database.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from tests.e2e import server as srv
from tests.e2e.harness import REPO_ROOT, cli_env, rows, run_cli, runs, write_suite
from tests.e2e.server import LoopbackServer

EXIT_FAILED = 1  # secbench_tui.cli.EXIT_FAILED
EXIT_USAGE = 2
MALFORMED_KEY = "sk-or-v1 pasted with a space\n"


def command(cwd: Path, *args: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secbench_tui", *args],
        cwd=cwd,
        env=cli_env(key),
        capture_output=True,
        text=True,
        timeout=120,
    )


def baseline_db(tmp_path: Path) -> Path:
    """A database with one offline run of the fixture suite (no model, no key)."""
    db = tmp_path / "r.db"
    suite = REPO_ROOT / "tests" / "fixtures" / "suite"
    done = command(
        tmp_path, "--no-ui", "--model", "baseline/random", "--db", str(db), "--cases", str(suite)
    )
    assert done.returncode == 0, done.stderr
    return db


def test_a_malformed_key_does_not_stop_commands_that_never_send_it(tmp_path: Path) -> None:
    db = baseline_db(tmp_path)
    lint = command(tmp_path, "--lint", "--cases", str(REPO_ROOT / "tests/fixtures/suite"),
                   key=MALFORMED_KEY)  # fmt: skip
    assert "OPENROUTER_API_KEY" not in lint.stdout + lint.stderr
    report = command(tmp_path, "--report", "--db", str(db), key=MALFORMED_KEY)
    assert report.returncode == 0, report.stderr
    export = command(tmp_path, "--export", "csv", "--db", str(db), key=MALFORMED_KEY)
    assert export.returncode == 0, export.stderr
    assert export.stdout.startswith("run_id,") or "case_id" in export.stdout.splitlines()[0]
    verify = command(tmp_path, "--verify", "--cases", str(tmp_path / "none"), key=MALFORMED_KEY)
    assert "OPENROUTER_API_KEY" not in verify.stdout + verify.stderr
    # it got as far as the suite, or (without the verify extra) as far as saying how to get it
    assert "--cases" in verify.stderr or "needs the verify extra" in verify.stderr


def test_a_run_with_a_malformed_key_names_the_variable_once_and_the_fix(
    tmp_path: Path, server: LoopbackServer
) -> None:
    write_suite(tmp_path / "suite", {"app": ["bad"]})
    result = run_cli(server.base_url, tmp_path / "r.db", tmp_path / "suite", key=MALFORMED_KEY)
    assert result.returncode == EXIT_USAGE
    assert result.stderr.count("OPENROUTER_API_KEY") == 1, result.stderr
    assert "copy the key again" in result.stderr
    assert "pasted" not in result.stderr  # the value itself is never shown
    assert not server.completions()


def test_an_unwritable_summary_json_exits_1_naming_it_after_storing_the_results(
    tmp_path: Path, server: LoopbackServer
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["bad", "good"]})
    folder = tmp_path / "a-folder"
    folder.mkdir()
    db = tmp_path / "r.db"
    result = run_cli(server.base_url, db, tmp_path / "suite", "--summary-json", str(folder))
    assert result.returncode == EXIT_FAILED, result.stderr
    assert f"--summary-json {folder}" in result.stderr
    assert runs(db)[0]["status"] == "completed"
    assert len(rows(db)) == len(cases)
    assert "Run 1 completed" in result.stdout  # the summary is still printed


def test_report_and_export_to_an_unwritable_out_exit_1_naming_it(tmp_path: Path) -> None:
    db = baseline_db(tmp_path)
    folder = tmp_path / "a-folder"
    folder.mkdir()
    missing = tmp_path / "no-such-folder" / "deeper" / "x.json"
    (tmp_path / "no-such-folder").write_text("a file, not a folder", encoding="utf-8")
    for args, target in (
        (("--report", "--out", str(folder)), folder),
        (("--export", "json", "--out", str(folder)), folder),
        (("--export", "junit", "--out", str(missing)), missing),
    ):
        result = command(tmp_path, *args, "--db", str(db))
        assert result.returncode == EXIT_FAILED, (args, result.stderr)
        assert f"--out {target}: " in result.stderr, result.stderr
        assert "cannot write it" in result.stderr or "does not exist" in result.stderr
        assert "partial" not in result.stderr
    assert list(folder.iterdir()) == []


def test_an_out_path_in_a_missing_folder_is_refused_not_created(tmp_path: Path) -> None:
    db = baseline_db(tmp_path)
    target = tmp_path / "typo" / "deeper" / "x.csv"
    for args in (("--export", "csv"), ("--report",)):
        result = command(tmp_path, *args, "--out", str(target), "--db", str(db))
        assert result.returncode == EXIT_FAILED, (args, result.stderr)
        assert f"--out {target}: folder {target.parent} does not exist" in result.stderr
    assert not (tmp_path / "typo").exists()


def test_a_case_linking_outside_the_suite_is_skipped_with_a_warning_and_never_sent(
    tmp_path: Path, server: LoopbackServer
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["bad", "good"]})
    secret = tmp_path / "private" / "id_rsa.md"
    secret.parent.mkdir()
    secret.write_text("# Code\n```\nPRIVATE-KEY-MATERIAL\n```\n# Expected\nbad\n", encoding="utf-8")
    link = tmp_path / "suite" / "app" / "zz-linked.md"
    link.symlink_to(secret)
    db = tmp_path / "r.db"
    result = run_cli(server.base_url, db, tmp_path / "suite")
    assert result.returncode == 0, result.stderr
    assert f"warning: skipped {link}" in result.stderr
    assert "outside the suite folder" in result.stderr
    assert all("PRIVATE-KEY-MATERIAL" not in r.prompt for r in server.completions())
    assert len(server.completions()) == len(cases)
    assert {r["case_id"] for r in rows(db)} == {c.case_id for c in cases}


def test_unbelievable_costs_are_stored_as_unknown_and_do_not_count_toward_max_cost(
    tmp_path: Path, server: LoopbackServer
) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["bad", "good"] * 3})
    reported = [-4_000_000_000.0, float("nan"), 0.01, 1e12, 0.01, 0.01]
    for case, cost in zip(cases, reported, strict=True):
        server.always(case.marker, srv.answer(case.expected, cost=cost))
    db = tmp_path / "r.db"
    result = run_cli(server.base_url, db, tmp_path / "suite", "--max-cost", "0.015")
    assert result.returncode == 0, result.stderr
    # only the believable 0.01s count: the budget is reached at the fifth case, not never
    assert len(server.completions()) == 5
    (run,) = runs(db)
    assert run["status"] == "stopped" and "max-cost" in run["message"]
    stored = rows(db)
    assert [r["cost"] for r in stored] == [None, None, 0.01, None, 0.01]
    for row, cost in zip(stored, reported, strict=False):
        believed = cost == 0.01
        assert (row["notes"] is None) == believed, row["notes"]
        if not believed:
            assert "usage.cost" in row["notes"] and "not believable" in row["notes"]
    assert "cost ≥ $0.0200 (3 answers had no price)" in result.stdout  # a lower bound
    assert "note: app/case-0001-bad.md: usage.cost -4000000000.0" in result.stderr
    for args in (("--report",), ("--export", "json"), ("--export", "csv")):
        shown = command(tmp_path, *args, "--db", str(db))
        assert shown.returncode == 0, shown.stderr


def test_a_database_holding_a_negative_cost_still_reports(tmp_path: Path) -> None:
    """A file written by an older version (or by hand) with a negative cost in it."""
    db = baseline_db(tmp_path)
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("UPDATE evaluations SET cost = -4000000000.0 WHERE id = 1")
        conn.execute("UPDATE evaluations SET cost = 'free', prompt_tokens = -7 WHERE id = 2")
        conn.commit()
    report = command(tmp_path, "--report", "--db", str(db))
    assert report.returncode == 0, report.stderr
    html = Path(tmp_path / report.stdout.strip().splitlines()[-1]).read_text(encoding="utf-8")
    assert "4,000,000,000" not in html


def test_a_report_or_export_selecting_nothing_is_a_usage_error(tmp_path: Path) -> None:
    """`--runs` or `--models` naming nothing in the database, or a `--db` that is not there,
    is a flag whose value is wrong: exit 2 (as `--help` lists), the message naming the flag
    and what there is; exit 1 stays for a file that cannot be written."""
    db = baseline_db(tmp_path)
    for args, said in (
        (("--export", "json", "--runs", "99", "--db", str(db)), "--runs: no run 99 in"),
        (("--report", "--models", "nosuch", "--db", str(db)), "--models: no runs of nosuch"),
        (("--report", "--db", str(tmp_path / "never.db")), "no such database"),
    ):
        result = command(tmp_path, *args)
        assert result.returncode == EXIT_USAGE, (args, result.stderr)
        assert said in result.stderr, result.stderr
    assert not (tmp_path / "never.db").exists() and not (tmp_path / "reports").exists()
