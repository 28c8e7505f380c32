"""A PostgreSQL database as the store's connection, through psycopg's async API.

The store's parts talk to their connection in the few calls aiosqlite's has (`execute`,
`executemany`, `execute_insert`, `commit`, `rollback`, each result a cursor to fetch from,
awaited or used with `async with`), so they run unchanged on a SQLite file; `Database` is
those calls (`calls.Database`). `PgDatabase` answers them for PostgreSQL:

- each statement, written in SQLite's dialect, is sent as PostgreSQL reads it
  (`translation.to_postgres`, once per distinct statement);
- the connection is in autocommit mode, and a transaction opens before the first statement
  that writes and lasts to `commit` or `rollback`, as Python's sqlite3 module does: a read
  never leaves a transaction open behind it, holding locks another worker's migration waits
  for;
- rows are read by position and by name (`dict(row)`), as `sqlite3.Row`s are, and a
  NUMERIC (PostgreSQL's sum of integers) as a float, as SQLite's TOTAL gives it;
- text is stored as given, except the NUL character, which PostgreSQL's text cannot hold:
  it is stored as U+FFFD (the one difference from a SQLite file, which keeps it).

`execute_native` sends PostgreSQL's own SQL, untranslated: the shared queue's claims
(`FOR UPDATE SKIP LOCKED`) and the advisory locks have no SQLite form.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine, Generator, Iterable, Mapping, Sequence
from typing import Any, Self

import psycopg
from psycopg.rows import RowMaker
from psycopg.types.numeric import FloatLoader

from secbench_tui.core.store.migrations import MIGRATIONS
from secbench_tui.core.store.schema import SCHEMA_VERSION, create_tables
from secbench_tui.core.store.translation import Statement, to_postgres


class Row(tuple[Any, ...]):
    """A row by position (`row[0]`, unpacking) and by column name (`row["id"]`, `dict(row)`),
    as `sqlite3.Row`."""

    names: dict[str, int]

    def __new__(cls, values: Sequence[Any], names: dict[str, int]) -> Self:
        row = super().__new__(cls, values)
        row.names = names
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return super().__getitem__(self.names[key])
        return super().__getitem__(key)

    def keys(self) -> list[str]:
        return list(self.names)


def _rows(cursor: Any) -> RowMaker[Row]:
    names = {column.name: i for i, column in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> Row:
        return Row(values, names)

    return make


class PgCursor:
    """A statement's rows, all fetched when it ran."""

    def __init__(self, cursor: psycopg.AsyncCursor[Row]) -> None:
        self.cursor = cursor

    async def fetchall(self) -> list[Row]:
        return await self.cursor.fetchall() if self.cursor.description else []

    async def fetchone(self) -> Row | None:
        return await self.cursor.fetchone() if self.cursor.description else None

    async def close(self) -> None:
        await self.cursor.close()

    @property
    def rowcount(self) -> int:
        return self.cursor.rowcount

    async def __aiter__(self) -> AsyncIterator[Row]:
        for row in await self.fetchall():
            yield row


class _Sent:
    """A statement under way: awaited, its cursor; `async with`, the cursor closed after."""

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._coro = coro
        self._cursor: Any = None

    def __await__(self) -> Generator[Any, None, Any]:
        return self._coro.__await__()

    async def __aenter__(self) -> Any:
        self._cursor = await self._coro
        return self._cursor

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if isinstance(self._cursor, PgCursor):
            await self._cursor.close()


def _value(value: Any) -> Any:
    if isinstance(value, str) and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    return value


def _values(parameters: Iterable[Any] | None) -> list[Any]:
    return [_value(v) for v in parameters] if parameters is not None else []


class PgDatabase:  # a `calls.Database`
    """One psycopg connection answering the store's calls (see the module's docstring)."""

    dialect = "postgresql"

    def __init__(self, conn: psycopg.AsyncConnection[Row]) -> None:
        self.conn = conn
        self.in_transaction = False

    @classmethod
    async def connect(cls, url: str) -> Self:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=_rows)
        conn.adapters.register_loader("numeric", FloatLoader)
        return cls(conn)

    async def _begin_for(self, statement: Statement) -> None:
        if statement.kind == "write" and not self.in_transaction:
            await self.conn.execute("BEGIN")
            self.in_transaction = True

    async def _execute(self, sql: str, parameters: Iterable[Any] | None) -> PgCursor:
        statement = to_postgres(sql)
        await self._begin_for(statement)
        cursor = self.conn.cursor()
        await cursor.execute(statement.sql, _values(parameters))
        return PgCursor(cursor)

    def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> _Sent:
        return _Sent(self._execute(sql, parameters))

    async def _executemany(self, sql: str, parameters: Iterable[Iterable[Any]]) -> PgCursor:
        statement = to_postgres(sql)
        await self._begin_for(statement)
        cursor = self.conn.cursor()
        rows = [_values(row) for row in parameters]
        if rows:
            await cursor.executemany(statement.sql, rows)
        return PgCursor(cursor)

    def executemany(self, sql: str, parameters: Iterable[Iterable[Any]]) -> _Sent:
        return _Sent(self._executemany(sql, parameters))

    async def _execute_insert(self, sql: str, parameters: Iterable[Any] | None) -> Row | None:
        statement = to_postgres(sql, want_id=True)
        await self._begin_for(statement)
        async with self.conn.cursor() as cursor:
            await cursor.execute(statement.sql, _values(parameters))
            if statement.returns_id:
                return await cursor.fetchone()
        return None

    def execute_insert(self, sql: str, parameters: Iterable[Any] | None = None) -> _Sent:
        return _Sent(self._execute_insert(sql, parameters))

    async def execute_native(
        self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = ()
    ) -> PgCursor:
        """PostgreSQL's own SQL (`%s` placeholders), as written; a write in it opens no
        transaction of its own (autocommit), unless one is open."""
        cursor = self.conn.cursor()
        if isinstance(parameters, Mapping):
            await cursor.execute(sql, {k: _value(v) for k, v in parameters.items()})
        else:
            await cursor.execute(sql, _values(parameters))
        return PgCursor(cursor)

    async def commit(self) -> None:
        if self.in_transaction:
            self.in_transaction = False
            await self.conn.execute("COMMIT")

    async def rollback(self) -> None:
        if self.in_transaction:
            self.in_transaction = False
            await self.conn.execute("ROLLBACK")

    async def begin(self) -> None:
        """Open a transaction now (a migration's, or a claim's), whatever comes first."""
        if not self.in_transaction:
            await self.conn.execute("BEGIN")
            self.in_transaction = True

    async def close(self) -> None:
        await self.conn.close()


# The advisory lock an opening holds while it makes or migrates the schema: several workers
# starting at once against a new database make its tables once, the others wait and find them.
SCHEMA_LOCK = 0x5EC_BE7C_0001


class NewerSchema(Exception):
    """The database was written by a newer secbench-tui; `version` is its schema."""

    def __init__(self, version: int) -> None:
        super().__init__(version)
        self.version = version


async def _version(db: PgDatabase) -> int:
    # the catalog by a query (a snapshot of its own), not `to_regclass`, whose cache may not
    # have heard yet of a table another opening made while this one waited for the lock
    cursor = await db.execute_native(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"
        " AND tablename = 'secbench_schema')"
    )
    row = await cursor.fetchone()
    if not (row and row[0]):
        return 0
    cursor = await db.execute_native("SELECT version FROM secbench_schema")
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def migrate(db: PgDatabase) -> bool:
    """Make the store's tables in a database that has none, or bring them to this version's
    schema, under an advisory lock; True when this call made them."""
    version = await _version(db)
    if version > SCHEMA_VERSION:
        raise NewerSchema(version)
    if version == SCHEMA_VERSION:
        return False
    await db.begin()
    try:
        await db.execute_native("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        version = await _version(db)  # again, under the lock: another may have made it
        if version > SCHEMA_VERSION:
            raise NewerSchema(version)
        created = version == 0
        if created:
            await create_tables(db, "postgresql")
            await db.execute_native("CREATE TABLE secbench_schema (version BIGINT NOT NULL)")
            await db.execute_native("INSERT INTO secbench_schema VALUES (%s)", (SCHEMA_VERSION,))
            version = SCHEMA_VERSION
        while version < SCHEMA_VERSION:
            await MIGRATIONS[version](db, "postgresql")
            version += 1
        await db.execute_native("UPDATE secbench_schema SET version = %s", (SCHEMA_VERSION,))
        await db.commit()
    except BaseException:
        await db.rollback()
        raise
    return created
