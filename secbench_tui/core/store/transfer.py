"""`--migrate-db FROM TO`: every result of one store copied into another, SQLite or PostgreSQL.

Every table of the results (`schema.TABLES` that both dialects hold) is copied row by row with
its ids, in the order their references need (runs before the results that name them), a page
at a time. A row already in the target with the same key and the same values is left as it
is, so a copy run again (or after an interruption) adds only what is missing; a row with the
same key and other values means the target holds other results, and the copy stops before
writing anything, naming it. The shared queue of `--worker` is not copied: it is work under
way, not results.

SQLite holds any value in any column; PostgreSQL's columns are typed. A value the target's
column cannot hold (text in a number column, a number that is not whole in a count) is
stored as the program reads it anyway (`stored_values`: such a value reads as none), so
every figure, report and export of the copy is that of the original; the copy counts them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from secbench_tui.core.store.connection import StoreError
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.location import StoreLocation
from secbench_tui.core.store.schema import TABLES, Dialect, Kind, Table

PAGE = 500
RESULT_TABLES = [t for t in TABLES if len(t.dialects) == 2]


@dataclass
class Copied:
    """What a copy did, per table: rows written, rows the target already held."""

    written: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)
    adjusted: int = 0  # values the target's typed columns could not hold as they were

    def text(self, source: StoreLocation, target: StoreLocation) -> str:
        parts = ", ".join(f"{self.written.get(t.name, 0)} {t.name}" for t in RESULT_TABLES)
        kept = sum(self.present.values())
        line = f"copied {parts} from {source} to {target}"
        if kept:
            line += f"; {kept} rows were there already and are kept"
        if self.adjusted:
            line += (
                f"; {self.adjusted} values the target's typed columns cannot hold as they were"
                " are stored as the program reads them (none)"
            )
        return line


def _key(table: Table) -> tuple[str, ...]:
    if table.has_id:
        return ("id",)
    return table.primary_key or tuple(c.name for c in table.columns if c.primary_key)


def _fit(kind: Kind, value: Any, dialect: Dialect) -> tuple[Any, bool]:
    """`value` as a column of `kind` holds it in `dialect`; True when it had to change."""
    if value is None:
        return None, False
    if kind in (Kind.ID, Kind.INTEGER):
        if isinstance(value, bool):
            return int(value), True
        if isinstance(value, int) and -(2**63) <= value < 2**63:
            return value, False
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value), True
        return None, True
    if kind is Kind.REAL:
        if isinstance(value, bool):
            return float(value), True
        if isinstance(value, int | float):
            return float(value), isinstance(value, int) and not isinstance(value, bool)
        return None, True
    if isinstance(value, str):
        if dialect == "postgresql" and "\x00" in value:  # text there cannot hold NUL
            return value.replace("\x00", "\ufffd"), True
        return value, False
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace"), True
    return str(value), True


async def _page(
    store: Store, table: Table, key: tuple[str, ...], after: Any
) -> list[dict[str, Any]]:
    columns = ", ".join(c.name for c in table.columns)
    order = ", ".join(key)
    where = ""
    params: list[Any] = []
    if after is not None:
        where = f" WHERE ({order}) > ({', '.join('?' * len(key))})"
        params.extend(after)
    cursor = await store.db.execute(
        f"SELECT {columns} FROM {table.name}{where} ORDER BY {order} LIMIT ?", [*params, PAGE]
    )
    return [dict(row) for row in await cursor.fetchall()]


async def _existing(
    store: Store, table: Table, key: tuple[str, ...], keys: Sequence[tuple[Any, ...]]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    if not keys:
        return {}
    columns = ", ".join(c.name for c in table.columns)
    one = "(" + ", ".join("?" * len(key)) + ")"
    cursor = await store.db.execute(
        f"SELECT {columns} FROM {table.name} WHERE ({', '.join(key)}) IN"
        f" ({', '.join([one] * len(keys))})",
        [v for k in keys for v in k],
    )
    return {tuple(row[k] for k in key): dict(row) for row in await cursor.fetchall()}


async def _copy_table(source: Store, target: Store, table: Table, copied: Copied) -> None:
    key = _key(table)
    names = [c.name for c in table.columns]
    insert = f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    after: tuple[Any, ...] | None = None
    while True:
        rows = await _page(source, table, key, after)
        if not rows:
            return
        after = tuple(rows[-1][k] for k in key)
        fitted: list[list[Any]] = []
        for row in rows:
            values = []
            for column in table.columns:
                value, changed = _fit(column.kind, row[column.name], target.dialect)
                copied.adjusted += changed and row[column.name] is not None
                values.append(value)
            fitted.append(values)
        keys = [tuple(row[k] for k in key) for row in rows]
        there = await _existing(target, table, key, keys)
        missing = []
        for row_key, values in zip(keys, fitted, strict=True):
            held = there.get(row_key)
            if held is None:
                missing.append(values)
            elif [held[n] for n in names] != values:
                shown = ", ".join(f"{k}={v!r}" for k, v in zip(key, row_key, strict=True))
                raise StoreError(
                    f"--migrate-db: {target.path} already holds other results ({table.name} "
                    f"{shown} differs from {source.path}'s); copy into an empty database, "
                    "or into the one an earlier copy of this store made"
                )
        if missing:
            async with target.transaction() as db, db.executemany(insert, missing):
                pass
        copied.written[table.name] = copied.written.get(table.name, 0) + len(missing)
        copied.present[table.name] = copied.present.get(table.name, 0) + len(rows) - len(missing)


async def _next_ids(target: Store) -> None:
    """PostgreSQL: the next id of each table after the ids copied (SQLite's AUTOINCREMENT
    keeps up by itself)."""
    from secbench_tui.core.store.postgres import PgDatabase

    if not isinstance(target.db, PgDatabase):
        return
    for table in RESULT_TABLES:
        if table.has_id:
            await target.db.execute_native(
                f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'),"
                f" GREATEST((SELECT MAX(id) FROM {table.name}), 1))"
            )


async def migrate_db(source: StoreLocation, target: StoreLocation) -> Copied:
    """Copy every result of `source` into `target` (made when it does not exist)."""
    if str(source) == str(target) and source == target:
        raise StoreError("--migrate-db: FROM and TO are the same store; name two stores")
    src = await Store.open(source)
    try:
        if src.adopted:
            raise StoreError(
                f"--migrate-db: {source} is the original security-bench's table, adopted "
                "in place; adoption stays SQLite-only (the original tool still writes to that "
                "file): export it (--export json) or run a model on it first"
            )
        dst = await Store.open(target)
        try:
            copied = Copied()
            for table in RESULT_TABLES:
                await _copy_table(src, dst, table, copied)
            await _next_ids(dst)
            return copied
        finally:
            await dst.close()
    finally:
        await src.close()
