"""Run SQL cases on PostgreSQL, in the sandbox: each parameter set in a transaction that is
rolled back.

Named `:param` placeholders are bound client side (psycopg's `ClientCursor`), which keeps
untyped parameters working (`:x IS NULL`). The bound text is split into statements by
PostgreSQL's own parser (pglast), and each statement runs on its own under the deadline, its
rows fetched one by one up to the cap. A case may not control the transaction or the session
(`COMMIT`, `SET ...`, `RESET`, `DISCARD`...): such a case fails before anything runs; what
gets past that (a `set_config` in a function) is caught after the case runs, by comparing the
transaction id and the session's settings, and the database is rebuilt if the transaction
ended. A case that raises an exception on purpose (`RAISE`, SQLSTATE P0001, or
insufficient_privilege) refused the request: the statement's effects are undone and the
property is checked on the unchanged state. `# Setup`, `# Verify` and `# Property` run as the
checker, through the gate (see `sandbox`).
"""

from __future__ import annotations

import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import pq
from psycopg.types.json import Jsonb

from secbench_tui.core.suites.verify.data import Scenario
from secbench_tui.core.suites.verify.execution import Execution, dumps, json_value
from secbench_tui.core.suites.verify.sandbox import (
    GATE_EXEC,
    GATE_QUERY,
    AppDatabase,
    DeadlineExceeded,
    Watchdog,
)

# The original security-bench's test for a statement that changes data (not SELECT ... FOR UPDATE)
MODIFIES = re.compile(r"INSERT\s+INTO|DELETE\s+FROM|^\s*UPDATE\s+\w+", re.I | re.M)
_PLACEHOLDER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
# Statements that would let a case reach past its own transaction or change its session.
_FORBIDDEN = {
    "TransactionStmt": "transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT...)",
    "VariableSetStmt": "a session setting (SET, RESET, SET ROLE, SET SESSION AUTHORIZATION...)",
    "DiscardStmt": "DISCARD",
    "ConstraintsSetStmt": "SET CONSTRAINTS",
    "LoadStmt": "LOAD",
}
_ROWS_ALWAYS = {"ExplainStmt", "VariableShowStmt", "FetchStmt"}
_SETTINGS = (
    "SELECT pg_current_xact_id()::text, md5(string_agg(name || '=' || setting, ',' ORDER BY name))"
    " FROM pg_settings"
)


class CodeError(Exception):
    """Suite SQL that cannot run in the sandbox; the message says why."""


class RowCapExceeded(Exception):
    def __init__(self, cap: int) -> None:
        super().__init__(f"returned more than {cap} rows (the cap: fetching stopped there)")


@dataclass(frozen=True)
class Statement:
    text: str
    kind: str  # the parse node's name, e.g. SelectStmt
    returns_rows: bool


def bind(sql: str, params: dict[str, Any]) -> str:
    """`:name` -> `%(name)s` for the names in `params`; every other `%` doubled."""
    escaped = sql.replace("%", "%%")
    return _PLACEHOLDER.sub(
        lambda m: f"%({m.group(1)})s" if m.group(1) in params else m.group(0), escaped
    )


def _values(params: dict[str, Any]) -> dict[str, Any]:
    return {k: Jsonb(v) if isinstance(v, dict) else v for k, v in params.items()}


def render(conn: psycopg.Connection[Any], sql: str, params: dict[str, Any]) -> str:
    """`sql` with its `:name` placeholders replaced by the parameters as SQL literals."""
    return psycopg.ClientCursor(conn).mogrify(bind(sql, params), _values(params))


def statements(sql: str) -> list[Statement]:
    """`sql` split into statements by PostgreSQL's parser; CodeError when it does not parse."""
    from pglast import parser

    try:
        raw = parser.parse_sql(sql)
    except parser.ParseError as exc:
        raise CodeError(f"does not parse: {exc}") from None
    data = sql.encode()
    out = []
    for item in raw:
        start = item.stmt_location or 0
        end = start + item.stmt_len if item.stmt_len else len(data)
        node = item.stmt
        kind = type(node).__name__
        rows = kind in _ROWS_ALWAYS
        if kind == "SelectStmt":
            rows = getattr(node, "intoClause", None) is None
        elif kind in ("InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt"):
            rows = bool(getattr(node, "returningList", None))
        out.append(Statement(data[start:end].decode().strip(), kind, rows))
    return out


def case_statements(sql: str) -> list[Statement]:
    """`statements`, refusing transaction control and session changes before anything runs."""
    found = statements(sql)
    for number, statement in enumerate(found, 1):
        if statement.kind in _FORBIDDEN:
            raise CodeError(
                f"statement {number} is {_FORBIDDEN[statement.kind]}, which case code may not "
                "use: each case runs in a transaction of its own that verify rolls back"
            )
    return found


def _rows(cur: psycopg.Cursor[Any], records: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    names = [c.name for c in cur.description or ()]
    return [dict(zip(names, json_value(list(r)), strict=True)) for r in records]


def run_statements(
    conn: psycopg.Connection[Any], found: Sequence[Statement], watchdog: Watchdog
) -> tuple[list[dict[str, Any]], int]:
    """Rows of the last statement that returned rows (else []) and the last row count."""
    cap = watchdog.limits.rows
    rows: list[dict[str, Any]] = []
    affected = 0
    cur = conn.cursor()
    for statement in found:
        with watchdog.limit(conn):
            if statement.returns_rows:
                records: list[Any] = []
                stream: Generator[Any] = cur.stream(statement.text.encode())  # type: ignore[assignment]
                try:
                    for record in stream:
                        records.append(record)
                        if len(records) > cap:
                            raise RowCapExceeded(cap)
                    rows = _rows(cur, records)
                finally:
                    stream.close()  # past the cap: psycopg cancels the rest of the statement
                affected = len(records)
            else:
                cur.execute(statement.text.encode())
                if cur.description is not None:
                    records = cur.fetchmany(cap + 1)
                    if len(records) > cap:
                        raise RowCapExceeded(cap)
                    rows = _rows(cur, records)
                affected = max(cur.rowcount, 0)
    return rows, affected


def load_fixtures(db: AppDatabase, text: str) -> None:
    """The fixtures, statement by statement, as the checker; then the gate."""
    with psycopg.connect(db.checker_conninfo, autocommit=True, prepare_threshold=None) as conn:
        conn.execute("BEGIN")
        found = statements(text)
        for statement in found:
            with db.watchdog.limit(conn):
                conn.execute(statement.text.encode())
        if conn.info.transaction_status != pq.TransactionStatus.IDLE:
            conn.execute("COMMIT")
        db.install_gate(conn)


class Checker:
    """Runs the scenario's own SQL as the checker role, on the case's connection and in its
    transaction, through the gate: the case can neither call it nor change what it runs."""

    def __init__(self, conn: psycopg.Connection[Any], token: str, watchdog: Watchdog):
        self.conn, self.token, self.watchdog = conn, token, watchdog

    def execute(self, text: str) -> None:
        with self.watchdog.limit(self.conn):
            self.conn.execute(
                f"SELECT public.{GATE_EXEC}(%s::text, %s::text)".encode(), [self.token, text]
            )

    def query(self, text: str) -> list[dict[str, Any]]:
        cap = self.watchdog.limits.rows
        with self.watchdog.limit(self.conn):
            got = self.conn.execute(
                f"SELECT * FROM public.{GATE_QUERY}(%s::text, %s::text, %s::int)".encode(),
                [self.token, text.rstrip().rstrip(";"), cap + 1],
            ).fetchall()
        if len(got) > cap:
            raise RowCapExceeded(cap)
        return [row[0] if isinstance(row[0], dict) else {"value": row[0]} for row in got]

    def run(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Every statement of a block; the rows of the last when it returns rows."""
        found = statements(render(self.conn, sql, params))
        rows: list[dict[str, Any]] = []
        for number, statement in enumerate(found, 1):
            if statement.returns_rows and number == len(found):
                rows = self.query(statement.text)
            else:
                self.execute(statement.text)
        return rows

    def result_table(self, rows: list[dict[str, Any]]) -> None:
        """`result`: the case's rows, one per row (n, row jsonb), for the property."""
        literal = psycopg.ClientCursor(self.conn).mogrify("%s", [dumps(rows)])
        self.execute(
            "CREATE TEMP TABLE result AS SELECT (x.o - 1)::int AS n, x.v AS row "
            f"FROM jsonb_array_elements({literal}::jsonb) WITH ORDINALITY AS x(v, o)"
        )


def refused(exc: psycopg.Error, scenario: Scenario) -> bool:
    """Did the case refuse on purpose? A RAISE (P0001, or 42501 raised by plpgsql) or a
    SQLSTATE of the scenario's `# Refusals`. The sandbox's own "permission denied" (42501
    raised by the server, not by the case's code) is an error: the case tried what the case
    role may not do, and it fails with the server's words."""
    if exc.sqlstate in scenario.refusals or exc.sqlstate == "P0001":
        return True
    return exc.sqlstate == "42501" and exc.diag.source_file == "pl_exec.c"


def _error(exc: psycopg.Error) -> str:
    diag = exc.diag.message_primary or str(exc)
    return f"{exc.sqlstate or 'error'}: {diag}".strip()


class CaseSession:
    """The case role's connection to one app database: reopened when the watchdog ended the
    session, and the database rebuilt from its fixtures when a case's changes outlived it."""

    def __init__(self, db: AppDatabase, fixtures: str, watchdog: Watchdog) -> None:
        self.db, self.fixtures, self.watchdog = db, fixtures, watchdog
        self._conn: psycopg.Connection[Any] | None = None
        self.dirty = False

    @property
    def conn(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = psycopg.connect(
                self.db.case_conninfo, autocommit=True, prepare_threshold=None
            )
        return self._conn

    def reset(self) -> None:
        """After each execution: undo the transaction and everything the session holds."""
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            self._conn = None
        else:
            try:
                if conn.info.transaction_status != pq.TransactionStatus.IDLE:
                    conn.execute("ROLLBACK")
                conn.execute("DISCARD ALL")
            except psycopg.Error:
                conn.close()
                self._conn = None
        if self.dirty:
            self.close()
            self.db.drop()
            self.db.create()
            load_fixtures(self.db, self.fixtures)
            self.dirty = False

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _escape(conn: psycopg.Connection[Any], mark: tuple[str, str], rolled_back: bool) -> str | None:
    """Why the case got out of its transaction or changed the session, or None."""
    if rolled_back:
        return "ended verify's transaction (its savepoint is gone)"
    xid, settings = conn.execute(_SETTINGS).fetchone() or ("", "")
    if xid != mark[0]:
        return "ended verify's transaction and started another"
    if settings != mark[1]:
        return "changed a session setting (set_config or a function with SET)"
    return None


def run_case(
    session: CaseSession, code: str, scenario: Scenario, index: int, case_id: str = ""
) -> Execution:
    params = scenario.parameters[index]
    out = Execution(index)
    watchdog = session.watchdog
    try:
        conn = session.conn
        found = case_statements(render(conn, code, params))
        run = scenario.run_for(case_id)
        run_found = case_statements(render(conn, run, params)) if run else []
    except CodeError as exc:
        out.error = f"the case's SQL {exc}"
        return out
    except psycopg.Error as exc:
        out.error = f"cannot connect as the case role: {_error(exc)}"
        return out
    checker = Checker(conn, session.db.token, watchdog)
    try:
        conn.execute("BEGIN")
        if scenario.setup:
            checker.run(scenario.setup, params)
        mark = conn.execute(_SETTINGS).fetchone() or ("", "")
        conn.execute("SAVEPOINT verify_case")
        try:
            out.rows, out.affected = run_statements(conn, found, watchdog)
            if run_found:
                out.rows, out.affected = run_statements(conn, run_found, watchdog)
        except psycopg.Error as exc:
            if refused(exc, scenario):
                out.refused, out.rows, out.affected = True, [], 0
            else:
                out.error = _error(exc)
            try:
                conn.execute("ROLLBACK TO SAVEPOINT verify_case")
            except psycopg.Error:
                session.dirty = True
                out.error = f"the case {_escape(conn, mark, True)}"
                return out
        escape = _escape(conn, mark, False)
        if escape is not None:
            session.dirty = True
            out.error = f"the case {escape}: case code may not control the transaction or session"
            return out
        if out.error is not None:
            return out
        # what the original's rule compares: a write's row count, a read's rows
        out.compared = {"affected": out.affected} if MODIFIES.search(code) else out.rows
        if scenario.verify:
            out.compared = checker.run(scenario.verify, params)
        if scenario.property_sql:
            checker.result_table(out.rows)
            out.violations = checker.run(scenario.property_sql, params)
    except (DeadlineExceeded, RowCapExceeded) as exc:
        out.error = out.error or str(exc)
    except CodeError as exc:
        out.error = out.error or f"the scenario's own SQL {exc}"
    except psycopg.Error as exc:
        out.error = out.error or f"in the scenario's own SQL: {_error(exc)}"
    finally:
        session.reset()
    return out
