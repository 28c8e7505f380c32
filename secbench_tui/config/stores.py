"""The settings of the results store and of workers sharing a run through it (issue 36),
declared once here and used as field types by the settings models (`config.models`).

`--db` is a SQLite file or a PostgreSQL URL (`core.store.location`); `--migrate-db` copies
one store into another; `--worker`, `--lease`, `--rate` and `--shared-concurrency` make a
run one of many processes sharing it through PostgreSQL (docs/team.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator, Field

from secbench_tui.config.flags import MODE, Flag
from secbench_tui.core.run.sharing import LEASE
from secbench_tui.core.store.location import PostgresUrl, StoreLocation, read_location

DEFAULT_DB = Path("results.db")
__all__ = ["DEFAULT_DB", "LEASE"]

Db = Annotated[
    StoreLocation,
    BeforeValidator(read_location),
    Flag(
        "results database: a SQLite file, or postgresql://... for one a team shares",
        env="SECBENCH_DB",
        parse=read_location,
        metavar="PATH|URL",
    ),
]
MigrateDb = Annotated[
    list[StoreLocation] | None,
    BeforeValidator(lambda v: [read_location(x) for x in v] if v else v),
    Flag(
        "copy every result of one store into another (a SQLite file or postgresql://...,"
        " made when missing), keeping what is there, and exit",
        group=MODE,
        parse=read_location,
        nargs=2,
        metavar="STORE",
    ),
]
Worker = Annotated[
    bool,
    Flag(
        "be one of any number of workers sharing the run through --db postgresql://...:"
        " the first queues its cases, every one claims and asks them"
    ),
]
Lease = Annotated[
    float,
    Flag(
        "with --worker: seconds a worker's claim on its cases lasts without a heartbeat;"
        " the cases of a worker that died go to the others after it",
        metavar="S",
    ),
    Field(ge=1, le=3600),
]
Rate = Annotated[
    float | None,
    Flag(
        "with --worker: requests per second the model's workers send together (the"
        " key's limit), kept in the database; a rate limit halves it",
        metavar="N",
        default="none until the provider's first rate limit",
    ),
    Field(gt=0, le=10_000),
]
SharedConcurrency = Annotated[
    int | None,
    Flag(
        "with --worker: requests in flight the model's workers have together, kept in the"
        " database; each worker takes its share (never more than its --concurrency)",
        metavar="N",
        default="each worker's --concurrency alone",
    ),
    Field(ge=1, le=4096),
]


def workers_share_postgres(worker: bool, db: StoreLocation) -> None:
    """`--worker` needs a store many processes can share: a PostgreSQL one."""
    if worker and not isinstance(db, PostgresUrl):
        raise ValueError(
            "--worker: workers share a run through a PostgreSQL database; give --db "
            "postgresql://... (or SECBENCH_DB), the same for every worker"
        )
