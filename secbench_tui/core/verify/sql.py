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
checker, through the gate (see `sandbox`); every statement of verify's own in the case's
session is one of `calls`, which nothing of the case can reach into.
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

from secbench_tui.core.verify.calls import (
    BACK_TO_SAVEPOINT,
    BEGIN,
    DISCARD,
    ROLLBACK,
    SAVEPOINT,
    Call,
    Calls,
    Mark,
    RowCapExceeded,
    batch,
    gated_rows,
    is_query,
    pipeline,
    row_inserts,
    sequence_resets,
)
from secbench_tui.core.verify.data import Scenario
from secbench_tui.core.verify.deadline import DeadlineExceeded, Watchdog
from secbench_tui.core.verify.execution import (
    ROWS_NOT_INSERTED,
    Execution,
    Parameters,
    ResultSetRow,
    json_value,
)
from secbench_tui.core.verify.sandbox import CASE_SCHEMA, AppDatabase

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


# Python reads JSON (pglast's parse tree, a jsonb value) nested up to about 1,000 levels.
TOO_DEEP = "nested too deeply for verify to read (about 1,000 levels at most)"


class CodeError(Exception):
    """Suite SQL that cannot run in the sandbox; the message says why."""


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
    except RecursionError:
        raise CodeError(f"is {TOO_DEEP}") from None
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
    """The fixtures, statement by statement, as the checker; then the gate, and where the
    fixtures left each sequence (every parameter set starts from there)."""
    with psycopg.connect(
        db.checker_conninfo, autocommit=True, prepare_threshold=None, connect_timeout=10
    ) as conn:
        conn.execute("BEGIN")
        found = statements(text)
        for statement in found:
            with db.watchdog.limit(conn):
                conn.execute(statement.text.encode())
        if conn.info.transaction_status != pq.TransactionStatus.IDLE:
            conn.execute("COMMIT")
        with db.watchdog.limit(conn):
            definers = conn.execute(DEFINERS).fetchall()
        unpinned = [str(name) for name, config in definers if not _pinned(config)]
        if unpinned:
            raise CodeError(
                f"it defines SECURITY DEFINER {', '.join(unpinned)} without "
                f"`SET search_path = public, pg_temp`: a case calling it could put a temporary "
                f"view of its own in place of a table it reads and run code as the checker; "
                f"add that clause to each"
            )
        db.install_gate(conn)
        with db.watchdog.limit(conn):
            rows = conn.execute(SEQUENCES).fetchall()
    db.sequences = [(int(oid), int(value), bool(called)) for oid, value, called in rows]


# The fixtures' SECURITY DEFINER functions (they run as the checker) and their settings.
DEFINERS = """
SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text, p.proconfig
FROM pg_catalog.pg_proc p
WHERE p.prosecdef AND p.proowner OPERATOR(pg_catalog.=) (
  SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) current_user)
ORDER BY 1
"""


def _pinned(config: list[str] | None) -> bool:
    """Is a SECURITY DEFINER function's `search_path` pinned with `pg_temp` last? Unpinned, or
    with `pg_temp` left implicit (then searched first for relations), a case's temporary view
    named like a table it reads runs the case's code as the function's owner, the checker."""
    for item in config or ():
        name, _, value = item.partition("=")
        if name == "search_path":
            path = [part.strip().strip('"') for part in value.split(",")]
            return path[-1] == "pg_temp" and CASE_SCHEMA not in path
    return False


# The fixtures' sequences: oid, value, is_called (in the checker's own session, just made).
SEQUENCES = """
SELECT c.oid, coalesce(pg_catalog.pg_sequence_last_value(c.oid), s.seqstart),
       pg_catalog.pg_sequence_last_value(c.oid) IS NOT NULL
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_sequence s ON s.seqrelid = c.oid
WHERE c.relnamespace = 'public'::pg_catalog.regnamespace ORDER BY c.oid
"""


class Checker:
    """Runs the scenario's own SQL as the checker role, on the case's connection and in its
    transaction, through the gate, one statement at a time (in a Python app's child)."""

    def __init__(self, conn: psycopg.Connection[Any], token: str, watchdog: Watchdog):
        self.conn, self.watchdog = conn, watchdog
        self.calls = Calls(token, watchdog.limits.rows)

    def _send(self, call: Call) -> list[Any]:
        with self.watchdog.limit(self.conn):
            cur = self.conn.execute(*call)
            return cur.fetchall() if cur.description is not None else []

    def execute(self, text: str, args: str | None = None) -> None:
        """A statement of the checker's; `args` (JSON text) is its `$1`, as jsonb."""
        self._send(self.calls.execute(text, args))

    def query(self, text: str) -> list[ResultSetRow]:
        return gated_rows(self._send(self.calls.query(text)), self.watchdog.limits.rows)

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
        self._send(self.calls.result_table(rows))


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
                self.db.case_conninfo, autocommit=True, prepare_threshold=None, connect_timeout=10
            )
        return self._conn

    def reset(self) -> None:
        """After each execution: undo the transaction, then everything the session holds."""
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            self._conn = None
        else:
            try:  # (DISCARD ALL may not share a transaction: each is synced on its own)
                with self.watchdog.limit(conn), pipeline(conn) as opened:
                    conn.execute(*ROLLBACK)
                    opened.sync()
                    conn.execute(*DISCARD)
            except (psycopg.Error, DeadlineExceeded):
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


def _blocks(
    conn: psycopg.Connection[Any], calls: Calls, sql: str | None, params: Parameters
) -> list[Call]:
    if not sql:
        return []
    return calls.block([(s.text, s.returns_rows) for s in statements(render(conn, sql, params))])


def run_case(
    session: CaseSession, code: str, scenario: Scenario, index: int, case_id: str = ""
) -> Execution:
    """One parameter set in three round trips and one per statement of the case: begin (the
    sequences reset, `# Setup`, a mark of the transaction and session, a savepoint); the
    case's statements; the check (the mark again, `result`, `# Verify`, `# Property`); then
    the rollback and the session's reset. An exploit's rows (`scenario.rows`) go in after
    the sequences' reset and before `# Setup`, in a round trip of their own."""
    params = scenario.parameters[index]
    out = Execution(index)
    watchdog = session.watchdog
    cap = watchdog.limits.rows
    try:
        conn = session.conn
        found = case_statements(render(conn, code, params))
        run = scenario.run_for(case_id)
        run_found = case_statements(render(conn, run, params)) if run else []
        calls = Calls(session.db.token, cap)
        setup = _blocks(conn, calls, scenario.setup, params)
        verify = _blocks(conn, calls, scenario.verify, params)
        prop = _blocks(conn, calls, scenario.property_sql, params)
    except CodeError as exc:
        out.error = f"the case's SQL {exc}"
        return out
    except psycopg.Error as exc:
        out.error = f"cannot connect as the case role: {_error(exc)}"
        return out
    try:
        begin = [BEGIN, *sequence_resets(session.db.sequences)]
        if scenario.rows:  # an exploit's rows, as the case role, before `# Setup`
            try:
                batch(conn, watchdog, [*begin, *row_inserts(scenario.rows)])
            except psycopg.Error as exc:
                out.error = f"{ROWS_NOT_INSERTED}: {_error(exc)}"
                return out
            begin = []
        begin += [*setup, *Mark.calls(), SAVEPOINT]
        try:
            begun = batch(conn, watchdog, begin)
        except psycopg.Error as exc:
            out.error = f"in the scenario's own SQL (# Setup): {_error(exc)}"
            return out
        mark = Mark.read(begun[-3], begun[-2])
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
        undo = [BACK_TO_SAVEPOINT] if out.refused else []
        check = [*undo, *Mark.calls()]
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
        now = Mark.read(got[len(undo)], got[len(undo) + 1])
        if now != mark:
            session.dirty = now.xact != mark.xact
            what = "ended verify's transaction" if session.dirty else "changed a session setting"
            changed = [name for name, _ in sorted(set(now.settings) - set(mark.settings))]
            changed += ["role"] if now.user != mark.user else []
            named = f" ({', '.join(changed)})" if changed else ""
            out.error = (
                f"the case {what}{named}: case code may not control the transaction or session"
            )
            return out
        # what the original's rule compares: a write's row count, a read's rows
        out.compared = {"affected": out.affected} if MODIFIES.search(code) else out.rows
        if verify:
            last = got[len(check) + len(verify) - 1]
            out.compared = gated_rows(last, cap) if is_query(verify[-1]) else []
        if prop:
            out.violations = gated_rows(got[-1], cap) if is_query(prop[-1]) else []
    except (DeadlineExceeded, RowCapExceeded) as exc:
        out.error = out.error or str(exc)
    except RecursionError:  # a value it returned (a jsonb nested thousands deep)
        out.error = out.error or f"returned a value {TOO_DEEP}"
    finally:
        session.reset()
    return out
