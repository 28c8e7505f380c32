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

import json
import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import pq
from psycopg.types.json import Jsonb

from secbench_tui.core.verify.data import Scenario
from secbench_tui.core.verify.execution import (
    Execution,
    Parameters,
    ResultSetRow,
    dumps,
    json_value,
)
from secbench_tui.core.verify.sandbox import (
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


def bind(sql: str, params: Parameters) -> str:
    """`:name` -> `%(name)s` for the names in `params`; every other `%` doubled."""
    escaped = sql.replace("%", "%%")
    return _PLACEHOLDER.sub(
        lambda m: f"%({m.group(1)})s" if m.group(1) in params else m.group(0), escaped
    )


def _values(params: Parameters) -> Parameters:
    return {k: Jsonb(v) if isinstance(v, dict) else v for k, v in params.items()}


def render(conn: psycopg.Connection[Any], sql: str, params: Parameters) -> str:
    """`sql` with its `:name` placeholders replaced by the parameters as SQL literals."""
    return psycopg.ClientCursor(conn).mogrify(bind(sql, params), _values(params))


def statements(sql: str) -> list[Statement]:
    """`sql` split into statements by PostgreSQL's parser; CodeError when it does not parse.

    (The parse tree comes as JSON: building pglast's Python nodes costs more than the rest.)"""
    from pglast import parser

    try:
        tree = json.loads(parser.parse_sql_json(sql))
    except parser.ParseError as exc:
        raise CodeError(f"does not parse: {exc}") from None
    data = sql.encode()
    out = []
    for item in tree.get("stmts", ()):
        start = item.get("stmt_location", 0)
        length = item.get("stmt_len", 0)
        end = start + length if length else len(data)
        kind, node = next(iter(item["stmt"].items()))
        rows = kind in _ROWS_ALWAYS
        if kind == "SelectStmt":
            rows = "intoClause" not in node
        elif kind in ("InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt"):
            rows = bool(node.get("returningList") or node.get("returningClause"))
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


def _rows(cur: psycopg.Cursor[Any], records: Sequence[Sequence[Any]]) -> list[ResultSetRow]:
    names = [c.name for c in cur.description or ()]
    return [dict(zip(names, json_value(list(r)), strict=True)) for r in records]


def run_statements(
    conn: psycopg.Connection[Any], found: Sequence[Statement], watchdog: Watchdog
) -> tuple[list[ResultSetRow], int]:
    """Rows of the last statement that returned rows (else []) and the last row count."""
    cap = watchdog.limits.rows
    rows: list[ResultSetRow] = []
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

    def query(self, text: str) -> list[ResultSetRow]:
        cap = self.watchdog.limits.rows
        with self.watchdog.limit(self.conn):
            got = self.conn.execute(
                f"SELECT * FROM public.{GATE_QUERY}(%s::text, %s::text, %s::int)".encode(),
                [self.token, text.rstrip().rstrip(";"), cap + 1],
            ).fetchall()
        if len(got) > cap:
            raise RowCapExceeded(cap)
        return [row[0] if isinstance(row[0], dict) else {"value": row[0]} for row in got]

    def run(self, sql: str, params: Parameters) -> list[ResultSetRow]:
        """Every statement of a block; the rows of the last when it returns rows."""
        found = statements(render(self.conn, sql, params))
        rows: list[ResultSetRow] = []
        for number, statement in enumerate(found, 1):
            if statement.returns_rows and number == len(found):
                rows = self.query(statement.text)
            else:
                self.execute(statement.text)
        return rows

    def result_table(self, rows: list[ResultSetRow]) -> None:
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
            try:  # (DISCARD ALL cannot share a round trip; what outlives a rollback is these)
                psycopg.ClientCursor(conn).execute(
                    "ROLLBACK; SELECT pg_advisory_unlock_all(); DEALLOCATE ALL; CLOSE ALL"
                )
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


def batch(
    conn: psycopg.Connection[Any], watchdog: Watchdog, parts: Sequence[str]
) -> list[list[Any]]:
    """Our own statements (literals already in), in one round trip under the deadline: the
    rows of each, in order ([] for a statement without rows)."""
    cur = psycopg.ClientCursor(conn)
    results: list[list[Any]] = []
    with watchdog.limit(conn):
        cur.execute(";\n".join(parts).encode())
        while True:
            results.append(cur.fetchall() if cur.description is not None else [])
            if not cur.nextset():
                break
    return results


class Calls:
    """A scenario block as calls of the gate, ready for a batch: the block's last statement,
    when it returns rows, through the query gate (its rows are the block's result)."""

    def __init__(self, conn: psycopg.Connection[Any], token: str, cap: int) -> None:
        self.mogrify = psycopg.ClientCursor(conn).mogrify
        self.conn, self.token, self.cap = conn, token, cap

    def execute(self, text: str) -> str:
        return self.mogrify(f"SELECT public.{GATE_EXEC}(%s::text, %s::text)", [self.token, text])

    def query(self, text: str) -> str:
        return self.mogrify(
            f"SELECT * FROM public.{GATE_QUERY}(%s::text, %s::text, %s::int)",
            [self.token, text.rstrip().rstrip(";"), self.cap + 1],
        )

    def block(self, sql: str, params: Parameters) -> list[str]:
        found = statements(render(self.conn, sql, params))
        return [
            self.query(st.text) if st.returns_rows and n == len(found) else self.execute(st.text)
            for n, st in enumerate(found, 1)
        ]

    def result_table(self, rows: list[ResultSetRow]) -> str:
        literal = self.mogrify("%s", [dumps(rows)])
        return self.execute(
            "CREATE TEMP TABLE result AS SELECT (x.o - 1)::int AS n, x.v AS row "
            f"FROM jsonb_array_elements({literal}::jsonb) WITH ORDINALITY AS x(v, o)"
        )


def _is_query(call: str) -> bool:
    return call.startswith(f"SELECT * FROM public.{GATE_QUERY}(")


def _gated_rows(rows: list[Any], cap: int) -> list[ResultSetRow]:
    if len(rows) > cap:
        raise RowCapExceeded(cap)
    return [row[0] if isinstance(row[0], dict) else {"value": row[0]} for row in rows]


def run_case(
    session: CaseSession, code: str, scenario: Scenario, index: int, case_id: str = ""
) -> Execution:
    """One parameter set in four round trips and one per statement of the case: begin (with
    `# Setup`, a mark of the transaction and session, a savepoint); the case's statements;
    the check (the mark again, `result`, `# Verify`, `# Property`); the rollback."""
    params = scenario.parameters[index]
    out = Execution(index)
    watchdog = session.watchdog
    cap = watchdog.limits.rows
    try:
        conn = session.conn
        found = case_statements(render(conn, code, params))
        run = scenario.run_for(case_id)
        run_found = case_statements(render(conn, run, params)) if run else []
        calls = Calls(conn, session.db.token, cap)
        setup = calls.block(scenario.setup, params) if scenario.setup else []
        verify = calls.block(scenario.verify, params) if scenario.verify else []
        prop = calls.block(scenario.property_sql, params) if scenario.property_sql else []
    except CodeError as exc:
        out.error = f"the case's SQL {exc}"
        return out
    except psycopg.Error as exc:
        out.error = f"cannot connect as the case role: {_error(exc)}"
        return out
    try:
        try:
            begun = batch(conn, watchdog, ["BEGIN", *setup, _SETTINGS, "SAVEPOINT verify_case"])
        except psycopg.Error as exc:
            out.error = f"in the scenario's own SQL (# Setup): {_error(exc)}"
            return out
        mark = begun[-2][0]
        try:
            out.rows, out.affected = run_statements(conn, found, watchdog)
            if run_found:
                out.rows, out.affected = run_statements(conn, run_found, watchdog)
        except psycopg.Error as exc:
            if not refused(exc, scenario):
                out.error = _error(exc)
                return out
            out.refused, out.rows, out.affected = True, [], 0
        if len(out.rows) > cap:
            raise RowCapExceeded(cap)
        undo = ["ROLLBACK TO SAVEPOINT verify_case"] if out.refused else []
        check = [*undo, _SETTINGS]
        check += [calls.result_table(out.rows)] if prop else []
        try:
            got = batch(conn, watchdog, [*check, *verify, *prop])
        except psycopg.Error as exc:
            if undo and exc.sqlstate == "3B001":  # no such savepoint: the transaction ended
                session.dirty = True
                out.error = "the case ended verify's transaction (its savepoint is gone)"
            else:
                out.error = f"in the scenario's own SQL: {_error(exc)}"
            return out
        now = got[len(undo)][0]
        if now[0] != mark[0] or now[1] != mark[1]:
            session.dirty = now[0] != mark[0]
            what = "ended verify's transaction" if session.dirty else "changed a session setting"
            out.error = f"the case {what}: case code may not control the transaction or session"
            return out
        # what the original's rule compares: a write's row count, a read's rows
        out.compared = {"affected": out.affected} if MODIFIES.search(code) else out.rows
        if verify:
            last = got[len(check) + len(verify) - 1]
            out.compared = _gated_rows(last, cap) if _is_query(verify[-1]) else []
        if prop:
            out.violations = _gated_rows(got[-1], cap) if _is_query(prop[-1]) else []
    except (DeadlineExceeded, RowCapExceeded) as exc:
        out.error = out.error or str(exc)
    finally:
        session.reset()
    return out
