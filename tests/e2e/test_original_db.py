"""A database the original security-bench evaluator wrote, opened by the real command.

The file is written as the original's final version writes it (three prompts, two models,
request and response bodies like OpenRouter's, one row whose JSON is damaged), opened with
`secbench-tui --report` and with a `--no-ui` run against the loopback server, then read back
through the original's own columns and statements with plain sqlite3: every row and value as
it was, the original's INSERT still accepted, a byte-identical copy of the file beside it,
one run per model and prompt, and rows the original appends picked up on the next open.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

from scripts.harness import original_db as original
from scripts.harness.original_db import Row
from tests.e2e import server as srv
from tests.e2e.harness import FAKE_KEY, MODEL, cli_env, connect, run_cli, write_suite
from tests.e2e.server import LoopbackServer

OTHER = "anthropic/claude-3.5-haiku"
PROMPTS = ("default.txt", "cot.txt", "strict.txt")
BACKUP = ".bak-before-secbench-tui"
DAMAGED_REQUEST = '{"model": "anthropic/claude-3.5-haiku", "messages": ['
DAMAGED_RESPONSE = "upstream said: <html>502</html>"


def _cases(root: str) -> list[tuple[str, str]]:
    """Ten (test file, expected) pairs in two apps, as the original's absolute paths."""
    return [
        (f"{root}/tests/{app}/case-{n:02d}.md", "bad" if n % 2 else "good")
        for app in ("shop", "blog")
        for n in range(1, 6)
    ]


def _row(test_file: str, expected: str, model: str, prompt: str, i: int) -> Row:
    wrong = (i + (PROMPTS.index(prompt) if prompt in PROMPTS else 0)) % 4 == 0
    actual = {"good": "bad", "bad": "good"}[expected] if wrong else expected
    return Row(
        test_file=test_file,
        model=model,
        expected=expected,
        actual=actual,
        prompt=prompt,
        code=f"SELECT {i} FROM orders WHERE id = :id; -- {model} {prompt}",
        served_model=f"{model}-2024-07-18",
        provider="OpenAI" if model == MODEL else "Anthropic",
        prompt_tokens=600 + i,
        completion_tokens=80 + i,
        cost=0.0001 * (i + 1),
    )


def _original_db(path: Path, root: str = "/home/u/security-bench") -> list[Row]:
    """40 rows: 10 cases x 3 prompts of MODEL, 10 cases x 1 prompt of OTHER (one damaged)."""
    original.create(path)
    rows = [
        _row(test_file, expected, MODEL, prompt, i)
        for prompt in PROMPTS
        for i, (test_file, expected) in enumerate(_cases(root))
    ]
    rows += [
        _row(test_file, expected, OTHER, "default.txt", i)
        for i, (test_file, expected) in enumerate(_cases(root))
    ]
    original.append(path, rows)
    with closing(sqlite3.connect(path)) as conn:  # a reply the original kept, now unreadable
        conn.execute(
            "UPDATE evaluations SET request=?, response=? WHERE model_name=? AND test_file LIKE ?",
            (DAMAGED_REQUEST, DAMAGED_RESPONSE, OTHER, "%/shop/case-03.md"),
        )
        conn.commit()
    return rows


def _damaged(row: Row) -> bool:
    return row.model == OTHER and row.test_file.endswith("/shop/case-03.md")


def _report(db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--db", str(db), "--report"],
        cwd=db.parent,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _query(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with closing(connect(db)) as conn:
        return [tuple(r) for r in conn.execute(sql, params).fetchall()]


def test_an_original_database_is_adopted_in_place_and_the_original_still_uses_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "results.db"
    rows = _original_db(db)
    before, before_bytes = original.read_all(db), db.read_bytes()
    assert len(before) == 40

    result = _report(db)
    assert result.returncode == 0, result.stderr
    backup = db.with_name(db.name + BACKUP)
    assert f"a copy of the file as it was is at {backup}" in result.stderr
    assert backup.read_bytes() == before_bytes  # the file as it was, byte for byte

    # The original's view: every row, column and value as it wrote them.
    assert original.read_all(db) == before
    with closing(sqlite3.connect(db, timeout=10)) as conn:
        done = conn.execute(original.ALREADY_DONE, (rows[0].test_file, MODEL, "cot.txt")).fetchone()
    assert done is not None and done[1:] == (before[10][5], before[10][4])

    # One imported run per model and prompt, named as our prompts are; no repeats.
    assert _query(
        db,
        "SELECT model_name, prompt_name, status, total_cases FROM runs"
        " ORDER BY model_name, prompt_name",
    ) == [
        (OTHER, "default", "imported", 10),
        (MODEL, "cot", "imported", 10),
        (MODEL, "default", "imported", 10),
        (MODEL, "strict", "imported", 10),
    ]
    assert _query(db, "SELECT MAX(repeat), COUNT(*) FROM evaluations WHERE run_id IS NULL") == [
        (None, 0)
    ]
    assert _query(db, "SELECT COUNT(DISTINCT repeat) FROM evaluations") == [(1,)]
    wrong = sum(1 for r in rows if r.actual != r.expected)
    assert _query(db, "SELECT COUNT(*) FROM evaluations WHERE outcome='wrong'") == [(wrong,)]

    # What the request and response columns held, read into ours.
    first = rows[0]
    assert _query(
        db,
        "SELECT e.app, e.case_id, e.raw_reply, e.prompt_tokens, e.completion_tokens, e.cost,"
        " e.provider, e.served_model, e.finish_reason, e.http_status, e.error, c.code"
        " FROM evaluations e JOIN case_texts c ON c.hash = e.case_hash WHERE e.id = 1",
    ) == [
        (
            "shop",
            "shop/case-01.md",
            first.content,
            first.prompt_tokens,
            first.completion_tokens,
            first.cost,
            "OpenAI",
            first.served_model,
            "stop",
            200,
            None,
            first.code,
        )
    ]
    assert _query(db, "SELECT ROUND(TOTAL(cost), 6) FROM evaluations") == [
        (round(sum(r.cost for r in rows if not _damaged(r)), 6),)
    ]

    # The damaged row: kept as it was, its outcome read from the verdicts, the trouble named.
    ((outcome, raw, error, tokens, request, response),) = _query(
        db,
        "SELECT outcome, raw_reply, error, prompt_tokens, request, response FROM evaluations"
        " WHERE model_name=? AND case_id='shop/case-03.md'",
        OTHER,
    )
    assert (request, response, raw, tokens) == (
        DAMAGED_REQUEST,
        DAMAGED_RESPONSE,
        DAMAGED_RESPONSE,
        None,
    )
    assert outcome == "correct" and "request is not JSON" in error
    assert "response is not JSON" in error

    (report,) = (tmp_path / "reports").glob("report_*.html")
    html = report.read_text(encoding="utf-8")
    for prompt in ("default", "cot", "strict"):
        assert f"{MODEL} \u00b7 {prompt}" in html  # a model with several prompts

    # The original appends: a case it had not asked yet, and a prompt it had not used.
    later = [
        _row("/home/u/security-bench/tests/shop/case-06.md", "bad", MODEL, "cot.txt", 11),
        _row("/home/u/security-bench/tests/blog/case-01.md", "good", OTHER, "paranoid.txt", 12),
    ]
    original.append(db, later)
    result = _report(db)
    assert result.returncode == 0, result.stderr
    assert "original security-bench" not in result.stderr  # adopted once, copied once
    assert sorted(tmp_path.glob(f"*{BACKUP}*")) == [backup]
    assert _query(
        db,
        "SELECT r.model_name, r.prompt_name, r.total_cases, COUNT(e.id) FROM runs r"
        " JOIN evaluations e ON e.run_id = r.id WHERE r.prompt_name IN ('cot', 'paranoid')"
        " GROUP BY r.id ORDER BY r.id",
    ) == [(MODEL, "cot", 11, 11), (OTHER, "paranoid", 1, 1)]
    assert _query(db, "SELECT COUNT(*) FROM evaluations WHERE run_id IS NULL") == [(0,)]
    assert original.read_all(db)[:40] == before
    assert [r[2:] for r in original.read_all(db)[40:]] == [
        (
            r.test_file,
            r.model,
            r.expected,
            r.actual,
            r.explanation,
            r.request(),
            r.response(),
            r.prompt,
        )
        for r in later
    ]


def test_a_run_of_ours_lands_in_the_originals_table_readable_by_the_original(
    tmp_path: Path, server: LoopbackServer
) -> None:
    suite = tmp_path / "suite"
    cases = write_suite(suite, {"shop": ["bad", "good", "bad"]})
    db = tmp_path / "results.db"
    original.create(db)
    theirs = [
        _row(str(suite / f"{c.case_id}"), c.expected, MODEL, "default.txt", i)
        for i, c in enumerate(cases)
    ]
    original.append(db, theirs)
    before = original.read_all(db)
    server.always(cases[1].marker, srv.garbage())  # unparsed: no verdict to write

    result = run_cli(server.base_url, db, suite, key=FAKE_KEY)
    assert result.returncode == 0, result.stderr
    assert "a copy of the file as it was is at" in result.stderr

    every = original.read_all(db)
    assert every[:3] == before
    ours = [(r[2], r[3], r[4], r[5], r[9]) for r in every[3:]]
    assert sorted(ours) == sorted(
        (
            str(suite / c.case_id),
            MODEL,
            c.expected,
            "" if c is cases[1] else c.expected,
            "default.txt",
        )
        for c in cases
    )
    # our run and the imported one: the same cases, side by side under one prompt name
    assert _query(db, "SELECT prompt_name, status, total_cases FROM runs ORDER BY id") == [
        ("default", "imported", 3),
        ("default", "completed", 3),
    ]
    assert _query(db, "SELECT case_id FROM evaluations WHERE run_id=1 ORDER BY id") == _query(
        db, "SELECT case_id FROM evaluations WHERE run_id=2 ORDER BY case_index"
    )
    assert _query(db, "SELECT outcome FROM evaluations WHERE actual_result=''") == [("unparsed",)]

    # the original goes on: it skips what is done and appends the rest
    with closing(sqlite3.connect(db, timeout=10)) as conn:
        assert conn.execute(
            original.ALREADY_DONE, (str(suite / cases[0].case_id), MODEL, "default.txt")
        ).fetchall()
    original.append(db, [_row(str(suite / "shop/new.md"), "bad", OTHER, "default.txt", 9)])
    assert len(original.read_all(db)) == 7
