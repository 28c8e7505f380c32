"""`--batch` on a PostgreSQL store (issues 35 and 36): the batch tables are declared once
(`schema.BATCHES`, `schema.BATCH_REQUESTS`), so a PostgreSQL store holds them, a batch run
there stores what it stores on SQLite, a batch killed mid-wait is polled again rather than sent
again, `--migrate-db` copies the batches with the results, and a store made before them
(schema 10) gains them. `--batch` with `--worker` is refused, naming why."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest

from secbench_tui.core.store.database import Store
from secbench_tui.core.store.schema import SCHEMA_VERSION
from tests.e2e.batch_server import BatchLoopback, BatchPlan
from tests.e2e.harness import FAKE_KEY, by_case, run_cli, start_cli, wait_for, write_suite
from tests.e2e.postgres_stores import fresh_database, query
from tests.e2e.test_postgres_store import command

pytestmark = [pytest.mark.long, pytest.mark.xdist_group("postgres-store")]

BATCH = ("--batch", "--batch-api", "openrouter", "--batch-poll", "0.01")
SAME = ("case_id", "outcome", "actual_result", "raw_reply", "prompt_tokens",
        "completion_tokens", "cost", "request_hash")  # fmt: skip
BATCH_COLUMNS = "protocol, model_name, status, requests, counts, read_at IS NOT NULL"


def pg_results(url: str) -> list[tuple[object, ...]]:
    columns = ", ".join(SAME)
    return query(url, f"SELECT {columns} FROM evaluations WHERE run_id = 1 ORDER BY case_id")


def test_a_batch_run_on_postgresql_stores_what_it_stores_on_sqlite(
    tmp_path: Path, pg_url: str
) -> None:
    write_suite(tmp_path / "suite", {"alpha": ["good", "bad"] * 2, "beta": ["bad", "good"]})
    sqlite_db, pg = tmp_path / "r.db", fresh_database(pg_url)
    with BatchLoopback("openrouter") as server:
        for db in (str(sqlite_db), pg):
            result = run_cli(
                server.base_url, sqlite_db, tmp_path / "suite", "--db", db, *BATCH, key=FAKE_KEY
            )
            assert result.returncode == 0, result.stderr
        again = run_cli(
            server.base_url, sqlite_db, tmp_path / "suite", "--db", pg, *BATCH, key=FAKE_KEY
        )
        assert again.returncode == 0 and "reused" in again.stdout, again.stderr
        assert len(server.submissions) == 2 and server.completions() == []
    live = by_case(sqlite_db)
    assert pg_results(pg) == [tuple(live[c][k] for k in SAME) for c in sorted(live)]
    with closing(sqlite3.connect(sqlite_db)) as conn:
        on_sqlite = conn.execute(f"SELECT {BATCH_COLUMNS} FROM batches").fetchall()
        mapped = conn.execute("SELECT COUNT(*) FROM batch_requests").fetchone()
    assert query(pg, f"SELECT {BATCH_COLUMNS} FROM batches") == [
        (*row[:-1], bool(row[-1])) for row in on_sqlite
    ]
    assert query(pg, "SELECT COUNT(*) FROM batch_requests") == [tuple(mapped)]

    # --migrate-db copies the batches and their requests, with their ids, once
    copy = fresh_database(pg_url)
    first = command(tmp_path, "--migrate-db", str(sqlite_db), copy)
    assert "1 batches, 6 batch_requests" in first
    assert "0 batches, 0 batch_requests" in command(tmp_path, "--migrate-db", str(sqlite_db), copy)
    with closing(sqlite3.connect(sqlite_db)) as conn:
        ids = [tuple(r) for r in conn.execute("SELECT id, provider_batch_id FROM batches")]
    assert query(copy, "SELECT id, provider_batch_id FROM batches") == ids


def test_a_batch_killed_on_postgresql_is_polled_again_never_sent_again(
    tmp_path: Path, pg_url: str
) -> None:
    cases = write_suite(tmp_path / "suite", {"alpha": ["good", "bad"] * 2})
    db, pg = tmp_path / "r.db", fresh_database(pg_url)

    def open_batches() -> list[tuple[object, ...]]:
        try:
            return query(pg, "SELECT provider_batch_id, status FROM batches WHERE read_at IS NULL")
        except Exception:  # the tables are not made yet
            return []

    with BatchLoopback("openrouter") as server:
        server.plan(BatchPlan(statuses=("validating", "in_progress"), hold=True))
        proc = start_cli(server.base_url, db, tmp_path / "suite", "--db", pg, *BATCH, key=FAKE_KEY)
        try:
            wait_for(lambda: server.polled() >= 2, "the batch polled twice")
        finally:
            proc.kill()  # SIGKILL: nothing is flushed or closed
            proc.wait()
        ((kept, _),) = open_batches()
        assert kept in server.batches  # the provider's id, committed before the first poll
        server.finish()
        result = run_cli(server.base_url, db, tmp_path / "suite", "--db", pg, *BATCH, key=FAKE_KEY)
        assert result.returncode == 0, result.stderr
        assert len(server.submissions) == 1 and server.completions() == []
    stored = query(pg, "SELECT case_id, outcome FROM evaluations WHERE run_id = 2")
    assert sorted(stored) == sorted((c.case_id, "correct") for c in cases)
    assert open_batches() == []


def test_a_postgresql_store_of_schema_10_gains_the_batch_tables(pg_url: str) -> None:
    url = fresh_database(pg_url)

    async def open_and_close() -> None:
        store = await Store.open(url)
        await store.close()

    asyncio.run(open_and_close())  # made as now, then taken back to before the batch tables
    with psycopg.connect(url) as conn:
        conn.execute("DROP TABLE batch_requests")
        conn.execute("DROP TABLE batches")
        conn.execute("UPDATE secbench_schema SET version = 10")
    asyncio.run(open_and_close())
    assert query(url, "SELECT version FROM secbench_schema") == [(SCHEMA_VERSION,)]
    found = query(url, "SELECT indexname, tablename FROM pg_indexes WHERE schemaname = 'public'")
    assert ("ix_batches_open", "batches") in found
    assert ("ix_batch_requests_key", "batch_requests") in found
    assert query(url, "SELECT COUNT(*) FROM batch_requests") == [(0,)]


def test_batch_with_worker_is_refused_naming_why(tmp_path: Path, pg_url: str) -> None:
    write_suite(tmp_path / "suite", {"alpha": ["good", "bad"]})
    pg = fresh_database(pg_url)
    with BatchLoopback("openrouter") as server:
        result = run_cli(
            server.base_url, tmp_path / "r.db", tmp_path / "suite", "--db", pg, "--worker",
            *BATCH, key=FAKE_KEY,
        )  # fmt: skip
        assert server.submissions == [] and server.completions() == []
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--batch" in result.stderr and "--worker" in result.stderr
    assert "Traceback" not in result.stderr
