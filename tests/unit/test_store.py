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
    RunStatus,
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


async def test_each_event_loop_has_its_own_store_on_the_same_file(tmp_path: Path) -> None:
    """The app runs its engine on an event loop of its own, in a worker's thread: that loop
    opens, writes through and closes a store of its own, while the screens' store, open on
    this loop all along, reads what it committed (WAL) and closes after it."""
    ui = await Store.open(tmp_path / "r.db")
    run_id = await new_run(ui)

    def engine_thread() -> None:
        async def cases() -> None:
            store = await Store.open(tmp_path / "r.db")
            try:
                await asyncio.gather(
                    *(record(store, run_id, i, Outcome.CORRECT) for i in range(20))
                )
            finally:
                await store.close()

        asyncio.run(cases())

    await asyncio.to_thread(engine_thread)
    assert await ui.count_results() == 20
    await asyncio.wait_for(ui.close(), 5)
    with pytest.raises(ValueError):  # closed: aiosqlite refuses any further statement
        await ui.db.execute("SELECT 1")


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

    async def broken(db: object, dialect: str) -> None:
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


async def test_a_refused_row_takes_no_other_write_with_it(tmp_path: Path) -> None:
    """Writes take turns on a store's connection: a row the database refuses is undone
    alone, never together with the run's end or another row sent at the same moment, and
    leaves nothing for a later commit to carry."""
    store = await Store.open(tmp_path / "r.db")
    run_id = await new_run(store)
    with sqlite3.connect(tmp_path / "r.db") as other:
        other.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON evaluations"
            " WHEN NEW.case_id LIKE '%case-01%' BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    done = await asyncio.gather(
        record(store, run_id, 1, Outcome.CORRECT),
        store.finish_run(run_id, RunStatus.COMPLETED),
        record(store, run_id, 2, Outcome.CORRECT),
        return_exceptions=True,
    )
    assert isinstance(done[0], sqlite3.IntegrityError) and "refused" in str(done[0])
    assert done[1] is None and isinstance(done[2], int)
    await store.close()
    other = sqlite3.connect(tmp_path / "r.db")
    assert other.execute("SELECT status FROM runs").fetchall() == [("completed",)]
    stored = other.execute("SELECT id, case_id FROM evaluations").fetchall()
    assert stored == [(done[2], "shop/case-02.md")]


def test_a_full_disk_raises_the_rows_own_error_and_the_store_goes_on() -> None:
    """SQLite rolls the whole transaction back on an I/O error: the row then fails with that
    error (not one of the rollback after it), and the next write finds no transaction left
    open; in a child process whose files may not grow."""
    import subprocess
    import sys

    script = """
import asyncio, resource, signal, sys, tempfile
from pathlib import Path
from secbench_tui.core.models import Case, Completion, Evaluation, Outcome, RecordedSettings
from secbench_tui.core.models import RunStatus, Scored, SuiteKind
from secbench_tui.core.store.database import Store

async def main():
    store = await Store.open(Path(tempfile.mkdtemp()) / "t.db")
    run_id = await store.create_run(
        model="m", suite_kind="markdown", suite_path="/s", suite_hash="h", prompt_hash="p",
        settings=RecordedSettings(), fingerprint="f", tool_version="t", total_cases=1,
    )
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, limit))
    for i in range(200):
        case = Case(kind=SuiteKind.MARKDOWN, app="a", case_id=f"c{i}", test_file="f",
                    expected="bad", code="x")
        evaluation = Evaluation(run_id=run_id, case=case, index=i,
                                completion=Completion(text="x" * 600_000),
                                scored=Scored(actual=None, outcome=Outcome.UNPARSED))
        try:
            await store.record(evaluation, "r")
        except Exception as exc:
            print(repr(exc))
            break
    else:
        print("no failure")
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    await store.finish_run(run_id, RunStatus.ABORTED, "disk full")
    print((await store.run(run_id)).status)
    await store.close()

asyncio.run(main())
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    error, status = done.stdout.splitlines()
    assert "disk I/O error" in error or "database or disk is full" in error, error
    assert status == "aborted"


async def test_an_engine_loop_cancelled_mid_write_keeps_the_row_and_ends(
    tmp_path: Path, held_writes: HeldWrites
) -> None:
    """The app quits while its engine's loop waits for a row to be written (here another
    connection holds the write lock): the loop's task is cancelled, as the run screen's
    unmount does, and closes its store. The row, an answer paid for, is still committed,
    the close waits for it, and the loop ends (the app's exit waited for ever when a closed
    loop killed the database's thread)."""
    import threading

    ui = await Store.open(tmp_path / "r.db")
    run_id = await new_run(ui)
    waiting = threading.Event()
    ended: list[str] = []
    main: asyncio.Task[None] | None = None

    def engine_thread() -> None:
        async def run_cases() -> None:
            nonlocal main
            main = asyncio.current_task()
            store = await Store.open(tmp_path / "r.db")
            try:
                await record(store, run_id, 0, Outcome.CORRECT)
                held_writes.hold()
                asyncio.get_running_loop().call_soon(waiting.set)  # once the row waits
                await record(store, run_id, 1, Outcome.CORRECT)
            except asyncio.CancelledError:
                held_writes.release()  # only now can the row's write go on
                raise
            finally:
                await store.close()

        try:
            asyncio.run(run_cases())
        except asyncio.CancelledError:
            ended.append("cancelled")

    thread = threading.Thread(target=engine_thread)
    thread.start()
    assert await asyncio.to_thread(waiting.wait, 10)
    assert main is not None
    main.get_loop().call_soon_threadsafe(main.cancel)
    await asyncio.to_thread(thread.join, 10)
    assert not thread.is_alive() and ended == ["cancelled"]
    assert await ui.finished_keys(run_id) == {("shop/case-00.md", 0), ("shop/case-01.md", 0)}
    await asyncio.wait_for(ui.close(), 5)
