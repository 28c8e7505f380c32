"""The SQLite store on real files: schema, WAL, commits, migrations, paged reads."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from secbench_tui.core.models import (
    Case,
    Completion,
    Evaluation,
    Message,
    Outcome,
    RecordedSettings,
    Scored,
    SuiteKind,
)
from secbench_tui.core.store.connection import StoreError
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.queries import ResultFilter
from secbench_tui.core.store.schema import SCHEMA_VERSION
from tests.unit.conftest import HeldWrites

SPEC_COLUMNS = [
    "id",
    "timestamp",
    "test_file",
    "model_name",
    "expected_result",
    "actual_result",
    "explanation",
]


def make_case(i: int, app: str = "shop", expected: str = "bad") -> Case:
    return Case(
        kind=SuiteKind.MARKDOWN,
        app=app,
        case_id=f"{app}/case-{i:02d}.md",
        test_file=f"/suite/{app}/case-{i:02d}.md",
        expected=expected,
        code=f"SELECT {i};",
        description=f"case {i}",
        messages=(Message(role="user", content=f"p{i}"),),
    )


async def new_run(store: Store, model: str = "m/a") -> int:
    return await store.create_run(
        model=model,
        suite_kind="markdown",
        suite_path="/suite",
        suite_hash="h",
        prompt_hash="p",
        settings=RecordedSettings(seed=1),
        fingerprint="f",
        tool_version="t",
        total_cases=3,
    )


async def record(store: Store, run_id: int, i: int, outcome: Outcome, **kw: object) -> int:
    case = make_case(i, **kw)  # type: ignore[arg-type]
    actual = {"correct": case.expected, "wrong": "good"}.get(outcome.value)
    evaluation = Evaluation(
        run_id=run_id,
        case=case,
        index=i,
        completion=Completion(
            text=f"reply {i} <b>",
            prompt_tokens=10,
            completion_tokens=2,
            cost=0.01,
            latency_ms=100.0 + i,
        ),
        scored=Scored(actual=actual, outcome=outcome, explanation=f"because {i}"),
    )
    return await store.record(evaluation, request_hash=f"r{i}")


def legacy_db(path: Path, rows: Sequence[Sequence[str | None]]) -> Path:
    """A results.db as the original security-bench evaluator wrote it: seven columns."""
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE evaluations (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp DATETIME,"
        " test_file TEXT, model_name TEXT, expected_result TEXT, actual_result TEXT,"
        " explanation TEXT)"
    )
    conn.executemany(
        "INSERT INTO evaluations (timestamp, test_file, model_name, expected_result,"
        " actual_result, explanation) VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.commit()
    conn.close()
    return path


async def test_schema_has_the_specs_seven_columns_and_wal(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    await store.close()
    conn = sqlite3.connect(tmp_path / "r.db")
    columns = [row[1] for row in conn.execute("PRAGMA table_info(evaluations)")]
    assert columns[:7] == SPEC_COLUMNS
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


async def test_results_do_not_stall_on_a_checkpoint_every_125_rows(tmp_path: Path) -> None:
    """A row writes about 8 pages to the write-ahead log; at SQLite's default (a checkpoint,
    with its fsyncs, once the log holds 1,000 pages) every 125th result would stall on one.
    200 results stay in the log, committed (another connection reads them), until close."""
    path = tmp_path / "r.db"
    store = await Store.open(path)
    run_id = await new_run(store)
    size = path.stat().st_size
    for i in range(200):
        await record(store, run_id, i, Outcome.CORRECT)
    wal = path.with_name("r.db-wal").stat().st_size
    assert wal > 1_000 * 4096  # past the default's checkpoint
    assert path.stat().st_size == size  # nothing copied into the file yet
    other = sqlite3.connect(path)
    assert other.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 200
    other.close()
    await store.close()


async def test_each_record_is_committed_before_record_returns(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    run_id = await new_run(store)
    await record(store, run_id, 1, Outcome.CORRECT)
    # A second connection (another process would see the same) reads it without our commit.
    other = sqlite3.connect(tmp_path / "r.db")
    row = other.execute(
        "SELECT model_name, expected_result, actual_result, explanation, outcome, raw_reply"
        " FROM evaluations"
    ).fetchone()
    assert row == ("m/a", "bad", "bad", "because 1", "correct", "reply 1 <b>")
    await store.close()


async def test_rows_recorded_together_are_each_committed_before_their_record_returns(
    tmp_path: Path,
) -> None:
    """Rows that come while one is being written go together in one transaction: each
    record still returns only once its own row is committed, with its own id."""
    store = await Store.open(tmp_path / "r.db")
    run_id = await new_run(store)
    other = sqlite3.connect(tmp_path / "r.db")
    seen: dict[int, int] = {}

    async def one(i: int) -> None:
        row_id = await record(store, run_id, i, Outcome.CORRECT)
        # another connection sees only what is committed
        (seen[i],) = other.execute(
            "SELECT id FROM evaluations WHERE case_id=?", (f"shop/case-{i:02d}.md",)
        ).fetchone()
        assert seen[i] == row_id

    await asyncio.gather(*(one(i) for i in range(30)))
    assert len(set(seen.values())) == 30
    await store.close()


async def test_a_cancelled_record_leaves_no_other_row_waiting(tmp_path: Path) -> None:
    """A run that cancels its cases (an abort) must not strand another run's rows queued
    behind its write: they are written, committed and returned all the same."""
    store = await Store.open(tmp_path / "r.db")
    run_id = await new_run(store)
    first = asyncio.create_task(record(store, run_id, 0, Outcome.CORRECT))
    await asyncio.sleep(0)  # its write is under way: the next rows queue behind it
    rest = [asyncio.create_task(record(store, run_id, i, Outcome.CORRECT)) for i in (1, 2, 3)]
    await asyncio.sleep(0)
    first.cancel()
    ids = await asyncio.wait_for(asyncio.gather(*rest), 5)
    assert len(set(ids)) == 3
    await store.close()
    stored = sqlite3.connect(tmp_path / "r.db").execute("SELECT COUNT(*) FROM evaluations")
    assert stored.fetchone()[0] in (3, 4)  # the cancelled one's row may have been written


async def test_a_row_the_database_refuses_fails_alone_among_rows_written_together(
    tmp_path: Path,
) -> None:
    """Rows that go in one transaction: one the database refuses (here a trigger refuses
    case 02) fails on its own; the others are committed and returned, and nothing of the
    refused one is left in a transaction for a later commit to carry."""
    store = await Store.open(tmp_path / "r.db")
    run_id = await new_run(store)
    with sqlite3.connect(tmp_path / "r.db") as other:
        other.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON evaluations"
            " WHEN NEW.case_id LIKE '%case-02%' BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    first = asyncio.create_task(record(store, run_id, 0, Outcome.CORRECT))
    await asyncio.sleep(0)  # its write is under way: the next rows queue behind it
    queued = [asyncio.create_task(record(store, run_id, i, Outcome.CORRECT)) for i in (1, 2, 3)]
    done = await asyncio.wait_for(asyncio.gather(first, *queued, return_exceptions=True), 5)
    assert isinstance(done[2], sqlite3.IntegrityError) and "refused" in str(done[2])
    assert all(isinstance(d, int) for i, d in enumerate(done) if i != 2)
    await record(store, run_id, 4, Outcome.CORRECT)  # a later commit carries nothing refused
    other = sqlite3.connect(tmp_path / "r.db")
    stored = other.execute("SELECT case_id FROM evaluations ORDER BY case_id").fetchall()
    assert [c for (c,) in stored] == [f"shop/case-{i:02d}.md" for i in (0, 1, 3, 4)]
    await store.close()


async def test_a_refused_first_row_takes_no_case_text_with_it(tmp_path: Path) -> None:
    """A run writes its cases' texts before its first result; that result refused (and its
    transaction rolled back) must leave the texts the next results point at."""
    store = await Store.open(tmp_path / "r.db")
    run_id = await new_run(store)
    await store.remember_texts([make_case(i) for i in range(3)])
    with sqlite3.connect(tmp_path / "r.db") as other:
        other.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON evaluations"
            " WHEN NEW.case_id LIKE '%case-00%' BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    with pytest.raises(sqlite3.IntegrityError, match="refused"):
        await record(store, run_id, 0, Outcome.CORRECT)
    await record(store, run_id, 1, Outcome.CORRECT)  # its text is still there to point at
    result = await store.result((await store.results_page())[0]["id"])
    assert result is not None and result["code"] == "SELECT 1;"
    await store.close()


async def test_a_store_written_on_another_event_loop_still_closes(tmp_path: Path) -> None:
    """The app runs the engine on an event loop of its own, in a worker's thread, and closes
    the store from its own loop: rows written together there must not keep the store from
    closing (the app then never exited on q: the database's thread was left running)."""
    store = await Store.open(tmp_path / "r.db")
    run_id = await new_run(store)

    def engine_thread() -> None:
        async def cases() -> None:
            await asyncio.gather(*(record(store, run_id, i, Outcome.CORRECT) for i in range(20)))

        asyncio.run(cases())

    await asyncio.to_thread(engine_thread)
    await asyncio.wait_for(store.close(), 5)
    with pytest.raises(ValueError):  # closed: aiosqlite refuses any further statement
        await store.db.execute("SELECT 1")
    stored = sqlite3.connect(tmp_path / "r.db").execute("SELECT COUNT(*) FROM evaluations")
    assert stored.fetchone()[0] == 20


async def test_same_case_and_repeat_is_stored_once_per_run(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    run_id = await new_run(store)
    await record(store, run_id, 1, Outcome.ERROR)
    await record(store, run_id, 1, Outcome.CORRECT)
    assert await store.count_results() == 1
    assert await store.finished_keys(run_id) == {("shop/case-01.md", 0)}
    await store.close()


async def test_runs_carry_counts_cost_and_accuracy(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    run_id = await new_run(store)
    for i, outcome in enumerate([Outcome.CORRECT, Outcome.WRONG, Outcome.UNPARSED]):
        await record(store, run_id, i, outcome)
    await store.finish_run(run_id, "completed")
    (run,) = await store.runs()
    assert run.status == "completed" and run.finished_at
    assert run.counts == {"correct": 1, "wrong": 1, "unparsed": 1}
    assert run.accuracy == pytest.approx(1 / 3) and run.cost == pytest.approx(0.03)
    await store.close()


async def test_keyset_pages_and_filters(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    run_a = await new_run(store, "m/a")
    run_b = await new_run(store, "m/b")
    for i in range(25):
        await record(
            store,
            run_a if i % 2 else run_b,
            i,
            Outcome.CORRECT if i % 3 else Outcome.WRONG,
            app="x" if i < 10 else "y",
        )
    seen: list[int] = []
    after = None
    while page := await store.results_page(after_id=after, limit=7):
        seen.extend(row["id"] for row in page)
        after = page[-1]["id"]
    assert seen == sorted(seen) and len(seen) == 25
    flt = ResultFilter(models=["m/a"], apps=["y"], outcomes=["correct"])
    rows = await store.results_page(flt, limit=100)
    assert rows and all(
        r["model_name"] == "m/a" and r["app"] == "y" and r["outcome"] == "correct" for r in rows
    )
    assert await store.count_results(flt) == len(rows)
    assert await store.count_results(ResultFilter(text="because 1")) == 11  # 1, 10-19
    assert await store.count_results(ResultFilter(text="100%")) == 0  # % is literal
    detail = await store.result(seen[0])
    assert detail is not None and detail["code"].startswith("SELECT")
    await store.close()


async def test_database_of_the_original_evaluator_is_migrated(tmp_path: Path) -> None:
    rows = [
        ("2024-01-15 14:30:00", "/x/tests/purchase-order/a.md", "gpt-4", "bad", "bad", "e1"),
        ("2024-01-15 14:31:00", "/x/tests/purchase-order/b.md", "gpt-4", "good", "bad", "e2"),
        ("2024-01-16 10:00:00", "/x/tests/wms/c.md", "claude", "good", "error", "e3"),
    ]
    path = legacy_db(tmp_path / "legacy.db", rows)
    store = await Store.open(path)
    runs = await store.runs()
    assert [(r.model_name, r.status) for r in runs] == [
        ("gpt-4", "imported"),
        ("claude", "imported"),
    ]
    page = await store.results_page(limit=10, with_text=True)
    assert [(r["app"], r["outcome"]) for r in page] == [
        ("purchase-order", "correct"),
        ("purchase-order", "wrong"),
        ("wms", "unparsed"),
    ]
    assert [r["explanation"] for r in page] == ["e1", "e2", "e3"]
    await store.close()
    store = await Store.open(path)  # opening again changes nothing
    assert await store.count_results() == 3
    await store.close()


async def test_newer_schema_is_refused_with_advice(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="upgrade secbench-tui"):
        await Store.open(path)


async def test_missing_folder_and_garbage_file_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        await Store.open(tmp_path / "nope" / "r.db")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=str(junk)):
        await Store.open(junk)


async def test_a_reply_with_a_lone_surrogate_is_stored(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    run_id = await new_run(store)
    evaluation = Evaluation(
        run_id=run_id,
        case=make_case(1),
        completion=Completion(text='{"x": "\ud800"}'),
        scored=Scored(actual=None, outcome=Outcome.UNPARSED, explanation="bad \udfff char"),
    )
    await store.record(evaluation, request_hash="r")
    (row,) = await store.results_page(with_text=True)
    assert row["raw_reply"].startswith('{"x": "') and "\ufffd" in row["raw_reply"]
    assert row["explanation"].startswith("bad ") and row["explanation"].endswith(" char")
    await store.close()


async def test_version_1_file_gains_run_owners_and_keeps_its_runs(tmp_path: Path) -> None:
    from secbench_tui.core.store.schema import SCHEMA_V1

    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA_V1)
    conn.execute(
        "INSERT INTO runs (model_name, suite_kind, suite_path, started_at, status)"
        " VALUES ('m/old', 'markdown', '/s', '2026-01-01T00:00:00Z', 'running')"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    store = await Store.open(path)
    (run,) = await store.runs()
    assert (run.model_name, run.status) == ("m/old", "running")  # no owner known: unchanged
    await store.close()
    conn = sqlite3.connect(path)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
    assert {"pid", "host"} <= columns
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


async def test_a_run_whose_process_died_shows_as_interrupted(tmp_path: Path) -> None:
    import subprocess
    import sys

    store = await Store.open(tmp_path / "r.db")
    alive = await new_run(store)
    dead = await new_run(store)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    await store.db.execute("UPDATE runs SET pid=? WHERE id=?", (int(gone.stdout), dead))
    await store.db.commit()
    statuses = {r.id: r.status for r in await store.runs()}
    assert statuses == {alive: "running", dead: "interrupted"}
    assert await store.latest_run("f") == dead  # still resumable
    await store.close()


async def test_legacy_file_with_repeated_runs_and_nulls_migrates(tmp_path: Path) -> None:
    rows = [  # the original tool appended rows on every run of the same model
        ("2024-01-15", "/t/po/a.md", "gpt-4", "bad", "bad", "first"),
        ("2024-01-16", "/t/po/a.md", "gpt-4", "bad", "good", "second"),
        (None, None, "gpt-4", None, None, None),
    ]
    path = legacy_db(tmp_path / "legacy.db", rows)
    store = await Store.open(path)
    page = await store.results_page(limit=10, with_text=True)
    assert [(r["repeat"], r["outcome"], r["explanation"]) for r in page] == [
        (0, "correct", "first"),
        (1, "wrong", "second"),
        (0, "unparsed", None),
    ]
    await store.close()


async def test_a_failed_migration_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    from secbench_tui.core.store import migrations as store_module

    path = legacy_db(tmp_path / "legacy.db", [("t", "/a/b.md", "m", "bad", "bad", "e")])

    async def broken(db: object) -> None:
        raise RuntimeError("disk full")

    original = store_module.MIGRATIONS[1]
    store_module.MIGRATIONS[1] = broken
    try:
        with pytest.raises(StoreError, match="disk full"):
            await Store.open(path)
    finally:
        store_module.MIGRATIONS[1] = original
    conn = sqlite3.connect(path)
    tables = {
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        if not r[0].startswith("sqlite_")
    }
    assert tables == {"evaluations"} and conn.execute("PRAGMA user_version").fetchone()[0] == 0
    conn.close()
    store = await Store.open(path)  # and a working version migrates it fine
    assert await store.count_results() == 1
    await store.close()


async def test_version_2_file_gains_reasoning_columns_and_keeps_its_results(
    tmp_path: Path,
) -> None:
    from secbench_tui.core.store.schema import SCHEMA_V1

    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA_V1)
    conn.execute("ALTER TABLE runs ADD COLUMN pid INTEGER")
    conn.execute("ALTER TABLE runs ADD COLUMN host TEXT")
    conn.execute(
        "INSERT INTO runs (model_name, suite_kind, suite_path, started_at, status)"
        " VALUES ('m/old', 'markdown', '/s', '2026-01-01T00:00:00Z', 'completed')"
    )
    conn.execute(
        "INSERT INTO evaluations (timestamp, test_file, model_name, expected_result, run_id,"
        " case_id, outcome, completion_tokens)"
        " VALUES ('t', 'f', 'm/old', 'bad', 1, 'a', 'wrong', 9)"
    )
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    store = await Store.open(path)
    (old,) = await store.run_results(1)
    assert (old["completion_tokens"], old["reasoning"], old["reasoning_tokens"]) == (9, None, None)
    run_id = await new_run(store)
    evaluation = Evaluation(
        run_id=run_id,
        case=make_case(1),
        completion=Completion(text="{}", reasoning="I think \x1b[2J", reasoning_tokens=77),
        scored=Scored(actual=None, outcome=Outcome.UNPARSED),
    )
    await store.record(evaluation, request_hash="r")
    (row,) = await store.run_results(run_id)
    assert (row["reasoning"], row["reasoning_tokens"]) == ("I think \x1b[2J", 77)  # as it came
    (lean,) = await store.run_results(run_id, with_text=False)
    assert lean["reasoning_tokens"] == 77
    await store.close()


def test_a_refused_row_undoes_only_itself_not_a_write_waiting_for_its_commit() -> None:
    """A refused row is undone to a savepoint taken before it: a write still waiting on the
    connection for its commit stays, and is committed with the next row."""
    from secbench_tui.core.store.recording import _write_committed

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE texts (hash TEXT PRIMARY KEY)")
    conn.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    conn.commit()
    conn.execute("INSERT INTO texts VALUES ('h1')")  # waiting for a commit
    (refused,) = _write_committed(conn, [[("INSERT INTO rows (v) VALUES (?)", (None,))]])
    assert isinstance(refused, sqlite3.IntegrityError)
    assert _write_committed(conn, [[("INSERT INTO rows (v) VALUES (?)", (5,))]]) == [1]
    assert not conn.in_transaction
    assert conn.execute("SELECT hash FROM texts").fetchall() == [("h1",)]


def test_a_refused_row_with_no_other_write_waiting_is_rolled_back_and_its_batch_kept() -> None:
    """With nothing else waiting on the connection, a refused row is rolled back (no
    savepoint is taken); the rows that came with it are written again on their own."""
    from secbench_tui.core.store.recording import _write_committed

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    conn.commit()
    insert = "INSERT INTO rows (v) VALUES (?)"
    first, refused, third = _write_committed(
        conn, [[(insert, (1,))], [(insert, (None,))], [(insert, (3,))]]
    )
    assert isinstance(refused, sqlite3.IntegrityError)
    assert not conn.in_transaction
    assert conn.execute("SELECT id, v FROM rows ORDER BY id").fetchall() == [(first, 1), (third, 3)]


def test_a_full_disk_under_another_write_raises_its_own_error() -> None:
    """SQLite rolls the whole transaction back on an I/O error: the row then fails with that
    error (not "no such savepoint"), in a child process whose files may not grow."""
    import subprocess
    import sys

    script = """
import resource, signal, sqlite3, sys, tempfile
from pathlib import Path
from secbench_tui.core.store.recording import _write_committed
db = Path(tempfile.mkdtemp()) / "t.db"
con = sqlite3.connect(db)
con.execute("PRAGMA journal_mode=WAL"); con.execute("PRAGMA cache_size=-64")
con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
con.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, status TEXT)")
con.execute("INSERT INTO runs VALUES (1, 'running')"); con.commit()
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
for _ in range(200):
    con.execute("UPDATE runs SET status='started' WHERE id=1")  # waits for its commit
    (out,) = _write_committed(con, [[("INSERT INTO t (v) VALUES (?)", ("x" * 600_000,))]])
    if isinstance(out, Exception):
        print(repr(out)); sys.exit(0)
print("no failure")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "disk I/O error" in done.stdout and "savepoint" not in done.stdout, done.stdout


async def test_a_write_under_way_when_its_loop_closes_leaves_the_store_usable(
    tmp_path: Path, held_writes: HeldWrites
) -> None:
    """The app runs each matrix on a loop of its own: rows handed over there, one of them
    being written when that loop closes, are still written, the database's thread lives on,
    a later row is committed and the store closes."""
    store = await Store.open(tmp_path / "r.db")
    commits = store._commits
    insert = "INSERT INTO case_texts (hash, code, description) VALUES (?, 'c', '')"

    def engine_loop() -> None:
        async def hand_over() -> None:
            commits.submit([(insert, ("under way",))], gather=False)  # being written
            commits.submit([(insert, ("gathering",))])  # waits for the first

        asyncio.run(hand_over())  # ends, and closes, with both in flight

    await asyncio.to_thread(engine_loop)
    held_writes.gate.set()
    later = await asyncio.wait_for(commits.commit([(insert, ("later",))]), 10)
    assert later
    await asyncio.wait_for(store.close(), 10)  # the thread lived to close the file
    conn = sqlite3.connect(tmp_path / "r.db")
    kept = {row[0] for row in conn.execute("SELECT hash FROM case_texts")}
    assert {"under way", "gathering", "later"} <= kept


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
async def test_the_store_closes_when_the_database_thread_died(tmp_path: Path) -> None:
    """aiosqlite's thread dies when one of its own calls was made on an event loop that has
    closed since (it answers that loop, which raises, twice); closing the store must not wait
    for ever for it (the app's exit did)."""
    store = await Store.open(tmp_path / "r.db")
    gone = asyncio.new_event_loop()
    future = gone.create_future()
    gone.close()
    store.db._tx.put_nowait((future, lambda: None))  # as `Connection._execute` queues a call
    await asyncio.to_thread(store.db._thread.join, 10)
    assert not store.db._thread.is_alive()
    await asyncio.wait_for(store.close(), 5)


async def test_reused_answers_are_written_at_once_not_gathered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`record` (awaited: every reused answer, one after another) goes at once; were it
    gathered like the rows of asked cases, each would wait out the window (made 60 s here)."""
    from secbench_tui.core.run.engine import Engine, RunSpec
    from secbench_tui.core.run.events import RunStarted
    from secbench_tui.core.store import recording
    from tests.unit.test_engine import Scripted, cases

    store = await Store.open(tmp_path / "r.db")
    spec = RunSpec(model="m", cases=cases(6), suite_kind="markdown", suite_path="/s")
    assert len([e async for e in Engine(spec, Scripted(), store).events()]) > 6  # paid for
    monkeypatch.setattr(recording, "GATHER_SECONDS", 60.0)

    async def again() -> list[object]:
        return [e async for e in Engine(spec, Scripted(), store).events()]

    events = await asyncio.wait_for(again(), 10)
    assert next(e for e in events if isinstance(e, RunStarted)).reused == 6
    await store.close()


INSERT_TEXT = "INSERT INTO case_texts (hash, code, description) VALUES (?, 'c', '')"


@pytest.mark.parametrize("then", ["close", "next_loop_submit", "next_loop_commit"])
async def test_rows_gathering_when_their_loop_ends_are_written(tmp_path: Path, then: str) -> None:
    """A loop ends with rows gathering behind its timer and no write under way: they are
    written by the store's close, or with the next loop's first row."""
    store = await Store.open(tmp_path / "r.db")
    commits = store._commits

    def engine_loop(rows: list[str]) -> None:
        async def hand_over() -> None:
            for row in rows:
                commits.submit([(INSERT_TEXT, (row,))])

        asyncio.run(hand_over())

    await asyncio.to_thread(engine_loop, ["g1", "g2", "g3"])
    assert commits._timer is not None and commits._hop is None
    expected = {"g1", "g2", "g3"}
    if then == "next_loop_submit":
        await asyncio.to_thread(engine_loop, ["n1"])
        expected.add("n1")
    elif then == "next_loop_commit":
        assert await asyncio.wait_for(commits.commit([(INSERT_TEXT, ("n1",))]), 5)
        expected.add("n1")
    await asyncio.wait_for(store.close(), 5)
    conn = sqlite3.connect(tmp_path / "r.db")
    assert expected <= {row[0] for row in conn.execute("SELECT hash FROM case_texts")}


async def test_a_row_of_another_live_loop_is_answered_on_its_own_loop(
    tmp_path: Path, held_writes: HeldWrites
) -> None:
    """Two loops at once: a row this loop awaits, sent with the other loop's write, is
    answered through this loop (set from the other's thread, it would not wake it)."""
    import threading
    import time

    store = await Store.open(tmp_path / "r.db")
    commits = store._commits
    handed, finish = threading.Event(), threading.Event()

    def other_loop() -> None:
        async def main() -> None:
            written = commits.submit([(INSERT_TEXT, ("other",))], gather=False)  # held
            handed.set()
            await written
            await asyncio.to_thread(finish.wait, 10)  # the loop stays alive meanwhile

        asyncio.run(main())

    thread = threading.Thread(target=other_loop, daemon=True)
    thread.start()
    await asyncio.to_thread(handed.wait, 10)
    mine = asyncio.ensure_future(commits.commit([(INSERT_TEXT, ("mine",))]))  # waits for it
    await asyncio.sleep(0)
    threading.Timer(0.1, held_writes.gate.set).start()
    started = time.perf_counter()
    done, _ = await asyncio.wait([mine], timeout=5)  # nothing else would wake this loop
    woke_after = time.perf_counter() - started
    finish.set()
    await asyncio.to_thread(thread.join, 10)
    await store.close()
    assert done and woke_after < 2.5  # answered at about 0.1 s, not at the 5 s timeout


async def test_a_call_under_way_when_its_loop_closes_leaves_the_connection_usable(
    tmp_path: Path,
) -> None:
    """The app quits while its engine's loop awaits one of aiosqlite's own calls: the call
    answers its own future (`answer_own_calls`), so the closed loop does not end the
    database's thread, and the store goes on and closes."""
    import threading

    store = await Store.open(tmp_path / "r.db")
    gate = threading.Event()

    def engine_loop() -> None:
        async def main() -> None:
            asyncio.ensure_future(store.db._execute(gate.wait, 10))  # under way, never awaited

        asyncio.run(main())  # cancels it and closes with the call under way

    await asyncio.to_thread(engine_loop)
    gate.set()
    try:
        cursor = await asyncio.wait_for(store.db.execute("SELECT 1"), 5)
        assert tuple(await cursor.fetchone() or ()) == (1,)
        assert store.db._thread.is_alive()
    finally:
        await asyncio.wait_for(store.close(), 5)
