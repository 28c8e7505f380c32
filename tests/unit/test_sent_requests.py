"""The messages of each request, stored once per text (`core.store.requests`), over real
SQLite files: what every suite sends splits into parts that join back exactly, older rows say
they kept none, and rows adopted from the original evaluator show the body it stored."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from scripts.harness import original_db as original
from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.models import Case, SuiteKind
from secbench_tui.core.run.engine import Engine
from secbench_tui.core.store import requests
from secbench_tui.core.store.database import Store
from secbench_tui.core.suites.markdown import load_markdown_suite
from tests.unit.test_matrix import Counting, spec


@pytest.mark.parametrize("style", ["secbench-tui", "security-bench"])
def test_the_parts_of_every_bundled_case_join_into_what_is_sent(style: str) -> None:
    suite = load_markdown_suite(bundled_cases_dir(), None, "Judge it.\n", style)
    assert suite.cases
    for case in suite.cases:
        joined = [(r, "".join(p)) for r, p in requests.message_parts(case)]
        assert joined == [(m.role, m.content) for m in case.prompt_messages()], case.case_id


def test_a_case_without_prefix_is_its_code() -> None:
    case = Case(kind=SuiteKind.MARKDOWN, app="a", case_id="a/x.md", test_file="x", expected="bad",
                code="SELECT 1")  # fmt: skip
    assert requests.message_parts(case) == (("user", ("SELECT 1",)),)


async def test_shared_texts_are_written_once_in_one_call(tmp_path: Path) -> None:
    suite = load_markdown_suite(bundled_cases_dir(), None, "Judge it.\n")
    store = await Store.open(tmp_path / "r.db")
    refs = await store.remember_requests(suite.cases)
    again = await store.remember_requests(suite.cases)  # nothing new to write
    await store.db.commit()
    await store.close()
    assert refs == again and set(refs) == {c.case_id for c in suite.cases}
    with sqlite3.connect(tmp_path / "r.db") as conn:
        stored = dict(conn.execute("SELECT hash, text FROM request_texts"))
    apps = {c.app for c in suite.cases}
    # each app's prefix once, the blank line once, each distinct code once
    assert len(stored) == len(apps) + 1 + len({c.code for c in suite.cases})
    assert all(requests.part_hash(text) == h for h, text in stored.items())


async def test_a_result_recorded_before_messages_were_kept_says_so(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    store = await Store.open(db)
    async for _ in Engine(spec("m", "p", n=2), Counting("m", Counter()), store).events():
        pass
    (first, second) = await store.results_page()
    sent = await store.sent_request(int(first["id"]))
    assert sent is not None and sent.source == "stored"
    assert [m.content for m in sent.messages] == ["prompt 0"]
    await store.close()
    with sqlite3.connect(db) as conn:  # what a version-8 file held: no messages
        conn.execute("UPDATE evaluations SET messages=NULL WHERE id=?", (second["id"],))
    store = await Store.open(db)
    old = await store.sent_request(int(second["id"]))
    assert await store.sent_request(10_000) is None
    await store.close()
    assert old is not None and old.source == "none" and old.messages == ()
    assert "recorded before" in old.note


async def test_a_version_8_file_gains_the_table_and_keeps_its_rows(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    store = await Store.open(db)
    async for _ in Engine(spec("m", "p", n=2), Counting("m", Counter()), store).events():
        pass
    await store.close()
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE request_texts")
        conn.execute("ALTER TABLE evaluations DROP COLUMN messages")
        conn.execute("PRAGMA user_version = 8")
    store = await Store.open(db)
    rows = await store.results_page()
    notes = [await store.sent_request(int(r["id"])) for r in rows]
    await store.close()
    assert len(rows) == 2 and all(n is not None and n.source == "none" for n in notes)


async def test_an_adopted_row_shows_the_request_the_original_stored(tmp_path: Path) -> None:
    db = tmp_path / "original.db"
    original.create(db)
    row = original.Row(
        "cases/shop/q-01-bad.md", "openai/gpt-4o-mini", "bad", "bad", "default.txt",
        "SELECT \x1b[2J * FROM orders", "openai/gpt-4o-mini", "OpenAI", 10, 5, 0.001,
    )  # fmt: skip
    original.append(db, [row])
    store = await Store.open(db, on_notice=lambda _: None)
    (result,) = await store.results_page()
    sent = await store.sent_request(int(result["id"]))
    exported, texts = await store.requests_for_export([result])
    await store.close()
    assert sent is not None and sent.source == "original"
    assert [m.role for m in sent.messages] == ["system", "user", "user", "user"]
    assert sent.messages[-1].content == "SELECT \x1b[2J * FROM orders"  # exactly as stored
    (entry,) = exported.values()
    assert entry["source"] == "original"
    joined = ["".join(texts[h] for h in m["parts"]) for m in entry["messages"]]
    assert joined == [m.content for m in sent.messages]


def test_damaged_stored_messages_are_named_not_fatal() -> None:
    assert requests.refs_of("not json") == []
    assert requests.refs_of('[["user", [1]]]') == []
    assert requests.read_original("{").source == "none"
    odd = requests.read_original('{"messages": [{"role": "user", "content": [{"text": "a"}]}, 3]}')
    assert [m.content for m in odd.messages] == ["a", "3"]
