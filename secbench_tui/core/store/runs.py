"""The runs of a database: starting, reopening and finishing one, and reading them back."""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from secbench_tui.core.models import RecordedSettings, RunStatus
from secbench_tui.core.store import stored_values as stored
from secbench_tui.core.store.connection import StoreConnection
from secbench_tui.core.store.queue import unattended
from secbench_tui.core.store.stored_values import BELIEVABLE_COST_SQL
from secbench_tui.core.store.values import now_iso
from secbench_tui.core.untrusted import redact_url


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def recorded_settings(text: str | None) -> RecordedSettings:
    """A run's settings as read back: a `base_url` recorded with credentials (by a version
    that stored it whole) comes out redacted, so no report or export shows them."""
    settings = stored.json_object(text)
    if isinstance(base_url := settings.get("base_url"), str):
        settings["base_url"] = redact_url(base_url)
    return RecordedSettings.from_stored(settings)


def effective_status(status: str, pid: int | None, host: str | None) -> RunStatus:
    """A run still marked running whose process on this machine is gone was interrupted."""
    if status == "running" and pid and host == socket.gethostname() and not _process_alive(pid):
        return RunStatus.INTERRUPTED
    return RunStatus.of(status)


@dataclass
class RunRecord:
    id: int
    model_name: str
    suite_kind: str
    suite_path: str
    suite_hash: str | None
    prompt_hash: str | None
    settings: RecordedSettings
    fingerprint: str
    tool_version: str | None
    started_at: str
    finished_at: str | None
    status: RunStatus
    total_cases: int
    message: str | None
    counts: dict[str, int] = field(default_factory=dict)
    cost: float = 0.0
    prompt_name: str | None = None  # the evaluation prompt's name; None for imported runs

    @property
    def finished(self) -> int:
        return sum(self.counts.values())

    @property
    def accuracy(self) -> float | None:
        graded = self.finished
        return self.counts.get("correct", 0) / graded if graded else None


def _run_record(row: Any) -> RunRecord:
    """A `runs` row with the types the program writes, whatever the file holds."""
    text = stored.text
    pid = stored.whole(row["pid"], 1, 2**31)
    return RunRecord(
        id=row["id"],
        model_name=text(row["model_name"], required=True) or "",
        suite_kind=text(row["suite_kind"], required=True) or "",
        suite_path=text(row["suite_path"], required=True) or "",
        suite_hash=text(row["suite_hash"]),
        prompt_hash=text(row["prompt_hash"]),
        settings=recorded_settings(row["settings"]),
        fingerprint=text(row["fingerprint"], required=True) or "",
        tool_version=text(row["tool_version"]),
        started_at=text(row["started_at"], required=True) or "",
        finished_at=text(row["finished_at"]),
        status=effective_status(text(row["status"], required=True) or "", pid, text(row["host"])),
        total_cases=stored.whole(row["total_cases"], 0, stored.MAX_INDEX) or 0,
        message=text(row["message"]),
        prompt_name=text(row["prompt_name"]),
    )


class RunQueries(StoreConnection):
    """The `runs` table: one row per run of one model, prompt and suite."""

    async def create_run(
        self,
        *,
        model: str,
        suite_kind: str,
        suite_path: str,
        suite_hash: str,
        prompt_hash: str,
        settings: RecordedSettings,
        fingerprint: str,
        tool_version: str,
        total_cases: int,
        prompt_name: str | None = None,
    ) -> int:
        async with self.transaction() as db:
            row = await db.execute_insert(
                "INSERT INTO runs (model_name, suite_kind, suite_path, suite_hash, prompt_hash,"
                " settings, fingerprint, tool_version, started_at, status, total_cases, pid, host,"
                " prompt_name) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)",
                (
                    model,
                    suite_kind,
                    suite_path,
                    suite_hash,
                    prompt_hash,
                    settings.stored(),
                    fingerprint,
                    tool_version,
                    now_iso(),
                    total_cases,
                    os.getpid(),
                    socket.gethostname(),
                    prompt_name,
                ),
            )
        assert row is not None, "an INSERT always has a last row id"
        return int(row[0])

    async def mark_started(self, run_id: int) -> None:
        """The run's first request is being sent: that is its start. A run of a matrix may
        wait for its model's earlier runs, and its time (JUnit's, the report's) counts from
        its own first request, not from when the matrix opened it."""
        await self._update("UPDATE runs SET started_at=? WHERE id=?", (now_iso(), run_id))

    async def reopen_run(self, run_id: int, total_cases: int) -> None:
        await self._update(
            "UPDATE runs SET status='running', finished_at=NULL, message=NULL, total_cases=?,"
            " pid=?, host=? WHERE id=?",
            (total_cases, os.getpid(), socket.gethostname(), run_id),
        )

    async def finish_run(self, run_id: int, status: RunStatus, message: str | None = None) -> None:
        await self._update(
            "UPDATE runs SET status=?, finished_at=?, message=? WHERE id=?",
            (status, now_iso(), message, run_id),
        )

    async def latest_run(
        self, fingerprint: str | Sequence[str], unfinished: bool = True
    ) -> int | None:
        """The newest run made with these settings (only unfinished ones if asked); several
        fingerprints: the newest run with any of them."""
        prints = [fingerprint] if isinstance(fingerprint, str) else list(fingerprint)
        extra = " AND status != 'completed'" if unfinished else ""
        cursor = await self.db.execute(
            f"SELECT id, status, pid, host FROM runs WHERE fingerprint IN"
            f" ({', '.join('?' * len(prints))}){extra} ORDER BY id DESC",
            prints,
        )
        for row in await cursor.fetchall():
            # a run still going in another process is not ours to continue
            if effective_status(row["status"], row["pid"], row["host"]) is not RunStatus.RUNNING:
                return int(row["id"])
        return None

    async def names_of_prompt(self, prompt_hash: str) -> list[str]:
        """The names runs of this evaluation prompt's text were recorded under."""
        cursor = await self.db.execute(
            "SELECT DISTINCT prompt_name FROM runs WHERE prompt_hash=? AND prompt_name IS NOT NULL"
            " ORDER BY prompt_name",
            (prompt_hash,),
        )
        return [row[0] for row in await cursor.fetchall()]

    async def run(self, run_id: int) -> RunRecord | None:
        runs = await self.runs(run_ids=[run_id])
        return runs[0] if runs else None

    async def runs(
        self, run_ids: Sequence[int] = (), models: Sequence[str] = ()
    ) -> list[RunRecord]:
        clauses: list[str] = []
        params: list[Any] = []
        if run_ids:
            clauses.append(f"r.id IN ({', '.join('?' * len(run_ids))})")
            params.extend(run_ids)
        if models:
            clauses.append(f"r.model_name IN ({', '.join('?' * len(models))})")
            params.extend(models)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        cursor = await self.db.execute(f"SELECT * FROM runs r{where} ORDER BY r.id", params)
        records = {row["id"]: _run_record(row) for row in await cursor.fetchall()}
        running = [i for i, r in records.items() if r.status is RunStatus.RUNNING]
        if running and self.dialect == "postgresql":  # a shared run whose workers are gone
            for run_id in await unattended(self.db, running):
                records[run_id].status = RunStatus.INTERRUPTED
        if records:
            cursor = await self.db.execute(
                f"SELECT run_id, outcome, COUNT(*), TOTAL({BELIEVABLE_COST_SQL}) FROM evaluations"
                f" WHERE run_id IN ({', '.join('?' * len(records))}) GROUP BY run_id, outcome",
                list(records),
            )
            for run_id, outcome, count, cost in await cursor.fetchall():
                shown = stored.text(outcome, required=True) or ""
                records[run_id].counts[shown] = records[run_id].counts.get(shown, 0) + count
                records[run_id].cost += cost
        return list(records.values())

    async def claim_imported(
        self, run_ids: Sequence[int], suite_kind: str, suite_path: str
    ) -> None:
        """Imported runs whose answers a run of a known suite reused are that suite's runs:
        the report lists them with it, not as a suite of their own."""
        if not run_ids:
            return
        await self._update(
            f"UPDATE runs SET suite_kind=?, suite_path=? WHERE status='imported'"
            f" AND suite_path='' AND id IN ({', '.join('?' * len(run_ids))})",
            [suite_kind, suite_path, *run_ids],
        )

    async def _update(self, sql: str, values: Sequence[Any]) -> None:
        """One statement, committed (`transaction`)."""
        async with self.transaction() as db, db.execute(sql, values):
            pass  # the cursor is closed on the database's thread, as `async with` does
