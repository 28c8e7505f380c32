"""The exact messages of every result, as a loopback server received them, read back from the
database (`Store.sent_request`) and from the JSON export: each text once in the database,
hostile text kept exactly."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from secbench_tui.core.models import Message
from secbench_tui.core.store.database import Store
from tests.e2e.harness import FAKE_KEY, run_cli, write_suite
from tests.e2e.server import LoopbackServer

HOSTILE = "\x1b]0;pwned\x07\x1b[2J [bold red]loud[/] \u202eevil\u202c \x9b31m"


def _sent(db: Path) -> dict[int, tuple[str, tuple[Message, ...]]]:
    async def read() -> dict[int, tuple[str, tuple[Message, ...]]]:
        store = await Store.open(db)
        try:
            found = {}
            for row in await store.results_page(limit=1000):
                request = await store.sent_request(int(row["id"]))
                assert request is not None
                assert request.source == "stored", request.note
                found[int(row["id"])] = (str(row["case_id"]), request.messages)
            return found
        finally:
            await store.close()

    return asyncio.run(read())


@pytest.mark.parametrize("style", ["secbench-tui", "security-bench"])
def test_every_result_keeps_the_messages_the_server_received(tmp_path: Path, style: str) -> None:
    suite = tmp_path / "suite"
    cases = write_suite(suite, {"alpha": ["good", "bad", "bad"], "beta": ["good", "bad"]})
    spec = suite / "alpha" / "SPEC.md"
    spec.write_text(spec.read_text(encoding="utf-8") + HOSTILE + "\n", encoding="utf-8")
    prompt = tmp_path / "judge.txt"
    prompt.write_text("Judge the code. Reply in JSON.\n", encoding="utf-8")
    db = tmp_path / "r.db"
    with LoopbackServer() as server:
        result = run_cli(
            server.base_url,
            db,
            suite,
            *("--request-style", style, "--prompt", str(prompt)),
            key=FAKE_KEY,
        )
        assert result.returncode == 0, result.stderr
        received = {
            next(c.case_id for c in cases if c.marker in r.prompt): r.body["messages"]
            for r in server.completions()
        }
    stored = _sent(db)
    assert len(stored) == len(cases) == len(received)
    for case_id, messages in stored.values():
        assert [{"role": m.role, "content": m.content} for m in messages] == received[case_id]
    assert any(HOSTILE in m.content for _, ms in stored.values() for m in ms)  # kept exactly
    with sqlite3.connect(db) as conn:
        texts = [t for (t,) in conn.execute("SELECT text FROM request_texts")]
    # each text once: the shared prompts are not repeated per case
    assert len(texts) == len(set(texts))
    assert sum(HOSTILE in t for t in texts) == 1
    assert sum("Judge the code." in t for t in texts) == (1 if style == "security-bench" else 2)

    exported = run_cli("http://127.0.0.1:9/unused", db, suite, "--export", "json")
    assert exported.returncode == 0, exported.stderr
    document = json.loads(exported.stdout)
    texts_by_hash = document["request_texts"]
    for record in document["results"]:
        sent = [
            {"role": m["role"], "content": "".join(texts_by_hash[h] for h in m["parts"])}
            for m in record["request"]["messages"]
        ]
        assert sent == received[record["case_id"]]
