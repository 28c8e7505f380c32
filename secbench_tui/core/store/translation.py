"""The store's SQL, written once in SQLite's dialect, as PostgreSQL reads it.

Every part of the store writes its statements the way SQLite reads them, and runs them as
they are on a SQLite file. On PostgreSQL each statement is parsed by sqlglot (a real SQL
parser, never a pattern) and written again in PostgreSQL's dialect, once per distinct
statement (`to_postgres` keeps them). sqlglot already turns `?` into psycopg's `%s` and keeps
SQLite's order of NULLs; what it leaves in SQLite's words is turned here, on the syntax tree:

- `INSERT OR IGNORE` becomes `ON CONFLICT DO NOTHING`; `INSERT OR REPLACE` an upsert on the
  table's key (`schema.Table.conflict_key`) that gives the row a new id, as SQLite's
  replacement does;
- `TOTAL(x)` (a float sum, 0.0 over no rows) is `COALESCE(SUM(x), 0)` as a float, and a
  comparison summed (`TOTAL(outcome != 'correct')`, 1 or 0 in SQLite) a CASE of 1 or 0;
- `typeof(x)` answers with SQLite's names (`integer`, `real`, `text`, `null`);
- `LIKE` is `ILIKE`: SQLite's LIKE ignores the case of ASCII letters;
- an INSERT run for its row id (`execute_insert`) returns it (`RETURNING id`);
- a subquery in FROM gets the name PostgreSQL before 16 requires;
- a `%` in a string literal is doubled, for psycopg's placeholders.

Statements that define tables (CREATE, ALTER, DROP) are written for each dialect by the
schema's declarations (`schema.Table.ddl`) and pass as they are.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

import sqlglot
from sqlglot import TokenType, exp

from secbench_tui.core.store.schema import BY_NAME

_DEFINITIONS = (TokenType.CREATE, TokenType.ALTER, TokenType.DROP)
StatementKind = Literal["read", "write", "other"]

_TYPEOF = (
    "CASE WHEN __x__ IS NULL THEN 'null'"
    " WHEN pg_typeof(__x__)::text IN ('bigint', 'integer', 'smallint') THEN 'integer'"
    " WHEN pg_typeof(__x__)::text IN ('double precision', 'real', 'numeric') THEN 'real'"
    " WHEN pg_typeof(__x__)::text = 'bytea' THEN 'blob' ELSE 'text' END"
)


@dataclass(frozen=True)
class Statement:
    """A statement as PostgreSQL reads it, and whether it writes (`write`: the connection
    opens a transaction before it, as SQLite's module does before an INSERT, UPDATE or
    DELETE)."""

    sql: str
    kind: StatementKind
    returns_id: bool = False


@functools.lru_cache(maxsize=4096)
def to_postgres(sql: str, want_id: bool = False) -> Statement:
    """`sql` (SQLite's dialect) in PostgreSQL's; `want_id`: an INSERT whose new row's id is
    returned (`execute_insert`)."""
    tokens = sqlglot.tokenize(sql, read="sqlite")
    if tokens and tokens[0].token_type in _DEFINITIONS:
        return Statement(sql, "other")
    tree = sqlglot.parse_one(sql, read="sqlite")
    kind: StatementKind = "other"
    returns_id = False
    if isinstance(tree, exp.Insert):
        kind = "write"
        _conflicts(tree)
        table = BY_NAME.get(_table_name(tree))
        if want_id and table is not None and table.has_id:
            tree.set("returning", exp.Returning(expressions=[exp.column("id")]))
            returns_id = True
    elif isinstance(tree, exp.Update | exp.Delete):
        kind = "write"
    elif isinstance(tree, exp.Query):
        kind = "read"
    for _ in range(8):  # a replaced node's own children are turned on the next pass
        before = tree.sql(dialect="sqlite")
        tree = tree.transform(_expression)
        if tree.sql(dialect="sqlite") == before:
            break
    tree = tree.transform(_percent)
    return Statement(tree.sql(dialect="postgres"), kind, returns_id)


def _table_name(insert: exp.Insert) -> str:
    target = insert.this
    if isinstance(target, exp.Schema):
        target = target.this
    return target.name if isinstance(target, exp.Table) else ""


def _inserted_columns(insert: exp.Insert) -> list[str]:
    target = insert.this
    return [c.name for c in target.expressions] if isinstance(target, exp.Schema) else []


def _conflicts(insert: exp.Insert) -> None:
    """SQLite's `INSERT OR IGNORE` / `OR REPLACE` as PostgreSQL's ON CONFLICT."""
    alternative = str(insert.args.get("alternative") or "").upper()
    if not alternative:
        return
    insert.set("alternative", None)
    if alternative == "IGNORE":
        insert.set("conflict", exp.OnConflict(action=exp.var("DO NOTHING")))
        return
    if alternative != "REPLACE":
        raise ValueError(f"INSERT OR {alternative} has no PostgreSQL form here")
    table = BY_NAME[_table_name(insert)]
    key = table.conflict_key
    updates: list[exp.Expr] = [
        exp.EQ(this=exp.column(name), expression=exp.column(name, table="excluded"))
        for name in _inserted_columns(insert)
        if name not in key
    ]
    if table.has_id:  # SQLite's replacement deletes the row and inserts a new one
        updates.append(exp.EQ(this=exp.column("id"), expression=exp.var("DEFAULT")))
    insert.set(
        "conflict",
        exp.OnConflict(
            conflict_keys=[exp.to_identifier(name) for name in key],
            action=exp.var("DO UPDATE"),
            expressions=updates,
        ),
    )


def _expression(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Anonymous) and str(node.this).upper() == "TOTAL":
        return _total(node.expressions[0])
    if isinstance(node, exp.Sum) and isinstance(node.this, exp.Predicate):
        return exp.Sum(this=_counted(node.this))
    if isinstance(node, exp.Typeof):
        value: exp.Expr = node.this
        shape = sqlglot.parse_one(_TYPEOF, read="postgres")
        return shape.transform(
            lambda n: value.copy() if isinstance(n, exp.Column) and n.name == "__x__" else n
        )
    if isinstance(node, exp.Like):
        return exp.ILike(this=node.this, expression=node.expression)
    if isinstance(node, exp.Subquery) and not node.alias and isinstance(node.parent, exp.From):
        return exp.alias_(node, "sub")
    return node


def _percent(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Literal) and node.is_string and "%" in node.this:
        return exp.Literal.string(node.this.replace("%", "%%"))
    return node


def _counted(value: exp.Expr) -> exp.Expr:
    """A comparison as SQLite sums it: 1 when true, 0 otherwise."""
    if isinstance(value, exp.Predicate):
        return exp.Case(ifs=[exp.If(this=value, true=exp.Literal.number(1))]).else_(
            exp.Literal.number(0)
        )
    return value


def _total(value: exp.Expr) -> exp.Expr:
    summed = exp.Coalesce(this=exp.Sum(this=_counted(value)), expressions=[exp.Literal.number(0)])
    return exp.Cast(this=summed, to=exp.DataType.build("DOUBLE PRECISION"))
