"""Writing results: each case's row committed as it arrives, and rescored rows rewritten."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sqlite3
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any, TypeVar

import aiosqlite

from secbench_tui.core.models import Case, Evaluation
from secbench_tui.core.store.connection import StoreConnection, StoreError, queue_call
from secbench_tui.core.store.schema import EVAL_COLUMNS
from secbench_tui.core.store.values import gold_json, now_iso, storable, text_hash

T = TypeVar("T")


async def on_database_thread(db: aiosqlite.Connection, job: Callable[..., T], /, *args: Any) -> T:
    """`job(connection, *args)` on the database's own thread, as one hop there and back.

    aiosqlite runs each of its calls (`execute`, the cursor's `close`, `commit`) as one such
    hop, and a hop costs a wake-up of each thread (about 0.1 ms here): writing a result as
    three of them was most of what a case cost beyond its request. The hop is made as
    aiosqlite's own methods make theirs (`to_database_thread`).
    """
    return await to_database_thread(db, job, *args)


def to_database_thread(
    db: aiosqlite.Connection, job: Callable[..., T], /, *args: Any
) -> asyncio.Future[T]:
    """`on_database_thread` without waiting: `job(connection, *args)` is queued for the
    database's thread now, and the future it returns is set when it has run (`queue_call`,
    which also says why it answers its own future)."""
    if not db._running or db._connection is None:
        raise ValueError("Connection closed")
    conn = db._conn
    return queue_call(db, lambda: job(conn, *args))


Statement = tuple[str, Sequence[Any]]


def _write_rows(conn: sqlite3.Connection, rows: Sequence[Sequence[Statement]]) -> list[int]:
    """Each row's statements, then one commit; the id of each row's last statement. On a
    failure nothing of them stays, and nothing else is lost: when some other write is still
    waiting on this connection for its commit, they are undone to a savepoint taken before
    them (a rollback would undo that write too), never left for the next commit to carry;
    when none is, a rollback undoes them (two statements fewer for every row)."""
    ids = []
    shared = conn.in_transaction  # another write waits for its commit
    if shared:
        conn.execute("SAVEPOINT result_rows")
    try:
        for statements in rows:
            row_id = None
            for sql, values in statements:
                cursor = conn.execute(sql, values)
                try:
                    row_id = cursor.lastrowid
                finally:
                    cursor.close()
            assert row_id is not None
            ids.append(row_id)
    except BaseException:
        # undone, when SQLite has not already rolled the whole transaction back (it does on
        # a full disk or an I/O error); the error raised is always the row's own
        with contextlib.suppress(sqlite3.Error):
            if shared and conn.in_transaction:
                conn.execute("ROLLBACK TO result_rows")
                conn.execute("RELEASE result_rows")
            elif conn.in_transaction:
                conn.rollback()
        raise
    if shared:
        conn.execute("RELEASE result_rows")
    conn.commit()
    return ids


def _write_committed(
    conn: sqlite3.Connection, rows: Sequence[Sequence[Statement]]
) -> list[int | Exception]:
    """Each row's statements (its case's text, if new, then the result), committed; the id of
    each row's last statement, or why that row could not be written. Rows go in one
    transaction; should it fail, each row is written again on its own, so that one row the
    database refuses fails alone and the others are kept. On the database's thread, so the
    cursors are closed there too: one dropped on the event loop's thread would reset its
    (cached, shared) statement from that thread while this one may be running the same
    statement for the next case (SQLite's "bad parameter or other API misuse", once in many
    runs of a matrix)."""
    try:
        return list(_write_rows(conn, rows))
    except Exception as exc:
        if len(rows) == 1:
            return [exc]
    written: list[int | Exception] = []
    for statements in rows:
        try:
            written.extend(_write_rows(conn, [statements]))
        except Exception as exc:
            written.append(exc)
    return written


def _insert_committed(conn: sqlite3.Connection, sql: str, rows: Sequence[Sequence[Any]]) -> None:
    """`rows` inserted by `sql` and committed, the cursor closed on the database's thread."""
    conn.executemany(sql, rows).close()
    conn.commit()


class _Waiting:
    __slots__ = ("statements", "written")

    def __init__(self, statements: Sequence[Statement], written: asyncio.Future[int]) -> None:
        self.statements = statements
        self.written = written


# A row handed over without waiting (`submit`) waits this long for others to share its commit,
# unless this many are ready before: a commit writes every page its rows touched (the table's
# and one per index, about 40 KB for one row), so rows committed together cost a fraction
# each (measured here, with the tool's indexes: 119 us a row alone, 40 us in fours, 30 us in
# eights). The row is still committed before anyone is told of it; a row awaited (`commit`)
# goes at once.
GATHER_SECONDS = 0.004
GATHER_ROWS = 16


class GroupCommit:
    """Rows committed in groups, each row committed before its future says so.

    A row handed over with `submit` waits up to `GATHER_SECONDS` for others (or until
    `GATHER_ROWS` are ready), then they go to the database's thread together: one hop and
    one commit. Rows that come while a write is under way go together when it ends. The hops
    are chained by callbacks and a timer, not by a task, so that nothing here waits on any
    caller: a run that cancels its cases (an abort) never leaves another run's rows waiting,
    and a row handed over is written whether or not anyone awaits it.
    """

    def __init__(self, db: aiosqlite.Connection) -> None:
        self.db = db
        self._waiting: list[_Waiting] = []
        self._hop: asyncio.Future[list[int | Exception]] | None = None  # the write under way
        self._timer: asyncio.TimerHandle | None = None  # the gathering's end
        self._loop: asyncio.AbstractEventLoop | None = None  # where the rows were handed over

    def submit(self, statements: Sequence[Statement], gather: bool = True) -> asyncio.Future[int]:
        """Hand one row's statements over to be written and committed; its future gives the
        id of the last, once committed (or why the row could not be written). `gather`:
        the row may wait a little for others to share its commit."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._adopt(loop)
        written: asyncio.Future[int] = loop.create_future()
        self._waiting.append(_Waiting(statements, written))
        if self._hop is None:
            if not gather or len(self._waiting) >= GATHER_ROWS:
                self._send()
            elif self._timer is None:
                self._timer = loop.call_later(GATHER_SECONDS, self._gathered)
        return written

    async def commit(self, statements: Sequence[Statement]) -> int:
        """Write one row's statements and commit them, at once; the id of the last."""
        return await self.submit(statements, gather=False)

    def _adopt(self, loop: asyncio.AbstractEventLoop) -> None:
        """Rows now come from `loop`. Those handed over on an earlier loop that has ended
        (the app runs each matrix on a loop of its own) are never answered there: a write it
        left under way is forgotten (it was written, or failed, on the database's thread; a
        closed loop cannot be told) and its rows still gathering go with this loop's first
        write, with nobody left to tell."""
        old = self._loop
        self._loop = loop
        if old is None or old.is_running():
            return  # two loops at once: each row is answered on its own loop (`_sent`)
        self._hop = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting = [_Waiting(w.statements, loop.create_future()) for w in self._waiting]

    def _gathered(self) -> None:
        self._timer = None
        if self._hop is None and self._waiting:
            self._send()

    def _send(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._waiting = self._waiting, []
        try:
            hop = to_database_thread(self.db, _write_committed, [w.statements for w in batch])
        except Exception as exc:  # the connection is closed
            for w in batch:
                if not w.written.done():
                    w.written.set_exception(exc)
            return
        self._hop = hop
        hop.add_done_callback(lambda done: self._sent(batch, done))

    def _sent(self, batch: list[_Waiting], hop: asyncio.Future[list[int | Exception]]) -> None:
        """A write ended: tell its rows, then send the rows that came meanwhile, together."""
        self._hop = None
        failure = None if hop.cancelled() else hop.exception()
        results = [failure] * len(batch) if hop.cancelled() or failure else hop.result()
        here = hop.get_loop()
        for w, written in zip(batch, results, strict=True):
            if w.written.get_loop() is not here:  # a row of another loop (two at once)
                with contextlib.suppress(RuntimeError):  # that loop has closed
                    w.written.get_loop().call_soon_threadsafe(_answer, w.written, written)
            else:
                _answer(w.written, written)
        if self._waiting:
            self._send()

    async def drain(self) -> None:
        """Write and wait for the rows still handed over (before the database is closed).
        The rows may have been handed over on another event loop (the app runs the engine on
        one of its own, in a worker's thread): while that loop runs, they are read and waited
        for there; should it end first, or before, what it left is written from here
        (`_adopt`)."""
        loop = self._loop
        if loop is None:
            return
        current = asyncio.get_running_loop()
        if loop is not current and loop.is_running():
            there = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._idle(), loop))
            while loop.is_running():
                done, _ = await asyncio.wait([there], timeout=0.05)
                if done and not there.cancelled() and there.exception() is None:
                    return
                if done:
                    break  # cancelled with its loop's end, or failed: written from here
        if self._loop is not current:
            self._adopt(current)
        await self._idle()

    async def _idle(self) -> None:
        """Every row handed over written: those still gathering go now."""
        if self._hop is None and self._waiting:
            self._send()
        while (hop := self._hop) is not None:
            await asyncio.wait([hop])  # its own callback runs first and may send the next


def _answer(written: asyncio.Future[int], result: int | BaseException | None) -> None:
    """Tell a row's future how its write went (None: the write was cancelled, only when its
    loop is closing); one its caller gave up on was written all the same."""
    if written.done():
        return
    if result is None:
        written.cancel()
    elif isinstance(result, BaseException):
        written.set_exception(result)
    else:
        written.set_result(result)


def _insert_result(columns: Sequence[str]) -> str:
    return (
        f"INSERT OR REPLACE INTO evaluations ({', '.join(columns)})"
        f" VALUES ({', '.join('?' * len(columns))})"
    )


_INSERT_RESULT = _insert_result(EVAL_COLUMNS)


@functools.lru_cache(maxsize=4096)
def case_text_hash(code: str, description: str) -> str:
    """`text_hash` of a case's texts, kept for the cases of the runs under way: a case's row
    names them by it, and a run writes its cases' rows one after another (a text's own
    `hash()`, which the lookup takes, is kept by the text)."""
    return text_hash(code, description)


def _variant_text(value: Any) -> str | None:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else None


class ResultRecording(StoreConnection):
    """The writes of results (`evaluations`) and of the case texts they point at."""

    async def remember_texts(self, cases: Sequence[Case]) -> None:
        """Write the code and description of every case a run is about to ask, in one call.

        `record` then writes only each result's row: one statement and a commit per case,
        instead of two statements and a commit. The texts are committed here, before any
        result: a result's transaction that fails is rolled back (`_write_rows`), and must
        not take the texts other rows point at with it (rows of the content-addressed text
        table, so one written for a case a stopped run never asked is harmless).
        """
        rows: dict[str, tuple[str, Any, Any]] = {}
        for case in cases:
            case_hash = case_text_hash(case.code, case.description)
            if case_hash not in self._known_texts:
                rows[case_hash] = (case_hash, storable(case.code), storable(case.description))
        if rows:
            await on_database_thread(
                self.db,
                _insert_committed,
                "INSERT OR IGNORE INTO case_texts (hash, code, description) VALUES (?, ?, ?)",
                list(rows.values()),
            )
            self._known_texts.update(rows)

    async def remember_requests(self, cases: Sequence[Case]) -> dict[str, str]:
        """Write the texts of every message a run's cases send, in one call, committed (as
        `remember_texts` says why), and return what each result's row names them by, by case
        id (`core.store.requests`)."""
        refs = {case.case_id: self._request_texts.refs(case) for case in cases}
        rows = self._request_texts.rows(self._known_request_texts)
        if rows:
            await on_database_thread(
                self.db,
                _insert_committed,
                "INSERT OR IGNORE INTO request_texts (hash, text) VALUES (?, ?)",
                rows,
            )
            self._known_request_texts.update(h for h, _ in rows)
        return refs

    async def record(
        self,
        evaluation: Evaluation,
        request_hash: str,
        reused_from: int | None = None,
        messages: str | None = None,
    ) -> int:
        """Write one result and commit it before returning; `messages`: its request's, as
        `remember_requests` named them."""
        written = await self.record_soon(evaluation, request_hash, reused_from, messages, False)
        return await written

    async def record_soon(
        self,
        evaluation: Evaluation,
        request_hash: str,
        reused_from: int | None = None,
        messages: str | None = None,
        gather: bool = True,
    ) -> asyncio.Future[int]:
        """`record` without waiting for the write: the row is handed to the database's
        thread, and the future returned gives its id once it is committed (or why it could
        not be written). The row is written whether or not the future is awaited; `close`
        waits for every row handed over."""
        case, completion, scored = evaluation.case, evaluation.completion, evaluation.scored
        case_hash = case_text_hash(case.code, case.description)
        statements: list[Statement] = []
        if case_hash not in self._known_texts:
            statements.append(
                (
                    "INSERT OR IGNORE INTO case_texts (hash, code, description) VALUES (?, ?, ?)",
                    (case_hash, storable(case.code), storable(case.description)),
                )
            )
        values: Sequence[Any] = [
            value if value.__class__ is not str or value.isascii() else storable(value)
            for value in (
                evaluation.timestamp or now_iso(),
                case.test_file,
                await self._model_of(evaluation),
                case.expected,
                scored.actual,
                scored.explanation,
                evaluation.run_id,
                case.kind.value,
                case.app,
                case.case_id,
                evaluation.index,
                evaluation.repeat,
                scored.outcome.value,
                completion.text,
                completion.error or completion.unreadable,  # unreadable: unparsed, and why
                completion.status,
                completion.finish_reason,
                completion.prompt_tokens,
                completion.completion_tokens,
                completion.cost,
                completion.latency_ms,
                completion.attempts,
                completion.served_model,
                completion.provider,
                json.dumps(scored.scores, sort_keys=True),
                case_hash,
                request_hash,
                reused_from,
                completion.reasoning,
                completion.reasoning_tokens,
                completion.notes,
                gold_json(case),
                scored.reason.to_json() if scored.reason is not None else None,
                scored.scoring_version or None,
                _variant_text(case.meta.get("variant")),
                messages,
            )
        ]
        sql = _INSERT_RESULT
        if self._adopted is not None:  # the original evaluator's table: fill what it requires
            columns, values = self._adopted.row(
                EVAL_COLUMNS, values, self._run_prompts.get(evaluation.run_id)
            )
            sql = _insert_result(columns)
        statements.append((sql, values))
        written = self._commits.submit(statements, gather)
        if statements[0][1] is not values:  # the text goes with this row: known once it is in

            def known(done: asyncio.Future[int]) -> None:
                if not done.cancelled() and done.exception() is None:
                    self._known_texts.add(case_hash)

            written.add_done_callback(known)
        return written

    @cached_property
    def _commits(self) -> GroupCommit:
        return GroupCommit(self.db)

    async def close(self) -> None:
        try:
            await self._commits.drain()
        finally:  # whatever happened to the rows in flight, the database's thread ends
            await super().close()

    async def _model_of(self, evaluation: Evaluation) -> str:
        if evaluation.run_id not in self._run_models:
            async with self.db.execute(
                "SELECT model_name, prompt_name FROM runs WHERE id=?", (evaluation.run_id,)
            ) as cursor:
                row = await cursor.fetchone()
            if row is None:
                raise StoreError(f"run {evaluation.run_id} does not exist in {self.path}")
            self._run_models[evaluation.run_id] = row[0]
            self._run_prompts[evaluation.run_id] = row[1]
        return self._run_models[evaluation.run_id]

    async def update_scores(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Write rescored results: (outcome, actual_result, explanation, reasons, gold,
        scoring_version, id) each, in one transaction."""
        required = self._adopted.required if self._adopted is not None else frozenset()
        if "actual_result" in required:  # the original's NOT NULL column: "" for no verdict
            rows = [(r[0], "" if r[1] is None else r[1], *r[2:]) for r in rows]
        await self.db.executemany(
            "UPDATE evaluations SET outcome=?, actual_result=?, explanation=?, reasons=?,"
            " gold=?, scoring_version=? WHERE id=?",
            [tuple(storable(v) for v in row) for row in rows],
        )
        await self.db.commit()
