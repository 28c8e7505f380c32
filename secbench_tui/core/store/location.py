"""Where a store lives: a SQLite file, or a PostgreSQL database a team shares (`--db`).

`--db` (and `SECBENCH_DB`) takes either: a path is a SQLite file, as it always was; a
`postgresql://` (or `postgres://`) URL is a PostgreSQL database, for a team's results in one
place and for workers on one queue (`--worker`). A `PostgresUrl` keeps the URL whole for
connecting and shows it without its secrets (`str()`), so no message, report or log line
prints a password.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from secbench_tui.core.untrusted import redact_url

SCHEMES = ("postgresql://", "postgres://")


@dataclass(frozen=True)
class PostgresUrl:
    """A PostgreSQL database given as a URL. `url` is what psycopg connects with (secrets
    included); `str()` is what is shown."""

    url: str = field(repr=False)

    def __str__(self) -> str:
        return redact_url(self.url)

    def __repr__(self) -> str:
        return f"PostgresUrl({str(self)!r})"


StoreLocation = Path | PostgresUrl


def is_postgres_url(text: str) -> bool:
    return text.strip().lower().startswith(SCHEMES)


def read_location(value: object) -> StoreLocation:
    """`--db`'s text as a location: a PostgreSQL URL, else the path of a SQLite file."""
    if isinstance(value, Path | PostgresUrl):
        return value
    if not isinstance(value, str):
        raise ValueError("give the path of a SQLite file or a postgresql:// URL")
    if is_postgres_url(value):
        return PostgresUrl(value.strip())
    if not value:
        raise ValueError("give the path of a SQLite file or a postgresql:// URL")
    return Path(value)
