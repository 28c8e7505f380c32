"""Opening a database: creating or migrating it, WAL, and the locks between processes.

A store is a SQLite file or a PostgreSQL database (`location`): the same tables (`schema`),
the same statements (the store's parts write them once, in SQLite's dialect), through the
same calls (`calls.Database`: aiosqlite's connection, or `postgres.PgDatabase`). What
follows is the SQLite file's story; a PostgreSQL database is opened by `_open_postgres`, its
schema made or migrated under an advisory lock, its writes committed as they come as well.

Each result is committed as it arrives (WAL mode), so killing the process at any moment keeps
every finished case. Several processes may open the same new file at once: the schema is
written under a write lock the busy timeout waits for, and the switch to WAL is retried
(`_use_wal`). `StoreConnection` holds the open connection the other parts of the `Store`
(`database.py`) read and write through, with aiosqlite's own calls, and writes one at a time
(`transaction`).

A store belongs to the event loop that opened it, which answers its calls, and is closed
there. A program that runs two loops (the app: its screens on one, its runs on another) opens
one store on each: two connections to the same file, which WAL lets one write while the
other reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

import aiosqlite

from secbench_tui.core.store import requests
from secbench_tui.core.store.adoption import refuse_foreign
from secbench_tui.core.store.calls import Database
from secbench_tui.core.store.location import PostgresUrl, StoreLocation, read_location
from secbench_tui.core.store.migrations import MIGRATIONS
from secbench_tui.core.store.schema import SCHEMA_VERSION, Dialect, create_tables

T = TypeVar("T")

if TYPE_CHECKING:
    from secbench_tui.core.store.original import WriteLayout

BUSY_TIMEOUT_S = 5.0  # how long an open or a write waits for another process's lock
# Pages the write-ahead log may hold before a commit copies them into the file (SQLite's
# default is 1,000). A result's row writes about 8 pages (the table's and one per index), so
# at the default every 125th result stalled on a checkpoint and its two fsyncs (tens of ms
# here), where a bare loop writing 1 page per row stalls every 1,000th. At 10,000, a run
# checkpoints about as often per result as that loop, and a run of up to ~1,200 cases only
# when the database is closed.
WAL_CHECKPOINT_PAGES = 10_000


async def _use_wal(db: aiosqlite.Connection) -> None:
    """Switch the file to WAL (a no-op once it is), waiting as long as the busy timeout.

    SQLite switches by upgrading a read lock to a write lock, and never waits for such an
    upgrade (two connections waiting on each other would deadlock), so the busy timeout does
    not cover it: while another process is switching the same new file or reading it, the
    switch fails at once with SQLITE_BUSY. It is retried here instead, with a short backoff.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BUSY_TIMEOUT_S
    delay = 0.001
    while True:
        try:
            await db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or loop.time() > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)


def _is_new(path: Path) -> bool:
    """No file yet, or an empty one (SQLite writes nothing to a file until its first
    transaction): a database for this program to create, never an original's to adopt."""
    try:
        return path.stat().st_size == 0
    except FileNotFoundError:
        return True


def _settled(task: asyncio.Future[Any]) -> None:
    """A kept write's failure is taken here too: one whose caller was cancelled meanwhile is
    never left for the loop to report as an exception nobody retrieved."""
    if not task.cancelled():
        task.exception()


class StoreError(Exception):
    """The database cannot be used; the message names the file and what to do."""


def _to_stderr(text: str) -> None:
    import sys

    print(f"secbench-tui: note: {text}", file=sys.stderr)


class StoreConnection:
    """One open database: the connection and what this process remembers about it."""

    def __init__(self, db: Database, path: StoreLocation, dialect: Dialect = "sqlite") -> None:
        self.db = db
        self.path = path  # shown without secrets by str()
        self.dialect: Dialect = dialect
        self._run_models: dict[int, str] = {}
        self._run_prompts: dict[int, str | None] = {}
        self._known_texts: set[str] = set()  # case_texts rows this connection has written
        self._request_texts = requests.RequestTexts()  # the parts of the messages asked
        self._known_request_texts: set[str] = set()  # request_texts rows written
        self._adopted: WriteLayout | None = None  # the original evaluator's table, if it is
        self.backup: Path | None = None  # the copy this open made of an original's file
        self._write_turn = asyncio.Lock()  # one write transaction at a time (`transaction`)
        self._under_way: set[asyncio.Future[Any]] = set()  # writes `close` waits for

    @classmethod
    async def open(
        cls, location: StoreLocation | str, on_notice: Callable[[str], None] = _to_stderr
    ) -> Self:
        """Open (and create or migrate) the database; `on_notice` hears what the user must
        know, such as where the copy of an original evaluator's file went."""
        found = read_location(location)
        if isinstance(found, PostgresUrl):
            return await cls._open_postgres(found)
        path = found
        if path.parent and not path.parent.exists():
            raise StoreError(
                f"--db {path}: folder {path.parent} does not exist; create it or pick another path"
            )
        new = _is_new(path)
        try:
            db = await aiosqlite.connect(str(path))
        except Exception as exc:  # aiosqlite re-raises sqlite3 errors of any kind
            raise StoreError(f"--db {path}: cannot open the database ({exc})") from exc
        store = cls(db, path)
        try:
            db.row_factory = aiosqlite.Row
            await db.execute(f"PRAGMA busy_timeout={round(BUSY_TIMEOUT_S * 1000)}")
            await db.execute("PRAGMA foreign_keys=ON")
            # A file that may hold an original evaluator's table is migrated (and copied)
            # before the switch to WAL: the copy must be of the file as it was. A new file
            # holds nothing to copy: it switches first, so its schema is written as every
            # later result is (WAL, synchronous=NORMAL), without the rollback journal's
            # syncs (about 20 ms of a one-case run's start on these machines). Either way the
            # schema is written under a lock the busy timeout waits for, and the switch to
            # WAL, which that timeout does not cover, is retried (`_use_wal`).
            if new:
                await _use_wal(db)
                await db.execute("PRAGMA synchronous=NORMAL")
            created = await store._migrate()
            if not new:
                await _use_wal(db)
                await db.execute("PRAGMA synchronous=NORMAL")
            await db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
            if not created:  # a file this open created holds no table of the original's
                from secbench_tui.core.store import original

                store._adopted = await original.write_layout(db)
        except Exception as exc:
            await db.close()
            if isinstance(exc, StoreError):
                raise
            if "locked" in str(exc):
                raise StoreError(
                    f"--db {path}: in use by another process (database is locked); "
                    "wait for it to finish, or use another --db path"
                ) from exc
            raise StoreError(
                f"--db {path}: not a secbench-tui database or damaged ({exc}); "
                "pick another --db path"
            ) from exc
        if store.backup is not None:
            on_notice(
                f"--db {path} was written by the original security-bench: its columns and rows "
                "are kept as they were, so it still reads and adds to the file; a copy of the "
                f"file as it was is at {store.backup}"
            )
        return store

    @classmethod
    async def _open_postgres(cls, location: PostgresUrl) -> Self:
        """A PostgreSQL database: connected, its schema made or migrated (`postgres.migrate`).
        An original evaluator's file is SQLite's alone: there is none to adopt here."""
        try:
            from secbench_tui.core.store import postgres
        except ImportError:
            raise StoreError(
                f"--db {location}: a PostgreSQL store needs psycopg; install it with "
                "pip install 'secbench-tui[postgres]'"
            ) from None
        try:
            db = await postgres.PgDatabase.connect(location.url)
        except Exception as exc:
            raise StoreError(
                f"--db {location}: cannot connect to PostgreSQL ({_scrubbed(exc, location)}); "
                "check the URL and that the server is running and lets this user in"
            ) from exc
        store = cls(db, location, "postgresql")
        try:
            await postgres.migrate(db)
        except postgres.NewerSchema as exc:
            await db.close()
            raise StoreError(
                f"--db {location}: written by a newer secbench-tui (schema {exc.version}, this "
                f"version reads up to {SCHEMA_VERSION}); upgrade secbench-tui"
            ) from None
        except Exception as exc:
            await db.close()
            raise StoreError(
                f"--db {location}: cannot make or migrate the store's tables "
                f"({_scrubbed(exc, location)}); the user needs the right to create tables"
            ) from exc
        return store

    @classmethod
    async def open_existing(
        cls, path: StoreLocation, missing: str, on_notice: Callable[[str], None] = _to_stderr
    ) -> Self:
        """Open a database that must already hold results (a report, an export, a rescore:
        a new file has nothing to read); `missing` says what to do when there is none."""
        if isinstance(path, Path) and not path.is_file():
            raise StoreError(f"--db {path}: no such database; {missing}")
        return await cls.open(path, on_notice)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Database]:
        """One write of this store: its statements, then a commit; on a failure (or a
        cancellation) a rollback, and the error goes on.

        Writes take turns: one write's statements are never committed, or undone, by
        another's (a refused result must not take the run's end with it). Reads need no
        turn: they see what is committed, and this connection's own write under way.
        """
        async with self._write_turn:
            try:
                yield self.db
                await self.db.commit()
            except BaseException:
                # SQLite has already rolled the transaction back on some errors (a full
                # disk, an I/O error): then this is a no-op, and the error raised is the
                # write's own
                with contextlib.suppress(Exception):
                    await self.db.rollback()
                raise

    async def kept(self, write: Awaitable[T]) -> T:
        """`write`, carried to its end even when the caller is cancelled meanwhile: what it
        stores (a model's answer) was paid for. `close` waits for every such write."""
        task = asyncio.ensure_future(write)
        self._under_way.add(task)
        task.add_done_callback(_settled)
        task.add_done_callback(self._under_way.discard)
        return await asyncio.shield(task)

    async def close(self) -> None:
        """Close the connection, once the writes under way (`kept`) have ended. A store is
        closed on the event loop that opened it: that loop answers its calls."""
        if self._under_way:
            await asyncio.wait(list(self._under_way))
        await self.db.close()

    @property
    def adopted(self) -> bool:
        """Whether this is a table of the original evaluator's, adopted in place."""
        return self._adopted is not None

    @property
    def sqlite(self) -> aiosqlite.Connection:
        """The SQLite file's connection (its PRAGMAs, the original evaluator's table)."""
        assert isinstance(self.db, aiosqlite.Connection), "a SQLite file's store"
        return self.db

    @property
    def file(self) -> Path:
        assert isinstance(self.path, Path), "a SQLite file's store"
        return self.path

    async def _back_up_original(self) -> Path:
        from secbench_tui.core.store import original

        try:
            return await original.back_up(self.sqlite, self.file)
        except OSError as exc:
            raise StoreError(
                f"--db {self.path}: written by the original security-bench; cannot write a "
                f"copy of it beside it before adopting it ({exc}); make the folder "
                "writable, or copy the file and use the copy"
            ) from exc

    async def _user_version(self) -> int:
        cursor = await self.db.execute("PRAGMA user_version")
        row = await cursor.fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"--db {self.path}: written by a newer secbench-tui (schema {version}, this "
                f"version reads up to {SCHEMA_VERSION}); upgrade secbench-tui"
            )
        return version

    async def _migrate(self) -> bool:
        """Create or bring the file up to the current schema; True when this open created
        it (then it holds nothing of the original evaluator's, whose code is not loaded)."""
        version = await self._user_version()
        if version == SCHEMA_VERSION:
            from secbench_tui.core.store import original

            if not await original.has_new_rows(self.sqlite):
                return False  # nothing to write: opening needs the write lock only for work
        # One transaction: a migration that fails leaves the file as it was.
        await self.db.execute("BEGIN IMMEDIATE")
        try:
            # Read again under the write lock: another process opening the same new file
            # at the same moment may have migrated it while this one waited for the lock.
            version = await self._user_version()
            if version == 0:  # the original's file to adopt, a new one, or someone else's
                await refuse_foreign(self.sqlite)
            created = version == 0 and not await self._has_results_table()
            if created:  # a new file: the tables as they are now (`schema.TABLES`)
                await create_tables(self.db, "sqlite")
                version = SCHEMA_VERSION
            else:
                from secbench_tui.core.store import original

                if await original.unadopted(self.sqlite):  # decided under the lock: one copy
                    self.backup = await self._back_up_original()
            while version < SCHEMA_VERSION:
                await MIGRATIONS[version](self.db, "sqlite")
                version += 1
            await self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            if not created:
                await original.import_new_rows(self.sqlite)  # rows the original evaluator wrote
            await self.db.commit()
        except BaseException:
            await self.db.rollback()
            raise
        return created

    async def _has_results_table(self) -> bool:
        async with self.db.execute(  # closed on the database's thread
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='evaluations'"
        ) as cursor:
            return await cursor.fetchone() is not None


def _scrubbed(exc: BaseException, location: PostgresUrl) -> str:
    """An error's words without the URL's secrets (libpq may quote the URL it was given)."""
    return str(exc).replace(location.url, str(location)).strip()
