"""The results database (`--db`) as every command opens it, and what each mistake exits with.

A run (headless or in the app) opens it, creating it when it is missing; `--report`,
`--export`, `--rescore` and `--dry-run` read one that already holds results. All of them come
through `open_results`, so one mistake is said in the same words and exits with the same code
whichever command met it:

- a path that cannot be the database: a folder, a file in a folder that does not exist, or,
  for a command that reads, no file at all: 2, the usage error it is;
- `--runs` naming a run the file does not hold: 2, naming the runs it holds;
- a file that cannot be used (not a secbench-tui database, damaged, locked by another
  process, written by a newer version): 3, as for a run that could not start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from secbench_tui.core.results.report.selection import unknown_runs
from secbench_tui.core.store.connection import StoreError
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.integrity import DamagedError, check_intact
from secbench_tui.core.store.location import StoreLocation
from secbench_tui.exit_codes import EXIT_ABORTED, EXIT_USAGE

NO_RESULTS_FIX = (
    "run an evaluation first (e.g. secbench-tui --model baseline/random --no-ui) or point "
    "--db at a results file"
)


class DatabaseError(StoreError):
    """`--db` cannot serve this command: the message names the file and the fix, and
    `exit_code` is what every command exits with for it."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


async def open_results(
    db: StoreLocation,
    *,
    create: bool,
    runs: Sequence[int] = (),
    on_notice: Callable[[str], None] | None = None,
) -> Store:
    """The database at `db`, opened (and migrated); with `create`, made when it is missing
    (a run's), else it must exist (a command that reads results). Each of `runs` must be a
    run it holds. `on_notice` hears what the user must know on opening (where the copy of an
    original evaluator's file went); by default it is said on stderr. Raises `DatabaseError`."""
    check_path(db, create=create)
    if not create and isinstance(db, Path):  # a file read through: damage is said before
        try:  # it is opened (the open may write: a journal switch, a migration)
            await check_intact(db)
        except DamagedError as exc:
            raise DatabaseError(str(exc), EXIT_ABORTED) from None
    try:
        store = await (Store.open(db) if on_notice is None else Store.open(db, on_notice))
    except StoreError as exc:
        raise DatabaseError(str(exc), EXIT_ABORTED) from exc
    try:
        unknown = unknown_runs(runs, [r.id for r in await store.runs()], db) if runs else None
    except BaseException:
        await store.close()
        raise
    if unknown:
        await store.close()
        raise DatabaseError(unknown, EXIT_USAGE)
    return store


def check_path(db: StoreLocation, *, create: bool) -> None:
    """Refuse a `--db` that cannot be the database before anything is opened or made (a
    PostgreSQL database is the server's to refuse, on opening)."""
    if not isinstance(db, Path):
        return
    if db.is_dir():
        raise DatabaseError(
            f"--db {db}: is a folder; give the path of a file in it, e.g. {db / 'results.db'}",
            EXIT_USAGE,
        )
    if not create and not db.is_file():
        raise DatabaseError(f"--db {db}: no such database; {NO_RESULTS_FIX}", EXIT_USAGE)
    if create and not db.parent.is_dir():
        raise DatabaseError(
            f"--db {db}: folder {db.parent} does not exist; create it or pick another path",
            EXIT_USAGE,
        )


def holds_results(db: StoreLocation) -> bool:
    """Whether there may be results to read: a SQLite file that exists, or any PostgreSQL
    database (opening one makes its tables, empty, when it has none)."""
    return db.exists() if isinstance(db, Path) else True
