"""The PostgreSQL a verification runs on: the embedded one of the `pgserver` package, or the
server of `--pg-url`. Each app gets a database of its own, dropped afterwards."""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from secbench_tui.core.suites.verify import extra


class ServerError(Exception):
    """No PostgreSQL to verify on; the message says how to get one."""


@contextmanager
def postgres(pg_url: str | None) -> Iterator[tuple[str, str]]:
    """(connection URI, description such as 'PostgreSQL 16.2 (pgserver)')."""
    if pg_url:
        yield pg_url, f"{_version(pg_url)} (--pg-url)"
        return
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError:
        raise ServerError(
            f"--verify needs PostgreSQL: install the verify extra ({extra.HINT})"
            " or give --pg-url postgresql://..."
        ) from None
    with tempfile.TemporaryDirectory(prefix="secbench-verify-") as tmp:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                server: Any = getattr(pgserver, "get_server")(tmp, cleanup_mode="delete")  # noqa: B009
        except Exception as exc:
            raise ServerError(f"the embedded PostgreSQL (pgserver) did not start: {exc}") from exc
        try:
            uri = str(server.get_uri())
            yield uri, f"{_version(uri)} (pgserver)"
        finally:
            server.cleanup()


def _version(uri: str) -> str:
    try:
        with psycopg.connect(uri, connect_timeout=10) as conn:
            row = conn.execute("SHOW server_version").fetchone()
    except psycopg.Error as exc:
        raise ServerError(f"cannot connect to PostgreSQL: {exc}") from exc
    return f"PostgreSQL {row[0] if row else '?'}"


@contextmanager
def app_database(uri: str, name: str) -> Iterator[str]:
    """A fresh database for one app, dropped on exit; yields its conninfo."""
    db = f"secbench_verify_{name}".replace("-", "_")
    with psycopg.connect(uri, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{db}"')
        admin.execute(f'CREATE DATABASE "{db}"')
    try:
        yield make_conninfo(uri, dbname=db)
    finally:
        with psycopg.connect(uri, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
