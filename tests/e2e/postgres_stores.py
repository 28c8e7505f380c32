"""Fresh PostgreSQL databases for the store's tests, on the one server of the test process.

`fresh_database(pg_url)` makes a new, empty database on the server the `pg_url` fixture
started (tests/conftest.py) and gives its URL, to pass as `--db`; the commands make the
store's tables themselves, as they would on a team's server.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit, urlunsplit

import psycopg


def fresh_database(pg_url: str) -> str:
    name = f"store_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(pg_url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def query(url: str, sql: str, *params: object) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return list(conn.execute(sql, params).fetchall())
