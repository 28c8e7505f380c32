"""Reading what the original security-bench evaluator kept, and adopting its file in place."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

from scripts.harness import original_db as original
from scripts.harness.original_db import Row
from secbench_tui.core.models import Completion, Evaluation, Outcome, RecordedSettings, Scored
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.original import (
    BACKUP_SUFFIX,
    backup_path,
    case_of,
    outcome_of,
    prompt_name_of,
    read_exchange,
)
from tests.unit.test_store import make_case

REPLY = '{"explanation": "no tenant filter", "assessment": "bad"}'


def body(**choice: object) -> dict[str, object]:
    return {
        "model": "openai/gpt-4o-mini-2024-07-18",
        "provider": "OpenAI",
        "choices": [choice],
        "usage": {
            "prompt_tokens": 700,
            "completion_tokens": 90,
            "cost": 0.00012,
            "completion_tokens_details": {"reasoning_tokens": 40},
        },
    }


def test_a_reply_the_original_kept_is_read_whole() -> None:
    request = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "SQL"}]}
    response = body(
        finish_reason="stop", message={"content": REPLY, "reasoning": "thinking about tenants"}
    )
    seen = read_exchange(json.dumps(request), json.dumps(response))
    assert (seen.code, seen.raw_reply, seen.finish_reason, seen.http_status) == (
        "SQL",
        REPLY,
        "stop",
        200,
    )
    assert (seen.prompt_tokens, seen.completion_tokens, seen.cost) == (700, 90, 0.00012)
    assert (seen.served_model, seen.provider) == ("openai/gpt-4o-mini-2024-07-18", "OpenAI")
    assert (seen.reasoning, seen.reasoning_tokens, seen.unreadable) == (
        "thinking about tenants",
        40,
        None,
    )


def test_the_reply_is_found_where_the_original_looked_for_it() -> None:
    for choice in (
        {"text": REPLY},
        {"content": REPLY},
        {"message": {"text": REPLY}},
        {"message": {"content": [{"type": "text", "text": REPLY}]}},
    ):
        assert read_exchange(None, json.dumps(body(**choice))).raw_reply == REPLY


def test_damaged_bodies_are_kept_and_named_never_fatal() -> None:
    seen = read_exchange('{"messages": [', "<html>bad gateway")
    assert seen.raw_reply == "<html>bad gateway"  # the body as it was
    assert seen.unreadable is not None
    assert "request is not JSON" in seen.unreadable and "response is not JSON" in seen.unreadable
    assert seen.prompt_tokens is None and seen.code is None
    deep = "[" * 100_000 + "]" * 100_000
    assert "nested too deeply" in (read_exchange(deep, None).unreadable or "")
    assert "not a JSON object" in (read_exchange(None, "[1, 2]").unreadable or "")
    assert "holds a int" in (read_exchange(7, None).unreadable or "")
    no_choices = read_exchange(None, json.dumps({"usage": {"cost": 0.5}}))
    assert no_choices.cost == 0.5 and "no choices" in (no_choices.unreadable or "")
    assert read_exchange(None, None) == read_exchange(None, None).__class__()


def test_names_cases_and_outcomes_as_secbench_tui_has_them() -> None:
    assert [prompt_name_of(p) for p in ("default.txt", "prompts/cot.txt", "odd", "", None)] == [
        "default",
        "cot",
        "odd",
        None,
        None,
    ]
    assert case_of("/home/u/security-bench/tests/shop/a-01.md") == ("shop", "shop/a-01.md")
    assert case_of("C:\\bench\\tests\\shop\\a-01.md") == ("shop", "shop/a-01.md")
    assert case_of("a.md") == ("", "a.md") and case_of(None) == ("", "")
    assert [
        outcome_of(*pair) for pair in [("Bad", " BAD "), ("good", "bad"), ("good", "error")]
    ] == [
        "correct",
        "wrong",
        "unparsed",
    ]
    assert outcome_of(None, "good") == "wrong"


def test_a_second_copy_gets_the_time_in_its_name(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    assert backup_path(db) == tmp_path / f"results.db{BACKUP_SUFFIX}"
    (tmp_path / f"results.db{BACKUP_SUFFIX}").write_bytes(b"first")
    when = datetime(2026, 11, 26, 10, 0, 1, tzinfo=UTC)
    assert backup_path(db, when).name == f"results.db{BACKUP_SUFFIX}-20261126T100001000000Z"


def _row(i: int, prompt: str = "default.txt") -> Row:
    return Row(
        test_file=f"/b/tests/shop/c-{i}.md",
        model="m/a",
        expected="bad",
        actual="bad",
        prompt=prompt,
        code=f"SELECT {i};",
        served_model="m/a-1",
        provider="P",
        prompt_tokens=1,
        completion_tokens=1,
        cost=0.1,
    )


async def test_an_original_file_in_wal_mode_is_copied_with_what_its_log_holds(
    tmp_path: Path,
) -> None:
    db = tmp_path / "results.db"
    original.create(db)
    keeper = sqlite3.connect(db)  # writes and stays open: its rows stay in the log
    keeper.execute("PRAGMA journal_mode=WAL")
    keeper.execute("PRAGMA wal_autocheckpoint=0")
    keeper.executemany(original.INSERT, [_row(1).values(), _row(2).values()])
    keeper.commit()
    assert db.with_name("results.db-wal").stat().st_size > 0
    store = await Store.open(db, on_notice=lambda text: None)
    await store.close()
    keeper.close()
    assert store.backup is not None
    assert original.read_all(store.backup) == original.read_all(db)[:2]


async def test_our_rows_fill_what_the_original_requires_and_name_their_prompt(
    tmp_path: Path,
) -> None:
    db = tmp_path / "results.db"
    original.create(db)
    original.append(db, [_row(1)])
    notices: list[str] = []
    store = await Store.open(db, on_notice=notices.append)
    assert len(notices) == 1 and str(store.backup) in notices[0]
    run_id = await store.create_run(
        model="m/a",
        suite_kind="markdown",
        suite_path="/s",
        suite_hash="h",
        prompt_hash="p",
        settings=RecordedSettings(),
        fingerprint="f",
        tool_version="t",
        total_cases=1,
        prompt_name="cot",
    )
    failed = Evaluation(
        run_id=run_id,
        case=make_case(1),
        completion=Completion(error="HTTP 500"),
        scored=Scored(actual=None, outcome=Outcome.ERROR),
    )
    await store.record(failed, request_hash="r")
    await store.record(failed, request_hash="r")  # stored once: the unique key holds
    (ours,) = await store.run_results(run_id)
    assert "request" not in ours and "response" not in ours  # reads leave the bodies alone
    await store.close()
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute(
            "SELECT actual_result, eval_prompt, outcome FROM evaluations WHERE run_id=?",
            (run_id,),
        ).fetchall() == [("", "cot.txt", "error")]


async def test_an_older_original_with_seven_columns_keeps_them_and_grows(tmp_path: Path) -> None:
    from tests.unit.test_store import SPEC_COLUMNS, legacy_db

    db = legacy_db(tmp_path / "results.db", [("2024-01-15", "/t/po/a.md", "m", "bad", "Bad", "e")])
    store = await Store.open(db, on_notice=lambda text: None)
    await store.close()
    with closing(sqlite3.connect(db)) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(evaluations)")]
        assert columns[:7] == SPEC_COLUMNS
        conn.execute(  # the older original's INSERT
            "INSERT INTO evaluations (timestamp, test_file, model_name, expected_result,"
            " actual_result, explanation) VALUES ('2024-01-16', '/t/po/b.md', 'm', 'good',"
            " 'bad', 'later')"
        )
        conn.commit()
        assert conn.execute("SELECT actual_result FROM evaluations WHERE id=1").fetchone() == (
            "Bad",
        )
    store = await Store.open(db)
    (run,) = await store.runs()
    assert (run.model_name, run.prompt_name, run.total_cases, run.counts) == (
        "m",
        None,
        2,
        {"correct": 1, "wrong": 1},
    )
    await store.close()


async def test_rows_the_original_writes_while_we_are_open_wait_for_the_next_open(
    tmp_path: Path,
) -> None:
    db = tmp_path / "results.db"
    original.create(db)
    original.append(db, [_row(1)])
    store = await Store.open(db, on_notice=lambda text: None)
    original.append(db, [_row(2)])  # the original, running beside us
    assert await store.count_results() == 1
    assert [r["run_id"] for r in await store.results_page()] == [1]
    await store.close()
    store = await Store.open(db)
    assert [r["run_id"] for r in await store.results_page()] == [1, 1]
    await store.close()


async def test_a_missing_or_hostile_prompt_name_is_kept_as_it_is(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    original.create(db)
    original.append(db, [_row(1, prompt="\x1b[2Jevil.txt"), _row(2, prompt="default.txt")])
    with closing(sqlite3.connect(db)) as conn:  # a row from before the column had a value
        conn.execute(
            "INSERT INTO evaluations (test_file, model_name, expected_result, actual_result,"
            " eval_prompt) VALUES ('/b/tests/shop/c-3.md', 'm/a', 'good', 'good', NULL)"
        )
        conn.commit()
    store = await Store.open(db, on_notice=lambda text: None)
    runs = await store.runs()
    await store.close()
    assert [(r.prompt_name, r.settings.as_dict(), r.total_cases) for r in runs] == [
        ("\x1b[2Jevil", {"eval_prompt": "\x1b[2Jevil.txt"}, 1),
        ("default", {"eval_prompt": "default.txt"}, 1),
        (None, {"eval_prompt": None}, 1),
    ]
