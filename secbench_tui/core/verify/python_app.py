"""Run a Python app's route handlers (FastAPI + SQLAlchemy) against PostgreSQL.

This runs in the child process (`python_child`), never in the tool's own. The suite's harness
(`verify/app.py`) maps the SPEC's models onto the fixture tables and provides the names a
handler uses (`get_db`, `get_current_user`, models, schemas...) through `namespace(state)`.
Each parameter set is one HTTP request (Starlette's `TestClient`, within the child), as the
user `as_user`, on a connection of the unprivileged case role, inside a transaction that is
rolled back: the handler's own commits become savepoints. The property, run by the checker
through the gate, then sees the database as the handler left it and three tables: `result`
(the JSON body, one row per element of a list), `response` (status, body, location, headers)
and `files` (files written under the request's folder, by path).
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
import traceback
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg

from secbench_tui.core.verify.calls import (
    RowCapExceeded,
    SequencePosition,
    row_inserts,
    sequence_resets,
)
from secbench_tui.core.verify.data import Scenario
from secbench_tui.core.verify.deadline import Watchdog
from secbench_tui.core.verify.execution import (
    ROWS_NOT_INSERTED,
    Execution,
    Parameters,
    ResultSetRow,
    dumps,
    json_value,
)
from secbench_tui.core.verify.sql import Checker, CodeError


@dataclass
class RequestState:
    """What the harness's dependencies hand to a handler for one request."""

    session: Any  # the request's SQLAlchemy Session
    user_id: int | None
    params: Parameters
    sandbox: Path
    upload_root: Path


def load_harness(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"secbench_verify_{abs(hash(path))}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "namespace", None)):
        raise ImportError(f"{path}: defines no namespace(state) function")
    return module


def _body_rows(body: Any) -> list[ResultSetRow]:
    if body is None:
        return []
    items = body if isinstance(body, list) else [body]
    return [i if isinstance(i, dict) else {"value": i} for i in items]


def _files(sandbox: Path) -> list[tuple[str, int]]:
    return [
        (p.relative_to(sandbox).as_posix(), p.stat().st_size)
        for p in sorted(sandbox.rglob("*"))
        if p.is_file()
    ]


def _mapping(value: object) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ValueError(f"scenario `files` must map field names to uploads, got {value!r}")
    return {str(k): v for k, v in value.items()}


def _upload(name: str, spec: object) -> tuple[str, bytes, str]:
    """A scenario's upload `[file name, text, content type]` as the test client takes it."""
    if not isinstance(spec, list | tuple) or len(spec) != 3:
        raise ValueError(f"scenario file {name!r} must be [file name, text, content type]")
    return str(spec[0]), str(spec[1]).encode(), str(spec[2])


def _request(client: Any, params: Parameters) -> Any:
    files = None
    if params.get("files"):
        files = {name: _upload(name, spec) for name, spec in _mapping(params["files"]).items()}
    return client.request(
        params.get("method", "GET"),
        params["path"],
        json=params.get("json"),
        params=params.get("query"),
        data=params.get("form"),
        files=files,
        headers=params.get("headers"),
        follow_redirects=False,
    )


# made by the checker through the gate, from the response bound as $1 (jsonb)
RESPONSE_TABLE = (
    "CREATE TEMP TABLE response AS SELECT ($1->>'status')::int AS status, $1->'body' AS body, "
    "$1->>'location' AS location, $1->'headers' AS headers"
)
FILES_TABLE = (
    "CREATE TEMP TABLE files AS SELECT x.path, x.size FROM "
    "jsonb_to_recordset($1) AS x(path text, size bigint)"
)


def _record(checker: Checker, out: Execution, response: Any, sandbox: Path) -> None:
    """The tables the property reads, made by the checker: result, response and files."""
    try:
        body = response.json()
    except ValueError:
        body = response.text or None
    out.rows = _body_rows(json_value(body)) if 200 <= response.status_code < 300 else []
    cap = checker.watchdog.limits.rows
    if len(out.rows) > cap:
        raise RowCapExceeded(cap)
    checker.result_table(out.rows)
    said = {
        "status": response.status_code,
        "body": body,
        "location": response.headers.get("location"),
        "headers": dict(response.headers),
    }
    checker.execute(RESPONSE_TABLE, dumps(said))
    files = [{"path": path, "size": size} for path, size in _files(sandbox)]
    checker.execute(FILES_TABLE, dumps(files))


def _where(exc: BaseException) -> str:
    """The innermost line of the case's own code in the traceback, else the innermost line."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f.filename.startswith("<case")]
    frame = (ours or frames)[-1] if frames else None
    return f" (line {frame.lineno} of {frame.filename})" if frame else ""


class HandlerApp:
    """One case's handler mounted in a FastAPI app, built once and called once per parameter
    set; `state` is what the harness's dependencies read, swapped before each request."""

    def __init__(self, harness: ModuleType, code: str, name: str) -> None:
        from fastapi import APIRouter, FastAPI

        with warnings.catch_warnings():  # Starlette suggests another HTTP client; httpx works
            warnings.simplefilter("ignore")
            from fastapi.testclient import TestClient

        self._folder = tempfile.TemporaryDirectory(prefix="secbench-verify-app-")
        self.sandbox = Path(self._folder.name)
        self.state = RequestState(
            None, None, {}, self.sandbox, self.sandbox / "srv" / "app" / "data" / "uploads"
        )
        self.error: str | None = None
        self.client: Any = None
        try:
            namespace = dict(harness.namespace(self.state))
            namespace["router"] = router = APIRouter()
            exec(compile(code, f"<case {name}>", "exec"), namespace)
            app = FastAPI()
            app.include_router(router)
            self.client = TestClient(app, raise_server_exceptions=True).__enter__()
        except Exception as exc:  # the case's code does not even load: data, not a crash
            self.error = f"the handler does not load: {type(exc).__name__}: {exc}{_where(exc)}"

    def fresh_sandbox(self) -> None:
        for child in self.sandbox.iterdir():
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()
        self.state.upload_root.mkdir(parents=True)

    def close(self) -> None:
        if self.client is not None:
            self.client.__exit__(None, None, None)
        self._folder.cleanup()


def run_case(
    engine: Any,
    handler: HandlerApp,
    scenario: Scenario,
    index: int,
    token: str,
    watchdog: Watchdog,
    sequences: Sequence[SequencePosition] = (),
) -> Execution:
    """One parameter set: the sequences where the fixtures left them (and no `currval` of an
    earlier set), `# Setup`, the request, the tables the property reads, the property."""
    from sqlalchemy.orm import Session

    params = scenario.parameters[index]
    out = Execution(index)
    if handler.error is not None:
        out.error = handler.error
        return out
    handler.fresh_sandbox()
    with engine.connect() as conn:
        trans = conn.begin()
        raw = conn.connection.driver_connection
        session = Session(bind=conn, join_transaction_mode="create_savepoint")
        checker = Checker(raw, token, watchdog)
        try:
            with watchdog.limit(raw):
                for call in sequence_resets(sequences):
                    raw.execute(*call)
            if scenario.rows:  # an exploit's rows, as the case role, before `# Setup`
                try:
                    with watchdog.limit(raw):
                        for call in row_inserts(scenario.rows):
                            raw.execute(*call)
                except psycopg.Error as exc:
                    out.error = f"{ROWS_NOT_INSERTED}: {exc.sqlstate}: {exc.diag.message_primary}"
                    return out
            if scenario.setup:
                checker.run(scenario.setup, params)
            user = params.get("as_user")
            handler.state.session = session
            handler.state.user_id = int(user) if isinstance(user, int | str | float) else None
            handler.state.params = params
            response = _request(handler.client, params)
            session.flush()
            out.status = response.status_code
            out.refused = response.status_code >= 400
            out.affected = 1 if 200 <= response.status_code < 400 else 0
            _record(checker, out, response, handler.sandbox)
            out.compared = {"status": out.status, "rows": out.rows}
            if scenario.verify:
                out.compared = checker.run(scenario.verify, params)
            if scenario.property_sql:
                out.violations = checker.run(scenario.property_sql, params)
        except psycopg.Error as exc:
            out.error = f"in the scenario's own SQL: {exc.sqlstate}: {exc.diag.message_primary}"
        except (CodeError, RowCapExceeded) as exc:
            out.error = str(exc)
        except Exception as exc:  # the handler's own failure is the case's result
            out.error = f"{type(exc).__name__}: {exc}{_where(exc)}"
        finally:
            handler.state.session = None
            session.close()
            trans.rollback()
    return out
