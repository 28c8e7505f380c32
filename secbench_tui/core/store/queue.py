"""A run's cases on one queue in PostgreSQL, for any number of workers (`--worker`).

The first worker of a run creates it and puts its cases on the queue (`share_run`), under an
advisory lock on the run's fingerprint, so workers that start together make one run, not
several (`shared_run_lock`); the others find it (`open_shared_run`) and join it. Each worker
is a row of `workers` and claims cases (`claim`: `SELECT ... FOR UPDATE SKIP LOCKED`, as
PgQueuer and similar queues do, so two workers never claim the same case), with a lease that
its heartbeat (`heartbeat`) keeps renewing. A worker that dies (`kill -9`) renews nothing:
its leases run out and its cases go to whoever claims next. A case is stored with its row
of the queue marked done in one transaction (`Store.record_claimed`), so each case of a run
is stored exactly once, whoever asked it.

Times are seconds since the epoch by the database's clock, which every machine shares.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from secbench_tui.core.store.connection import StoreConnection, StoreError

NOW = "EXTRACT(EPOCH FROM clock_timestamp())"


@dataclass(frozen=True, order=True)
class Claimed:
    """A case a worker holds the lease of: its place on the queue and in the run."""

    seq: int
    case_index: int
    repeat: int


@dataclass(frozen=True)
class QueueState:
    """Where a shared run's cases are: on the queue, leased to a live worker, stored."""

    status: str  # the run's own status
    ready: int = 0  # waiting, or leased to a worker whose lease ran out
    leased: int = 0  # leased to a worker still renewing
    done: int = 0

    @property
    def total(self) -> int:
        return self.ready + self.leased + self.done

    @property
    def finished(self) -> bool:
        return self.ready == 0 and self.leased == 0


def fingerprint_key(fingerprint: str) -> int:
    """An advisory lock's key for a run's fingerprint (a hex digest): its first 60 bits."""
    return int(fingerprint[:15] or "0", 16)


class SharedQueue(StoreConnection):
    """The queue of shared runs; a PostgreSQL store's alone."""

    @property
    def _pg(self) -> Any:
        from secbench_tui.core.store.postgres import PgDatabase

        if not isinstance(self.db, PgDatabase):
            raise StoreError(
                f"--worker: --db {self.path} is a SQLite file; workers share a run through "
                "a PostgreSQL database: give --db postgresql://..."
            )
        return self.db

    async def _write(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[Any]:
        """One statement of PostgreSQL's own, committed, in this store's turn of writing."""
        async with self.transaction():
            cursor = await self._pg.execute_native(sql, params)
            return list(await cursor.fetchall())

    @contextlib.asynccontextmanager
    async def shared_run_lock(self, fingerprint: str) -> AsyncIterator[None]:
        """Held while a worker finds its run or makes it and fills its queue: workers
        that start together wait here and then find the one run."""
        key = fingerprint_key(fingerprint)
        pg = self._pg
        await pg.execute_native("SELECT pg_advisory_lock(%s)", (key,))
        try:
            yield
        finally:
            await pg.execute_native("SELECT pg_advisory_unlock(%s)", (key,))

    async def open_shared_run(self, fingerprint: str) -> int | None:
        """The shared run of this fingerprint that is still going, if there is one."""
        cursor = await self._pg.execute_native(
            "SELECT r.id FROM runs r JOIN shared_runs s ON s.run_id = r.id"
            " WHERE r.fingerprint = %s AND r.status = 'running' ORDER BY r.id DESC LIMIT 1",
            (fingerprint,),
        )
        row = await cursor.fetchone()
        return int(row[0]) if row else None

    async def share_run(
        self, run_id: int, lease_seconds: float, cases: Sequence[tuple[int, str, int]]
    ) -> None:
        """Make `run_id` a shared run and put its `cases` (index, case id, repeat) on its
        queue, in that order, in one transaction. A shared run belongs to no one process."""
        async with self.transaction():
            pg = self._pg
            await pg.begin()
            await pg.execute_native(
                "INSERT INTO shared_runs (run_id, lease_seconds, created_at)"
                f" VALUES (%s, %s, {NOW})",
                (run_id, lease_seconds),
            )
            await pg.execute_native(
                "UPDATE runs SET pid = NULL, host = NULL WHERE id = %s", (run_id,)
            )
            if cases:
                async with pg.conn.cursor() as cursor:
                    await cursor.executemany(
                        "INSERT INTO queue (run_id, seq, case_index, repeat, case_id)"
                        " VALUES (%s, %s, %s, %s, %s)",
                        [
                            (run_id, seq, index, repeat, case_id)
                            for seq, (index, case_id, repeat) in enumerate(cases)
                        ],
                    )

    async def enlist(self, run_id: int) -> int:
        """This process as a worker of `run_id`; its id, which its leases carry."""
        rows = await self._write(
            f"INSERT INTO workers (run_id, host, pid, started_at, seen_at)"
            f" VALUES (%s, %s, %s, {NOW}, {NOW}) RETURNING id",
            (run_id, socket.gethostname(), os.getpid()),
        )
        return int(rows[0][0])

    async def lease_seconds(self, run_id: int) -> float:
        cursor = await self._pg.execute_native(
            "SELECT lease_seconds FROM shared_runs WHERE run_id = %s", (run_id,)
        )
        row = await cursor.fetchone()
        return float(row[0]) if row else 60.0

    async def claim(self, run_id: int, worker_id: int, count: int) -> list[Claimed]:
        """Lease up to `count` cases of the run that nobody holds (never leased, or whose
        lease ran out), first in queue order; none once the run is not running."""
        rows = await self._write(
            f"WITH now AS (SELECT {NOW} AS t),"
            " picked AS (SELECT q.seq FROM queue q WHERE q.run_id = %(run)s"
            " AND (q.state = 'ready'"
            " OR (q.state = 'leased' AND q.lease_until < (SELECT t FROM now)))"
            " AND EXISTS (SELECT 1 FROM runs WHERE id = %(run)s AND status = 'running')"
            " ORDER BY q.seq LIMIT %(n)s FOR UPDATE SKIP LOCKED)"
            " UPDATE queue q SET state = 'leased', worker_id = %(worker)s, claims = q.claims + 1,"
            " lease_until = (SELECT t FROM now)"
            " + (SELECT lease_seconds FROM shared_runs WHERE run_id = %(run)s)"
            " FROM picked WHERE q.run_id = %(run)s AND q.seq = picked.seq"
            " RETURNING q.seq, q.case_index, q.repeat",
            {"run": run_id, "worker": worker_id, "n": count},
        )
        return sorted(Claimed(int(r[0]), int(r[1]), int(r[2])) for r in rows)

    async def heartbeat(self, run_id: int, worker_id: int) -> None:
        """The worker is alive: its leases last another lease from now."""
        async with self.transaction():
            pg = self._pg
            await pg.begin()
            await pg.execute_native(
                f"UPDATE workers SET seen_at = {NOW} WHERE id = %s", (worker_id,)
            )
            await pg.execute_native(
                f"UPDATE queue SET lease_until = {NOW} + (SELECT lease_seconds FROM shared_runs"
                " WHERE run_id = %s) WHERE worker_id = %s AND state = 'leased'",
                (run_id, worker_id),
            )

    async def release(self, worker_id: int) -> None:
        """The worker leaves: the cases it holds go back on the queue at once."""
        async with self.transaction():
            pg = self._pg
            await pg.begin()
            await pg.execute_native(
                "UPDATE queue SET state = 'ready', worker_id = NULL, lease_until = NULL"
                " WHERE worker_id = %s AND state = 'leased'",
                (worker_id,),
            )
            await pg.execute_native(
                f"UPDATE workers SET ended_at = {NOW} WHERE id = %s", (worker_id,)
            )

    async def queue_state(self, run_id: int) -> QueueState:
        """How far a shared run is: its status and its cases by where they are."""
        cursor = await self._pg.execute_native(
            f"SELECT r.status, COALESCE(SUM(CASE WHEN q.state = 'ready' OR (q.state = 'leased'"
            f" AND q.lease_until < {NOW}) THEN 1 ELSE 0 END), 0),"
            f" COALESCE(SUM(CASE WHEN q.state = 'leased' AND q.lease_until >= {NOW}"
            " THEN 1 ELSE 0 END), 0),"
            " COALESCE(SUM(CASE WHEN q.state = 'done' THEN 1 ELSE 0 END), 0)"
            " FROM runs r LEFT JOIN queue q ON q.run_id = r.id WHERE r.id = %s GROUP BY r.status",
            (run_id,),
        )
        row = await cursor.fetchone()
        if row is None:
            return QueueState("missing")
        return QueueState(str(row[0]), int(row[1]), int(row[2]), int(row[3]))

    async def finish_shared(self, run_id: int) -> bool:
        """Mark the shared run completed once every case is stored; True when it is."""
        rows = await self._write(
            "UPDATE runs SET status = 'completed', finished_at = %s WHERE id = %s"
            " AND NOT EXISTS (SELECT 1 FROM queue WHERE run_id = %s AND state != 'done')"
            " RETURNING id",
            (_now_iso(), run_id, run_id),
        )
        return bool(rows)

    async def live_workers(self, run_ids: Sequence[int]) -> dict[int, int]:
        """Workers still renewing their leases, per shared run (for the runs shown)."""
        if self.dialect != "postgresql" or not run_ids:
            return {}
        cursor = await self._pg.execute_native(
            f"SELECT w.run_id, COUNT(*) FROM workers w JOIN shared_runs s ON s.run_id = w.run_id"
            f" WHERE w.run_id = ANY(%s) AND w.ended_at IS NULL"
            f" AND w.seen_at + s.lease_seconds >= {NOW} GROUP BY w.run_id",
            (list(run_ids),),
        )
        return {int(r[0]): int(r[1]) for r in await cursor.fetchall()}

    async def shared_runs(self, run_ids: Sequence[int]) -> set[int]:
        """Which of these runs are shared runs (`--worker`)."""
        if self.dialect != "postgresql" or not run_ids:
            return set()
        cursor = await self._pg.execute_native(
            "SELECT run_id FROM shared_runs WHERE run_id = ANY(%s)", (list(run_ids),)
        )
        return {int(r[0]) for r in await cursor.fetchall()}


async def unattended(db: Any, run_ids: Sequence[int]) -> set[int]:
    """Of these runs, the shared runs still marked running that no live worker serves (every
    worker ended or stopped renewing its leases): interrupted, until a worker joins again."""
    cursor = await db.execute_native(
        "SELECT s.run_id FROM shared_runs s WHERE s.run_id = ANY(%s) AND NOT EXISTS"
        " (SELECT 1 FROM workers w WHERE w.run_id = s.run_id AND w.ended_at IS NULL"
        f" AND w.seen_at + s.lease_seconds >= {NOW})",
        (list(run_ids),),
    )
    return {int(r[0]) for r in await cursor.fetchall()}


def _now_iso() -> str:
    from secbench_tui.core.store.values import now_iso

    return now_iso()
