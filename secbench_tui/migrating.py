"""`secbench-tui --migrate-db FROM TO`: a store's results copied into another
(`core.store.transfer`), such as a SQLite file into the PostgreSQL a team shares, and back."""

from __future__ import annotations

import asyncio

from secbench_tui.core.store.connection import StoreError
from secbench_tui.core.store.location import StoreLocation
from secbench_tui.core.store.transfer import migrate_db
from secbench_tui.errors import say_error
from secbench_tui.exit_codes import EXIT_ABORTED, EXIT_OK, EXIT_USAGE
from secbench_tui.results_db import DatabaseError, check_path


def migrate_main(source: StoreLocation, target: StoreLocation) -> int:
    """0 when every result is in `target`; 2 when FROM names no store or TO cannot be one,
    3 when one cannot be used (as for every command: `results_db`)."""
    try:
        check_path(source, create=False)
        check_path(target, create=True)
    except DatabaseError as exc:
        say_error(exc)
        return exc.exit_code
    try:
        copied = asyncio.run(migrate_db(source, target))
    except StoreError as exc:
        say_error(exc)
        return EXIT_USAGE if str(exc).startswith("--migrate-db") else EXIT_ABORTED
    print(copied.text(source, target))
    return EXIT_OK
