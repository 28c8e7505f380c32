"""The batches a run sent to a batch API, and which request each of their ids stands for.

`batches` holds one row per batch: the run that sent it, the protocol and endpoint (without
credentials), the model, the provider's id once it accepted the batch, the status and counts
of the last poll, when it ended and when its every result was read. `batch_requests` maps each
request id of a batch back to what it asked: the request hash and repeat (which a later run
finds it by), the case and its place in the run.

Both are written before the batch's first poll: a batch is recorded (`submitting`) with its
mapping before it is sent, and its provider id is committed the moment the provider answers,
so a process killed at any later point leaves a batch the next run polls again rather than
sends again. A batch is open until its results have all been read (`read_at`); a batch the
provider refused, or one whose submission may or may not have landed, is closed at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from secbench_tui.core.store import stored_values as stored
from secbench_tui.core.store.connection import StoreConnection
from secbench_tui.core.store.values import now_iso, storable

SUBMITTING = "submitting"  # recorded, not yet accepted
CHUNK = 500  # keys per query: well under SQLite's limit on parameters


@dataclass(frozen=True)
class BatchedRequest:
    """One request of a batch: its id there, and what it asked."""

    custom_id: str
    request_hash: str
    repeat: int
    case_id: str
    case_index: int


@dataclass(frozen=True)
class BatchRecord:
    """A batch as the store keeps it."""

    id: int
    run_id: int
    protocol: str
    endpoint: str
    model: str
    provider_id: str | None
    status: str
    requests: int
    submitted_at: str
    counts: dict[str, int] = field(default_factory=dict)
    ended_at: str | None = None
    read_at: str | None = None
    message: str | None = None
    details: dict[str, str] = field(default_factory=dict)


def _record(row: Any) -> BatchRecord:
    counts = stored.json_object(row["counts"])
    details = stored.json_object(row["details"])
    return BatchRecord(
        id=int(row["id"]),
        run_id=int(row["run_id"]),
        protocol=stored.text(row["protocol"], required=True) or "",
        endpoint=stored.text(row["endpoint"], required=True) or "",
        model=stored.text(row["model_name"], required=True) or "",
        provider_id=stored.text(row["provider_batch_id"]),
        status=stored.text(row["status"], required=True) or "",
        requests=stored.whole(row["requests"], 0, stored.MAX_INDEX) or 0,
        submitted_at=stored.text(row["submitted_at"], required=True) or "",
        counts={
            str(k): v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)
        },
        ended_at=stored.text(row["ended_at"]),
        read_at=stored.text(row["read_at"]),
        message=stored.text(row["message"]),
        details={str(k): v for k, v in details.items() if isinstance(v, str)},
    )


def _requests(rows: Iterable[Any]) -> list[BatchedRequest]:
    return [
        BatchedRequest(
            custom_id=str(row["custom_id"]),
            request_hash=str(row["request_hash"]),
            repeat=int(row["repeat"]),
            case_id=str(row["case_id"]),
            case_index=int(row["case_index"]),
        )
        for row in rows
    ]


class BatchRecords(StoreConnection):
    """The `batches` and `batch_requests` tables."""

    async def add_batch(
        self,
        *,
        run_id: int,
        protocol: str,
        endpoint: str,
        model: str,
        requests: Sequence[BatchedRequest],
    ) -> int:
        """Record a batch about to be sent (`submitting`) with its requests, committed."""
        async with self.transaction() as db:
            row = await db.execute_insert(
                "INSERT INTO batches (run_id, protocol, endpoint, model_name, status, requests,"
                " submitted_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, protocol, storable(endpoint), storable(model), SUBMITTING,
                 len(requests), now_iso()),
            )  # fmt: skip
            assert row is not None, "an INSERT always has a last row id"
            batch_id = int(row[0])
            await db.executemany(
                "INSERT INTO batch_requests (batch_id, custom_id, request_hash, repeat, case_id,"
                " case_index) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (batch_id, r.custom_id, r.request_hash, r.repeat, storable(r.case_id),
                     r.case_index)
                    for r in requests
                ],
            )  # fmt: skip
        return batch_id

    async def batch_submitted(
        self, batch_id: int, provider_id: str, status: str, details: dict[str, str]
    ) -> None:
        """The provider accepted the batch: its id, committed before it is polled."""
        await self._update_batch(
            batch_id,
            provider_batch_id=storable(provider_id),
            status=storable(status),
            details=json.dumps(details, sort_keys=True),
        )

    async def batch_polled(
        self,
        batch_id: int,
        *,
        status: str,
        counts: dict[str, int],
        message: str | None,
        details: dict[str, str],
        ended: bool,
    ) -> None:
        changes: dict[str, Any] = {
            "status": storable(status),
            "counts": json.dumps(counts, sort_keys=True),
            "polled_at": now_iso(),
            "message": storable(message),
            "details": json.dumps(details, sort_keys=True),
        }
        if ended:
            changes["ended_at"] = now_iso()
        await self._update_batch(batch_id, **changes)

    async def batch_read(self, batch_id: int) -> None:
        """Every result of the batch has been read and stored: the batch is closed."""
        await self._update_batch(batch_id, read_at=now_iso())

    async def batch_unanswered(self, batch_id: int) -> int:
        """How many of the batch's requests have no answer stored since it was sent, in any
        run (an error is an answer too: the batch's for that request)."""
        async with self.db.execute(
            "SELECT COUNT(*) FROM batch_requests r JOIN batches b ON b.id = r.batch_id"
            " WHERE r.batch_id = ? AND NOT EXISTS (SELECT 1 FROM evaluations e"
            " WHERE e.request_hash = r.request_hash AND e.repeat = r.repeat"
            " AND e.timestamp >= b.submitted_at)",
            (batch_id,),
        ) as cursor:
            row = await cursor.fetchone()
        return int(row[0]) if row is not None else 0

    async def batch_closed(self, batch_id: int, status: str, message: str) -> None:
        """A batch that will never be polled: refused, or sent with no answer (it may have
        landed; it is not polled, nor sent again, by this batch)."""
        await self._update_batch(
            batch_id, status=storable(status), message=storable(message), read_at=now_iso()
        )

    async def _update_batch(self, batch_id: int, **changes: Any) -> None:
        sets = ", ".join(f"{name}=?" for name in changes)
        async with self.transaction() as db:
            await db.execute(f"UPDATE batches SET {sets} WHERE id=?", (*changes.values(), batch_id))

    async def open_batches(
        self, protocol: str, keys: Sequence[tuple[str, int]]
    ) -> list[tuple[BatchRecord, list[BatchedRequest]]]:
        """The batches sent through `protocol` that are still open (accepted, results not
        all read) and hold any of `keys` (request hash, repeat), oldest first, each with
        every request it holds."""
        wanted = set(keys)
        hashes = sorted({h for h, _ in wanted})
        found: set[int] = set()
        for start in range(0, len(hashes), CHUNK):
            chunk = hashes[start : start + CHUNK]
            marks = ", ".join("?" * len(chunk))
            async with self.db.execute(
                "SELECT r.batch_id, r.request_hash, r.repeat FROM batch_requests r"
                " JOIN batches b ON b.id = r.batch_id"
                " WHERE b.read_at IS NULL AND b.provider_batch_id IS NOT NULL"
                f" AND b.protocol = ? AND r.request_hash IN ({marks})",
                (protocol, *chunk),
            ) as cursor:
                for row in await cursor.fetchall():
                    if (row["request_hash"], row["repeat"]) in wanted:
                        found.add(int(row["batch_id"]))
        opened = []
        for batch_id in sorted(found):
            async with self.db.execute("SELECT * FROM batches WHERE id=?", (batch_id,)) as cur:
                found_row = await cur.fetchone()
            async with self.db.execute(
                "SELECT * FROM batch_requests WHERE batch_id=? ORDER BY case_index, repeat",
                (batch_id,),
            ) as cur:
                requests = _requests(await cur.fetchall())
            if found_row is not None:
                opened.append((_record(found_row), requests))
        return opened

    async def batches_of_run(self, run_id: int) -> list[BatchRecord]:
        """The batches a run sent, in the order it sent them."""
        async with self.db.execute(
            "SELECT * FROM batches WHERE run_id=? ORDER BY id", (run_id,)
        ) as cursor:
            return [_record(row) for row in await cursor.fetchall()]
