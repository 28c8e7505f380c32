"""Run SQL cases on PostgreSQL: each parameter set in a transaction that is rolled back.

Named `:param` placeholders are bound client side (psycopg's `ClientCursor`), which keeps
untyped parameters working (`:x IS NULL`) and allows several statements, as a plpgsql case
that creates a function and a `# Run` block that calls it. A case that raises an exception on
purpose (`RAISE`, SQLSTATE P0001, or insufficient_privilege) refused the request: the
statement's effects are undone and the property is checked on the unchanged state.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from secbench_tui.core.suites.verify.data import Scenario
from secbench_tui.core.suites.verify.execution import Execution, dumps, json_value

REFUSALS = {"P0001", "42501"}
# The original security-bench's test for a statement that changes data (not SELECT ... FOR UPDATE)
MODIFIES = re.compile(r"INSERT\s+INTO|DELETE\s+FROM|^\s*UPDATE\s+\w+", re.I | re.M)
_PLACEHOLDER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
STATEMENT_TIMEOUT_MS = 10_000


def bind(sql: str, params: dict[str, Any]) -> str:
    """`:name` -> `%(name)s` for the names in `params`; every other `%` doubled."""
    escaped = sql.replace("%", "%%")
    return _PLACEHOLDER.sub(
        lambda m: f"%({m.group(1)})s" if m.group(1) in params else m.group(0), escaped
    )


def _values(params: dict[str, Any]) -> dict[str, Any]:
    return {k: Jsonb(v) if isinstance(v, dict) else v for k, v in params.items()}


def execute_sql(
    cur: psycopg.ClientCursor[Any], sql: str, params: dict[str, Any]
) -> tuple[list[dict[str, Any]], int]:
    """Rows of the last statement that returned rows (else []) and the last row count."""
    cur.execute(bind(sql, params).encode(), _values(params))
    rows: list[dict[str, Any]] = []
    affected = 0
    while True:
        if cur.description is not None:
            names = [c.name for c in cur.description]
            rows = [dict(zip(names, json_value(list(r)), strict=True)) for r in cur.fetchall()]
        affected = max(cur.rowcount, 0)
        if not cur.nextset():
            break
    return rows, affected


def load_fixtures(conn: psycopg.Connection[Any], sql: str) -> None:
    with conn.cursor() as cur:
        cur.execute(sql.encode())
    conn.commit()


def _error(exc: psycopg.Error) -> str:
    diag = exc.diag.message_primary or str(exc)
    return f"{exc.sqlstate or 'error'}: {diag}".strip()


def create_result_table(cur: psycopg.ClientCursor[Any], rows: list[dict[str, Any]]) -> None:
    cur.execute("CREATE TEMP TABLE result (n int, row jsonb)")
    for n, row in enumerate(rows):
        cur.execute("INSERT INTO result VALUES (%s, %s::jsonb)", (n, dumps(row)))


def run_case(
    conn: psycopg.Connection[Any], code: str, scenario: Scenario, index: int, case_id: str = ""
) -> Execution:
    params = scenario.parameters[index]
    out = Execution(index)
    cur = psycopg.ClientCursor(conn)
    try:
        cur.execute(f"SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}")
        if scenario.setup:
            execute_sql(cur, scenario.setup, params)
        cur.execute("SAVEPOINT verify_case")
        try:
            out.rows, out.affected = execute_sql(cur, code, params)
            run = scenario.run_for(case_id)
            if run:
                out.rows, out.affected = execute_sql(cur, run, params)
        except psycopg.Error as exc:
            if exc.sqlstate not in REFUSALS and exc.sqlstate not in scenario.refusals:
                out.error = _error(exc)
                return out
            cur.execute("ROLLBACK TO SAVEPOINT verify_case")
            out.refused, out.rows, out.affected = True, [], 0
        # what the original's rule compares: a write's row count, a read's rows
        out.compared = {"affected": out.affected} if MODIFIES.search(code) else out.rows
        if scenario.verify:
            out.compared, _ = execute_sql(cur, scenario.verify, params)
        if scenario.property_sql:
            create_result_table(cur, out.rows)
            out.violations, _ = execute_sql(cur, scenario.property_sql, params)
    except psycopg.Error as exc:
        out.error = out.error or f"in the scenario's own SQL: {_error(exc)}"
    finally:
        cur.close()
        conn.rollback()
    return out
