"""The statements verify itself runs in a case's session, and the one way they are sent.

A case's code runs before them in the same session and transaction (the checker must see what
the case did), and it may have changed its `search_path` and defined functions, operators,
types and views of its own, in `case_code` or in `pg_temp` (searched first for relations and
types whatever the path says). So every statement here holds two invariants:

- **every name is schema-qualified**: functions, operators (`OPERATOR(pg_catalog.=)`), types
  of casts and relations are `pg_catalog`'s, or the gate's in `public`, which the case cannot
  change; nothing of the case's is ever resolved, so none of its code runs inside them;
- **no value is part of the text**: the gate's token, the case's rows and the sequences'
  positions are bound parameters (the extended protocol), so the text a case could read while
  one of its functions runs (`current_query()`, `pg_stat_activity`) holds no secret.

`tests/unit/test_verify_calls.py` checks the first with PostgreSQL's own parser. They are
sent together, one round trip per batch (psycopg's pipeline mode), under the deadline.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, LiteralString

import psycopg
from psycopg import sql

from secbench_tui.core.verify.deadline import Watchdog
from secbench_tui.core.verify.execution import ResultSetRow, dumps

# A statement and its bound parameters (a statement naming a fixture table is composed, its
# names quoted by the driver).
Call = tuple[LiteralString | sql.Composed, Sequence[object]]

BEGIN: Call = ("BEGIN", ())
SAVEPOINT: Call = ("SAVEPOINT verify_case", ())
BACK_TO_SAVEPOINT: Call = ("ROLLBACK TO SAVEPOINT verify_case", ())
ROLLBACK: Call = ("ROLLBACK", ())
# what a session holds past a rollback (settings, temporary objects, prepared statements,
# cursors, advisory locks, LISTEN, sequences' currval): reset, as a fresh session would be
DISCARD: Call = ("DISCARD ALL", ())
DISCARD_SEQUENCES: Call = ("DISCARD SEQUENCES", ())  # may run in a transaction
# the transaction, and whom the session acts as (`role` is a setting pg_settings does not list)
XACT = "SELECT pg_catalog.pg_current_xact_id(), current_user, session_user"
# the settings this session changed: a setting a case changes reads `session` from then on
# (what the server lists otherwise, such as plpgsql's own, loaded at its first use, is not
# the case's doing)
SESSION_SETTINGS = (
    "SELECT s.name, s.setting FROM pg_catalog.pg_settings s"
    " WHERE s.source OPERATOR(pg_catalog.=) 'session'"
)
GATE_EXEC_CALL = (
    "SELECT public.secbench_gate_exec(%s::pg_catalog.text, %s::pg_catalog.text,"
    " %s::pg_catalog.jsonb)"
)
GATE_QUERY_CALL = (
    "SELECT * FROM public.secbench_gate_query(%s::pg_catalog.text, %s::pg_catalog.text,"
    " %s::pg_catalog.int4)"
)
SEQUENCE_RESET = (
    "SELECT pg_catalog.setval(%s::pg_catalog.oid, %s::pg_catalog.int8, %s::pg_catalog.bool)"
)
# run by the checker through the gate, the rows bound as $1: the case's rows for the property
RESULT_TABLE = (
    "CREATE TEMP TABLE result AS SELECT (x.o - 1)::int AS n, x.v AS row "
    "FROM jsonb_array_elements($1) WITH ORDINALITY AS x(v, o)"
)

# an exploit's row (`--prove-findings`), inserted as the case role before `# Setup`: the table
# and its columns (the fixtures' own, checked by `exploit_plan`) quoted by the driver, the
# values bound as one jsonb; the columns left out take their defaults
ROW_INSERT = (
    "INSERT INTO {table} ({columns}) SELECT {columns}"
    " FROM pg_catalog.jsonb_populate_record(NULL::{table}, %s::pg_catalog.jsonb)"
)

# (the sequence's oid, its value and is_called) as the fixtures left it
SequencePosition = tuple[int, int, bool]


class RowCapExceeded(Exception):
    def __init__(self, cap: int) -> None:
        super().__init__(f"returned more than {cap} rows (the cap: fetching stopped there)")


@dataclass(frozen=True)
class Mark:
    """What a case may not change in its session: the transaction and the settings."""

    xact: str
    user: tuple[str, str]  # current_user, session_user
    settings: tuple[tuple[str, str], ...]

    @staticmethod
    def calls() -> list[Call]:
        return [(XACT, ()), (SESSION_SETTINGS, ())]

    @classmethod
    def read(cls, xact: list[Any], settings: list[Any]) -> Mark:
        (row,) = xact
        changed = tuple(sorted((str(n), str(v)) for n, v in settings))
        return cls(str(row[0]), (str(row[1]), str(row[2])), changed)


@contextmanager
def pipeline(conn: psycopg.Connection[Any]) -> Iterator[psycopg.Pipeline]:
    """psycopg's pipeline, opened with a sync: libpq (18) keeps the single-row mode of the
    last `Cursor.stream` (a case's statement) for the first query of a pipeline, which then
    fails ("unexpected result status: SINGLE_TUPLE"); a sync ahead of it resets the mode."""
    with conn.pipeline() as opened:
        opened.sync()
        yield opened


def batch(
    conn: psycopg.Connection[Any], watchdog: Watchdog, calls: Sequence[Call]
) -> list[list[Any]]:
    """Our own statements in one round trip under the deadline: the rows of each, in order
    ([] for a statement without rows). The first error raises, and the rest do not run."""
    cursors = [conn.cursor() for _ in calls]
    with watchdog.limit(conn), pipeline(conn):
        for cur, (query, params) in zip(cursors, calls, strict=True):
            cur.execute(query, params)
    return [cur.fetchall() if cur.description is not None else [] for cur in cursors]


def sequence_resets(positions: Sequence[SequencePosition]) -> list[Call]:
    """The fixtures' sequences back where the fixtures left them (setval is not undone by a
    rollback: a case's nextval or setval would otherwise outlive it), and no `currval` in
    the session (which setval sets)."""
    return [*((SEQUENCE_RESET, list(position)) for position in positions), DISCARD_SEQUENCES]


def row_inserts(rows: Sequence[tuple[str, dict[str, object]]]) -> list[Call]:
    """An exploit's rows (table, {column: value}) as `ROW_INSERT`s into `public`'s tables."""
    return [
        (
            sql.SQL(ROW_INSERT).format(
                table=sql.Identifier("public", table),
                columns=sql.SQL(", ").join(sql.Identifier(column) for column in values),
            ),
            [dumps(values)],
        )
        for table, values in rows
    ]


class Calls:
    """A scenario's blocks as calls of the gate: the block's last statement, when it returns
    rows, through the query gate (its rows are the block's result)."""

    def __init__(self, token: str, cap: int) -> None:
        self.token, self.cap = token, cap

    def execute(self, text: str, args: str | None = None) -> Call:
        return (GATE_EXEC_CALL, [self.token, text, args])

    def query(self, text: str) -> Call:
        return (GATE_QUERY_CALL, [self.token, text.rstrip().rstrip(";"), self.cap + 1])

    def block(self, statements: Sequence[tuple[str, bool]]) -> list[Call]:
        """(text, returns rows) of each statement of a block, in order."""
        return [
            self.query(text) if rows and n == len(statements) else self.execute(text)
            for n, (text, rows) in enumerate(statements, 1)
        ]

    def result_table(self, rows: list[ResultSetRow]) -> Call:
        return self.execute(RESULT_TABLE, dumps(rows))


def is_query(call: Call) -> bool:
    return call[0] == GATE_QUERY_CALL


def gated_rows(rows: list[Any], cap: int) -> list[ResultSetRow]:
    """The query gate's rows (one jsonb each) as result rows; RowCapExceeded past `cap`."""
    if len(rows) > cap:
        raise RowCapExceeded(cap)
    return [row[0] if isinstance(row[0], dict) else {"value": row[0]} for row in rows]
