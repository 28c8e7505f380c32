"""Several processes opening the same database at once: each must get a usable store.

Real processes on a real file: the race is between SQLite connections in different processes
(each reads the schema version, then waits for the write lock to migrate; each switches the
file to WAL), which threads in one interpreter would not reproduce faithfully. The processes
are started once and opened a new file each round, all released by one line on their stdin,
so many rounds are cheap. Before the switch to WAL was retried and the copy of an original's
file made under the write lock through SQLite, every run of these tests failed: a new file
within 20 rounds (`database is locked`, `disk I/O error`, or taken for the original's and
copied), an original's file in its first round (copied several times, or `disk I/O error`).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scripts.harness import original_db as original
from scripts.harness.original_db import Row
from secbench_tui.core.store.schema import SCHEMA_VERSION

OPENER = """
import asyncio, json, sys
from secbench_tui.core.store.connection import StoreError
from secbench_tui.core.store.database import Store

async def open_once(path):
    notices = []
    try:
        store = await Store.open(path, on_notice=notices.append)
    except StoreError as exc:
        return {"error": str(exc)}
    await store.close()
    return {"backup": None if store.backup is None else str(store.backup), "notices": notices}

print("READY", flush=True)
for line in sys.stdin:
    print(json.dumps(asyncio.run(open_once(line.rstrip("\\n")))), flush=True)
"""

PROCESSES = 8
ROUNDS = 40

# one worker makes the module's shared fixture once (pyproject: --dist=loadgroup)
pytestmark = [pytest.mark.xdist_group("store-concurrent"), pytest.mark.long]


@pytest.fixture(scope="module")
def openers() -> Iterator[list[subprocess.Popen[str]]]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    try:
        for proc in procs:  # the barrier: every interpreter has imported the store
            assert proc.stdout is not None and proc.stdout.readline() == "READY\n"
        yield procs
    finally:
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.close()
        for proc in procs:
            proc.wait(timeout=30)


def open_at_once(procs: list[subprocess.Popen[str]], db: Path) -> list[dict[str, Any]]:
    """Release every process on the same file (they block reading stdin) and collect."""
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(f"{db}\n")
        proc.stdin.flush()
    results = []
    for proc in procs:
        assert proc.stdout is not None
        results.append(json.loads(proc.stdout.readline()))
    return results


def original_row(i: int) -> Row:
    return Row(
        test_file=f"/b/tests/shop/c-{i}.md",
        model="m/a",
        expected="bad",
        actual="bad",
        prompt="default.txt",
        code=f"SELECT {i};",
        served_model="m/a-1",
        provider="P",
        prompt_tokens=1,
        completion_tokens=1,
        cost=0.1,
    )


def assert_current(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        columns = [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
    assert columns.count("pid") == 1


def test_concurrent_first_opens_of_a_new_database_all_succeed(
    tmp_path: Path, openers: list[subprocess.Popen[str]]
) -> None:
    for round_ in range(ROUNDS):
        db = tmp_path / f"results-{round_}.db"
        results = open_at_once(openers, db)
        failures = [result["error"] for result in results if "error" in result]
        assert not failures, f"round {round_}: {failures}"
        # a new file is ours: nobody may take it for the original's and copy it
        assert all(result["backup"] is None and not result["notices"] for result in results)
        assert_current(db)
    assert [path.name for path in tmp_path.iterdir() if "bak" in path.name] == []


def test_concurrent_first_opens_of_an_original_file_copy_it_once(
    tmp_path: Path, openers: list[subprocess.Popen[str]]
) -> None:
    for round_ in range(ROUNDS // 4):
        folder = tmp_path / f"round-{round_}"
        folder.mkdir()
        db = folder / "results.db"
        original.create(db)
        original.append(db, [original_row(1), original_row(2)])
        before = db.read_bytes()
        results = open_at_once(openers, db)
        failures = [result["error"] for result in results if "error" in result]
        assert not failures, f"round {round_}: {failures}"
        backups = [str(result["backup"]) for result in results if result["backup"] is not None]
        assert len(backups) == 1, f"round {round_}: {backups}"
        told = [result for result in results if result["notices"]]  # the one that copied it
        assert len(told) == 1 and len(told[0]["notices"]) == 1 and told[0]["backup"]
        copies = [path for path in folder.iterdir() if "bak" in path.name]
        assert copies == [Path(backups[0])]
        assert copies[0].read_bytes() == before
        assert_current(db)
        with sqlite3.connect(db) as conn:  # imported once, into one run
            assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
            assert (
                conn.execute(
                    "SELECT count(*) FROM evaluations WHERE run_id IS NOT NULL"
                ).fetchone()[0]
                == 2
            )
