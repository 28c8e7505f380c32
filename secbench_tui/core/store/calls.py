"""The calls the store's parts make on their connection, whichever database it is.

aiosqlite's connection answers them as it is, for a SQLite file; `postgres.PgDatabase`
answers the same calls for PostgreSQL. The parts of the store are typed against these, so a
part written for one runs on the other.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import Any, Protocol


class Cursor(Protocol):
    """What the store reads a statement's result through."""

    async def fetchall(self) -> Iterable[Any]: ...

    async def fetchone(self) -> Any: ...

    async def close(self) -> None: ...


class Pending(Protocol):
    """A statement sent: awaited, its cursor; with `async with`, its cursor closed after."""

    def __await__(self) -> Generator[Any, None, Any]: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> Any: ...


class Database(Protocol):
    """The calls the store makes on its connection: aiosqlite's connection has them, and
    `PgDatabase` answers them for PostgreSQL."""

    def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> Pending: ...

    def executemany(self, sql: str, parameters: Iterable[Iterable[Any]]) -> Pending: ...

    def execute_insert(self, sql: str, parameters: Iterable[Any] | None = None) -> Pending: ...

    async def commit(self) -> None: ...

    async def rollback(self) -> None: ...

    async def close(self) -> None: ...
