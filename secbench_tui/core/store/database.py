"""Results in SQLite through aiosqlite: schema, migrations, writes, paged reads.

Each result is committed as it arrives (WAL mode), so killing the process at any moment keeps
every finished case. The `evaluations` table keeps the specification's seven columns with their
names and meanings and adds what reports, resuming and browsing need. `PRAGMA user_version`
holds the schema version; `MIGRATIONS` brings any older file up to date, including a database
written by the original security-bench evaluator (the seven columns and nothing else).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import aiosqlite

from secbench_tui.core.models import Case, Evaluation, RecordedSettings, RunStatus
from secbench_tui.core.store import requests
from secbench_tui.core.store import stored_values as stored
from secbench_tui.core.store.comparison import (
    FlipCounts,
    FlipRow,
    GridCounts,
    GridRow,
    Verdict,
    flip_of,
)
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.stored_values import BELIEVABLE_COST_SQL
from secbench_tui.core.store.values import gold_json, now_iso, storable, text_hash
from secbench_tui.core.untrusted import redact_url

if TYPE_CHECKING:
    from secbench_tui.core.store.original import WriteLayout

SCHEMA_VERSION = 9

_SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    model_name TEXT NOT NULL,
    suite_kind TEXT NOT NULL,
    suite_path TEXT NOT NULL,
    suite_hash TEXT,
    prompt_hash TEXT,
    settings TEXT NOT NULL DEFAULT '{}',
    fingerprint TEXT NOT NULL DEFAULT '',
    tool_version TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,
    total_cases INTEGER NOT NULL DEFAULT 0,
    message TEXT
);
CREATE TABLE IF NOT EXISTS case_texts (
    hash TEXT PRIMARY KEY,
    code TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    timestamp DATETIME NOT NULL,
    test_file TEXT NOT NULL,
    model_name TEXT NOT NULL,
    expected_result TEXT NOT NULL,
    actual_result TEXT,
    explanation TEXT,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    suite_kind TEXT NOT NULL DEFAULT 'markdown',
    app TEXT NOT NULL DEFAULT '',
    case_id TEXT NOT NULL,
    case_index INTEGER NOT NULL DEFAULT 0,
    repeat INTEGER NOT NULL DEFAULT 0,
    outcome TEXT NOT NULL,
    raw_reply TEXT,
    error TEXT,
    http_status INTEGER,
    finish_reason TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    cost REAL,
    latency_ms REAL,
    attempts INTEGER NOT NULL DEFAULT 1,
    served_model TEXT,
    provider TEXT,
    scores TEXT NOT NULL DEFAULT '{}',
    case_hash TEXT REFERENCES case_texts(hash),
    request_hash TEXT,
    reused_from INTEGER,
    UNIQUE (run_id, case_id, repeat)
);
CREATE INDEX IF NOT EXISTS ix_eval_run ON evaluations (run_id, case_index, repeat);
CREATE INDEX IF NOT EXISTS ix_eval_model ON evaluations (model_name, id);
CREATE INDEX IF NOT EXISTS ix_eval_app ON evaluations (app, id);
CREATE INDEX IF NOT EXISTS ix_eval_outcome ON evaluations (outcome, id);
CREATE INDEX IF NOT EXISTS ix_eval_request ON evaluations (request_hash, outcome);
CREATE INDEX IF NOT EXISTS ix_runs_fingerprint ON runs (fingerprint, id);
"""

_EVAL_COLUMNS = (
    "timestamp",
    "test_file",
    "model_name",
    "expected_result",
    "actual_result",
    "explanation",
    "run_id",
    "suite_kind",
    "app",
    "case_id",
    "case_index",
    "repeat",
    "outcome",
    "raw_reply",
    "error",
    "http_status",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "latency_ms",
    "attempts",
    "served_model",
    "provider",
    "scores",
    "case_hash",
    "request_hash",
    "reused_from",
    "reasoning",
    "reasoning_tokens",
    "notes",
    "gold",
    "reasons",
    "scoring_version",
    "variant",
    "messages",
)
# What reads of whole rows select: a table adopted from the original evaluator also holds its
# `request` and `response` bodies, which no read of ours needs.
_ROW = "e.id, " + ", ".join(f"e.{column}" for column in _EVAL_COLUMNS)


BUSY_TIMEOUT_S = 5.0  # how long an open or a write waits for another process's lock


async def _use_wal(db: aiosqlite.Connection) -> None:
    """Switch the file to WAL (a no-op once it is), waiting as long as the busy timeout.

    SQLite switches by upgrading a read lock to a write lock, and never waits for such an
    upgrade (two connections waiting on each other would deadlock), so the busy timeout does
    not cover it: while another process is switching the same new file or reading it, the
    switch fails at once with SQLITE_BUSY. It is retried here instead, with a short backoff.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BUSY_TIMEOUT_S
    delay = 0.001
    while True:
        try:
            await db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or loop.time() > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)


class StoreError(Exception):
    """The database cannot be used; the message names the file and what to do."""


def _to_stderr(text: str) -> None:
    import sys

    print(f"secbench-tui: note: {text}", file=sys.stderr)


async def _migrate_legacy(db: aiosqlite.Connection) -> None:
    """Version 0 -> 1: a database of the original evaluator, adopted in place.

    Its `evaluations` table keeps its columns, rows and ids (so the original still reads and
    appends to it) and gains ours beside them; its rows are imported once the schema is
    current (`core/original.py`).
    """
    from secbench_tui.core.store import original

    await original.add_our_columns(db)
    await _create_v1(db)


async def _create_v1(db: aiosqlite.Connection) -> None:
    # statement by statement: executescript would commit the migration's transaction
    for statement in _SCHEMA_V1.split(";"):
        if statement.strip():
            await db.execute(statement)


Migration = Callable[[aiosqlite.Connection], Awaitable[None]]


async def _add_run_owner(db: aiosqlite.Connection) -> None:
    """Version 1 -> 2: which process runs a run, so a killed one shows as interrupted."""
    await db.execute("ALTER TABLE runs ADD COLUMN pid INTEGER")
    await db.execute("ALTER TABLE runs ADD COLUMN host TEXT")


LEGACY_PROMPT_NAME = "evaluation-prompt"  # the one prompt file runs had before prompts had names


def prompt_keyed(key: str, prompt_name: str) -> str:
    """A request hash or run fingerprint that also names the evaluation prompt."""
    return text_hash(key, prompt_name)


def vdb_prompt_name(method: Any) -> str:
    """VulDetectBench's prompt dimension is its prompting method: plain, cot or few-shot."""
    return str(method) if method else "plain"


async def _add_prompt_name(db: aiosqlite.Connection) -> None:
    """Version 2 -> 3: each run names its evaluation prompt; reuse and resume keys include it.

    Runs recorded before are named as their prompt was then (`evaluation-prompt`, or the
    VulDetectBench method); their keys are re-derived with that name, so a result already paid
    for is still reused by a run of the same prompt file. Imported runs name none.
    """
    await db.execute("ALTER TABLE runs ADD COLUMN prompt_name TEXT")
    cursor = await db.execute("SELECT id, suite_kind, settings, fingerprint FROM runs")
    names: dict[int, str] = {}
    for run_id, kind, settings, fingerprint in await cursor.fetchall():
        if not fingerprint:  # imported from the original tool: its prompt is not known here
            continue
        try:
            method = json.loads(settings or "{}").get("method")
        except (ValueError, AttributeError):
            method = None
        names[run_id] = vdb_prompt_name(method) if kind == "vuldetectbench" else LEGACY_PROMPT_NAME
        await db.execute(
            "UPDATE runs SET prompt_name=?, fingerprint=? WHERE id=?",
            (names[run_id], prompt_keyed(fingerprint, names[run_id]), run_id),
        )
    cursor = await db.execute(
        "SELECT id, run_id, request_hash FROM evaluations WHERE request_hash IS NOT NULL"
    )
    await db.executemany(
        "UPDATE evaluations SET request_hash=? WHERE id=?",
        [
            (prompt_keyed(request_hash, names[run_id]), row_id)
            for row_id, run_id, request_hash in await cursor.fetchall()
            if run_id in names
        ],
    )


async def _add_reasoning(db: aiosqlite.Connection) -> None:
    """Version 3 -> 4: the model's reasoning text and reasoning tokens, per result."""
    await db.execute("ALTER TABLE evaluations ADD COLUMN reasoning TEXT")
    await db.execute("ALTER TABLE evaluations ADD COLUMN reasoning_tokens INTEGER")


async def _add_notes(db: aiosqlite.Connection) -> None:
    """Version 4 -> 5: notes on a case, such as a cost from the server that was not believed."""
    await db.execute("ALTER TABLE evaluations ADD COLUMN notes TEXT")


async def _add_case_index(db: aiosqlite.Connection) -> None:
    """Version 5 -> 6: the comparison views walk cases in order across runs (`grid_page`)."""
    await db.execute(
        "CREATE INDEX IF NOT EXISTS ix_eval_case ON evaluations (case_id, run_id, repeat, outcome)"
    )


async def _add_reasons(db: aiosqlite.Connection) -> None:
    """Version 6 -> 7: why a bad case is bad (`gold`: its right rules and lines, JSON), why the
    model said what it said (`reasons`: the violations cited, scored, JSON) and the version of
    the scoring that wrote the row's scores (`scoring_version`; NULL: before versions were kept,
    which `--rescore` brings up to date from the raw replies)."""
    cursor = await db.execute("PRAGMA table_info(evaluations)")
    have = {row[1] for row in await cursor.fetchall()}
    for column, kind in (("gold", "TEXT"), ("reasons", "TEXT"), ("scoring_version", "INTEGER")):
        if column not in have:
            await db.execute(f"ALTER TABLE evaluations ADD COLUMN {column} {kind}")


async def _add_variant(db: aiosqlite.Connection) -> None:
    """Version 7 -> 8: a rewritten case's identity (`--rewrites`): its original case, the
    relation, seed and code hash, and whether the equivalence gate proved it; NULL for an
    original case."""
    await db.execute("ALTER TABLE evaluations ADD COLUMN variant TEXT")


# MIGRATIONS[n] brings a file at version n to version n + 1.
MIGRATIONS: dict[int, Migration] = {
    0: _migrate_legacy,
    1: _add_run_owner,
    2: _add_prompt_name,
    3: _add_reasoning,
    4: _add_notes,
    5: _add_case_index,
    6: _add_reasons,
    7: _add_variant,
    8: requests.add_request_texts,
}


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _variant_text(value: Any) -> str | None:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else None


def recorded_settings(text: str | None) -> RecordedSettings:
    """A run's settings as read back: a `base_url` recorded with credentials (by a version
    that stored it whole) comes out redacted, so no report or export shows them."""
    settings = stored.json_object(text)
    if isinstance(settings.get("base_url"), str):
        settings["base_url"] = redact_url(settings["base_url"])
    return cast(RecordedSettings, settings)


def effective_status(status: str, pid: int | None, host: str | None) -> RunStatus:
    """A run still marked running whose process on this machine is gone was interrupted."""
    if status == "running" and pid and host == socket.gethostname() and not _process_alive(pid):
        return RunStatus.INTERRUPTED
    return RunStatus.of(status)


@dataclass
class ResultFilter:
    """What the results browser and exports select. Empty fields select everything."""

    run_ids: Sequence[int] = ()
    models: Sequence[str] = ()
    apps: Sequence[str] = ()
    outcomes: Sequence[str] = ()
    text: str = ""
    prompts: Sequence[str] = ()  # evaluation prompt names, a property of the run

    def where(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if self.prompts:
            clauses.append(
                "e.run_id IN (SELECT id FROM runs WHERE prompt_name IN"
                f" ({', '.join('?' * len(self.prompts))}))"
            )
            params.extend(self.prompts)
        for column, values in (
            ("run_id", self.run_ids),
            ("model_name", self.models),
            ("app", self.apps),
            ("outcome", self.outcomes),
        ):
            if values:
                clauses.append(f"e.{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        if self.text:
            clauses.append(
                "(e.case_id LIKE ? ESCAPE '\\' OR e.explanation LIKE ? ESCAPE '\\'"
                " OR e.raw_reply LIKE ? ESCAPE '\\' OR e.error LIKE ? ESCAPE '\\')"
            )
            pattern = (
                "%" + self.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            )
            params.extend([pattern] * 4)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


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


class Store:
    """One open database. Use `await Store.open(path)`, then `await store.close()`."""

    def __init__(self, db: aiosqlite.Connection, path: Path) -> None:
        self.db = db
        self.path = path
        self._run_models: dict[int, str] = {}
        self._run_prompts: dict[int, str | None] = {}
        self._known_texts: set[str] = set()  # case_texts rows this connection has written
        self._request_texts = requests.RequestTexts()  # the parts of the messages asked
        self._known_request_texts: set[str] = set()  # request_texts rows written
        self._adopted: WriteLayout | None = None  # the original evaluator's table, if it is
        self.backup: Path | None = None  # the copy this open made of an original's file

    @classmethod
    async def open(cls, path: Path | str, on_notice: Callable[[str], None] = _to_stderr) -> Store:
        """Open (and create or migrate) the database; `on_notice` hears what the user must
        know, such as where the copy of an original evaluator's file went."""
        from secbench_tui.core.store import original

        path = Path(path)
        if path.parent and not path.parent.exists():
            raise StoreError(
                f"--db {path}: folder {path.parent} does not exist; create it or pick another path"
            )
        try:
            db = await aiosqlite.connect(str(path))
        except Exception as exc:  # aiosqlite re-raises sqlite3 errors of any kind
            raise StoreError(f"--db {path}: cannot open the database ({exc})") from exc
        store = cls(db, path)
        try:
            db.row_factory = aiosqlite.Row
            await db.execute(f"PRAGMA busy_timeout={round(BUSY_TIMEOUT_S * 1000)}")
            await db.execute("PRAGMA foreign_keys=ON")
            # Migrate (and copy an original's file) before switching to WAL: the copy must be
            # of the file as it was, and a new file's schema is written under a lock the busy
            # timeout waits for, which the switch to WAL is not (`_use_wal`).
            await store._migrate()
            await _use_wal(db)
            await db.execute("PRAGMA synchronous=NORMAL")
            store._adopted = await original.write_layout(db)
        except Exception as exc:
            await db.close()
            if isinstance(exc, StoreError):
                raise
            if "locked" in str(exc):
                raise StoreError(
                    f"--db {path}: in use by another process (database is locked); "
                    "wait for it to finish, or use another --db path"
                ) from exc
            raise StoreError(
                f"--db {path}: not a secbench-tui database or damaged ({exc}); "
                "pick another --db path"
            ) from exc
        if store.backup is not None:
            on_notice(
                f"--db {path} was written by the original security-bench: its columns and rows "
                "are kept as they were, so it still reads and adds to the file; a copy of the "
                f"file as it was is at {store.backup}"
            )
        return store

    async def close(self) -> None:
        await self.db.close()

    async def _back_up_original(self) -> Path:
        from secbench_tui.core.store import original

        try:
            return await original.back_up(self.db, self.path)
        except OSError as exc:
            raise StoreError(
                f"--db {self.path}: written by the original security-bench; cannot write a "
                f"copy of it beside it before adopting it ({exc}); make the folder "
                "writable, or copy the file and use the copy"
            ) from exc

    async def _user_version(self) -> int:
        cursor = await self.db.execute("PRAGMA user_version")
        row = await cursor.fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"--db {self.path}: written by a newer secbench-tui (schema {version}, this "
                f"version reads up to {SCHEMA_VERSION}); upgrade secbench-tui"
            )
        return version

    async def _migrate(self) -> None:
        from secbench_tui.core.store import original

        version = await self._user_version()
        if version == SCHEMA_VERSION and not await original.has_new_rows(self.db):
            return  # nothing to write: opening needs the write lock only for work to do
        # One transaction: a migration that fails leaves the file as it was.
        await self.db.execute("BEGIN IMMEDIATE")
        try:
            # Read again under the write lock: another process opening the same new file
            # at the same moment may have migrated it while this one waited for the lock.
            version = await self._user_version()
            if await original.unadopted(self.db):  # decided under the lock: one copy, made first
                self.backup = await self._back_up_original()
            elif version == 0:  # a new file
                await _create_v1(self.db)
                version = 1
            while version < SCHEMA_VERSION:
                await MIGRATIONS[version](self.db)
                version += 1
            await self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            await original.import_new_rows(self.db)  # rows the original evaluator wrote
            await self.db.commit()
        except BaseException:
            await self.db.rollback()
            raise

    # --- runs -------------------------------------------------------------------------

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
        cursor = await self.db.execute(
            "INSERT INTO runs (model_name, suite_kind, suite_path, suite_hash, prompt_hash,"
            " settings, fingerprint, tool_version, started_at, status, total_cases, pid, host,"
            " prompt_name) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)",
            (
                model,
                suite_kind,
                suite_path,
                suite_hash,
                prompt_hash,
                json.dumps(settings, sort_keys=True),
                fingerprint,
                tool_version,
                now_iso(),
                total_cases,
                os.getpid(),
                socket.gethostname(),
                prompt_name,
            ),
        )
        await self.db.commit()
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    async def mark_started(self, run_id: int) -> None:
        """The run's first request is being sent: that is its start. A run of a matrix may
        wait for its model's earlier runs, and its time (JUnit's, the report's) counts from
        its own first request, not from when the matrix opened it."""
        await self.db.execute("UPDATE runs SET started_at=? WHERE id=?", (now_iso(), run_id))
        await self.db.commit()

    async def reopen_run(self, run_id: int, total_cases: int) -> None:
        await self.db.execute(
            "UPDATE runs SET status='running', finished_at=NULL, message=NULL, total_cases=?,"
            " pid=?, host=? WHERE id=?",
            (total_cases, os.getpid(), socket.gethostname(), run_id),
        )
        await self.db.commit()

    async def finish_run(self, run_id: int, status: RunStatus, message: str | None = None) -> None:
        await self.db.execute(
            "UPDATE runs SET status=?, finished_at=?, message=? WHERE id=?",
            (status, now_iso(), message, run_id),
        )
        await self.db.commit()

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

    # --- evaluations ---------------------------------------------------------------------

    async def finished_keys(self, run_id: int, include_errors: bool = True) -> set[tuple[str, int]]:
        sql = "SELECT case_id, repeat FROM evaluations WHERE run_id=?"
        if not include_errors:
            sql += " AND outcome != 'error'"
        cursor = await self.db.execute(sql, (run_id,))
        return {(row[0], row[1]) for row in await cursor.fetchall()}

    async def reusable(self, request_hashes: Sequence[str]) -> dict[tuple[str, int], ResultRow]:
        """The latest complete (non-error) result of each request, by (request hash, repeat)."""
        found: dict[tuple[str, int], ResultRow] = {}
        unique = sorted(set(request_hashes))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            cursor = await self.db.execute(
                "SELECT * FROM evaluations WHERE outcome != 'error'"
                f" AND request_hash IN ({', '.join('?' * len(chunk))}) ORDER BY id",
                chunk,
            )
            for row in await cursor.fetchall():
                found[(row["request_hash"], row["repeat"])] = stored.evaluation_row(dict(row))
        return found

    @property
    def adopted_requests(self) -> bool:
        """Whether this is the original evaluator's table with the request bodies it sent."""
        return self._adopted is not None and self._adopted.request

    async def adopted_answers(
        self, model: str, bodies: dict[str, dict[str, Any]]
    ) -> dict[tuple[str, int], ResultRow]:
        """Answers the original evaluator recorded for exactly these requests: rows of its
        imported runs of `model` whose stored request body is the one given for their case id.
        Keyed by (case id, n): the n-th such row of the case, in the order they were written."""
        from secbench_tui.core.store.original import same_request

        found: dict[tuple[str, int], ResultRow] = {}
        if not self.adopted_requests or not bodies:
            return found
        taken: dict[str, int] = {}
        case_ids = sorted(bodies)
        for start in range(0, len(case_ids), 500):
            chunk = case_ids[start : start + 500]
            cursor = await self.db.execute(
                "SELECT e.* FROM evaluations e JOIN runs r ON r.id = e.run_id"
                " WHERE r.status = 'imported' AND e.model_name = ? AND e.outcome != 'error'"
                f" AND e.case_id IN ({', '.join('?' * len(chunk))}) ORDER BY e.id",
                [model, *chunk],
            )
            for row in await cursor.fetchall():
                case_id = row["case_id"]
                if same_request(row["request"], bodies[case_id]):
                    n = taken.get(case_id, 0)
                    taken[case_id] = n + 1
                    found[(case_id, n)] = stored.evaluation_row(dict(row))
        return found

    async def claim_imported(
        self, run_ids: Sequence[int], suite_kind: str, suite_path: str
    ) -> None:
        """Imported runs whose answers a run of a known suite reused are that suite's runs:
        the report lists them with it, not as a suite of their own."""
        if not run_ids:
            return
        await self.db.execute(
            f"UPDATE runs SET suite_kind=?, suite_path=? WHERE status='imported'"
            f" AND suite_path='' AND id IN ({', '.join('?' * len(run_ids))})",
            [suite_kind, suite_path, *run_ids],
        )
        await self.db.commit()

    async def remember_texts(self, cases: Sequence[Case]) -> None:
        """Write the code and description of every case a run is about to ask, in one call.

        `record` then writes only each result's row: one statement and a commit per case,
        instead of two statements (each a hop to the database thread) and a commit. The texts
        are committed with the first result (rows of the content-addressed text table, so
        one written for a case a stopped run never asked is harmless).
        """
        rows: dict[str, tuple[str, Any, Any]] = {}
        for case in cases:
            case_hash = text_hash(case.code, case.description)
            if case_hash not in self._known_texts:
                rows[case_hash] = (case_hash, storable(case.code), storable(case.description))
        if rows:
            await self.db.executemany(
                "INSERT OR IGNORE INTO case_texts (hash, code, description) VALUES (?, ?, ?)",
                list(rows.values()),
            )
            self._known_texts.update(rows)

    async def remember_requests(self, cases: Sequence[Case]) -> dict[str, str]:
        """Write the texts of every message a run's cases send, in one call (committed with
        the first result), and return what each result's row names them by, by case id
        (`core.store.requests`)."""
        refs = {case.case_id: self._request_texts.refs(case) for case in cases}
        rows = self._request_texts.rows(self._known_request_texts)
        if rows:
            await self.db.executemany(
                "INSERT OR IGNORE INTO request_texts (hash, text) VALUES (?, ?)", rows
            )
            self._known_request_texts.update(h for h, _ in rows)
        return refs

    async def sent_request(self, result_id: int) -> requests.SentRequest | None:
        """The messages a result was asked with, as far as the database kept them."""
        return await requests.sent_request(self.db, result_id, self.adopted_requests)

    async def requests_for_export(
        self, rows: Sequence[ResultRow]
    ) -> tuple[dict[int, dict[str, Any]], dict[str, str]]:
        """Each result's request and the texts it names (`requests.for_export`)."""
        return await requests.for_export(self.db, rows, self.adopted_requests)

    async def record(
        self,
        evaluation: Evaluation,
        request_hash: str,
        reused_from: int | None = None,
        messages: str | None = None,
    ) -> int:
        """Write one result and commit it before returning; `messages`: its request's, as
        `remember_requests` named them."""
        case, completion, scored = evaluation.case, evaluation.completion, evaluation.scored
        case_hash = text_hash(case.code, case.description)
        if case_hash not in self._known_texts:
            await self.db.execute(
                "INSERT OR IGNORE INTO case_texts (hash, code, description) VALUES (?, ?, ?)",
                (case_hash, storable(case.code), storable(case.description)),
            )
            self._known_texts.add(case_hash)
        values: Sequence[Any] = tuple(
            storable(value)
            for value in (
                evaluation.timestamp or now_iso(),
                case.test_file,
                await self._model_of(evaluation),
                case.expected,
                scored.actual,
                scored.explanation,
                evaluation.run_id,
                case.kind.value,
                case.app,
                case.case_id,
                evaluation.index,
                evaluation.repeat,
                scored.outcome.value,
                completion.text,
                completion.error or completion.unreadable,  # unreadable: unparsed, and why
                completion.status,
                completion.finish_reason,
                completion.prompt_tokens,
                completion.completion_tokens,
                completion.cost,
                completion.latency_ms,
                completion.attempts,
                completion.served_model,
                completion.provider,
                json.dumps(scored.scores, sort_keys=True),
                case_hash,
                request_hash,
                reused_from,
                completion.reasoning,
                completion.reasoning_tokens,
                completion.notes,
                gold_json(case),
                scored.reason.model_dump_json() if scored.reason is not None else None,
                scored.scoring_version or None,
                _variant_text(case.meta.get("variant")),
                messages,
            )
        )
        columns: Sequence[str] = _EVAL_COLUMNS
        if self._adopted is not None:  # the original evaluator's table: fill what it requires
            columns, values = self._adopted.row(
                columns, values, self._run_prompts.get(evaluation.run_id)
            )
        cursor = await self.db.execute(
            f"INSERT OR REPLACE INTO evaluations ({', '.join(columns)})"
            f" VALUES ({', '.join('?' * len(columns))})",
            values,
        )
        await self.db.commit()
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    async def _model_of(self, evaluation: Evaluation) -> str:
        if evaluation.run_id not in self._run_models:
            cursor = await self.db.execute(
                "SELECT model_name, prompt_name FROM runs WHERE id=?", (evaluation.run_id,)
            )
            row = await cursor.fetchone()
            if row is None:
                raise StoreError(f"run {evaluation.run_id} does not exist in {self.path}")
            self._run_models[evaluation.run_id] = row[0]
            self._run_prompts[evaluation.run_id] = row[1]
        return self._run_models[evaluation.run_id]

    def _where(self, flt: ResultFilter | None) -> tuple[str, list[Any]]:
        where, params = (flt or ResultFilter()).where()
        if self._adopted is not None:  # what the original wrote since this open: next open
            where += (" AND " if where else " WHERE ") + "e.run_id IS NOT NULL"
        return where, params

    async def count_results(self, flt: ResultFilter | None = None) -> int:
        where, params = self._where(flt)
        cursor = await self.db.execute(f"SELECT COUNT(*) FROM evaluations e{where}", params)
        row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def results_page(
        self,
        flt: ResultFilter | None = None,
        after_id: int | None = None,
        limit: int = 200,
        with_text: bool = False,
        newest_first: bool = False,
    ) -> list[ResultRow]:
        """One page of results in id order (keyset pagination: pass the last id seen)."""
        where, params = self._where(flt)
        if after_id is not None:
            where += (" AND " if where else " WHERE ") + (
                "e.id < ?" if newest_first else "e.id > ?"
            )
            params.append(after_id)
        columns = (
            f"{_ROW}, c.code AS code, c.description AS description"
            if with_text
            else (
                "e.id, e.timestamp, e.model_name, e.run_id, e.app, e.case_id, e.expected_result,"
                " e.actual_result, e.outcome, e.latency_ms, e.cost, e.prompt_tokens,"
                " e.completion_tokens, e.repeat, e.suite_kind, e.reasons"
            )
        )
        join = " LEFT JOIN case_texts c ON c.hash = e.case_hash" if with_text else ""
        cursor = await self.db.execute(
            f"SELECT {columns} FROM evaluations e{join}{where}"
            f" ORDER BY e.id{' DESC' if newest_first else ''} LIMIT ?",
            [*params, limit],
        )
        return [stored.evaluation_row(dict(row)) for row in await cursor.fetchall()]

    async def result(self, evaluation_id: int) -> ResultRow | None:
        cursor = await self.db.execute(
            f"SELECT {_ROW}, c.code AS code, c.description AS description FROM evaluations e"
            " LEFT JOIN case_texts c ON c.hash = e.case_hash WHERE e.id=?",
            (evaluation_id,),
        )
        row = await cursor.fetchone()
        return stored.evaluation_row(dict(row)) if row else None

    async def case_family(self, run_id: int, original: str) -> list[ResultRow]:
        """An original case of a run and its `--rewrites` variants (ids `<original>#...`),
        each on its first repeat, the original first, with code."""
        pattern = original.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        cursor = await self.db.execute(
            f"SELECT {_ROW}, c.code AS code, c.description AS description FROM evaluations e"
            " LEFT JOIN case_texts c ON c.hash = e.case_hash WHERE e.run_id=? AND e.repeat=0"
            " AND (e.case_id=? OR e.case_id LIKE ? ESCAPE '\\') ORDER BY e.case_index, e.id",
            (run_id, original, pattern + "#%"),
        )
        rows = [stored.evaluation_row(dict(row)) for row in await cursor.fetchall()]
        rows = [r for r in rows if r["case_id"] == original or r.get("variant") is not None]
        return sorted(rows, key=lambda r: r.get("variant") is not None)

    async def run_results(self, run_id: int, with_text: bool = True) -> list[ResultRow]:
        """A run's results in case order; without text, only what figures are made of."""
        columns = (
            f"{_ROW}, c.code AS code, c.description AS description"
            if with_text
            else "e.id, e.app, e.case_id, e.case_index, e.repeat, e.suite_kind, e.outcome,"
            " e.expected_result, e.actual_result, e.prompt_tokens, e.completion_tokens, e.cost,"
            " e.latency_ms, e.reused_from, e.scores, e.explanation, e.reasoning_tokens, e.error,"
            " e.gold, e.reasons, e.scoring_version, e.variant"
        )
        join = " LEFT JOIN case_texts c ON c.hash = e.case_hash" if with_text else ""
        cursor = await self.db.execute(
            f"SELECT {columns} FROM evaluations e{join} WHERE e.run_id=?"
            " ORDER BY e.case_index, e.repeat",
            (run_id,),
        )
        return [stored.evaluation_row(dict(row)) for row in await cursor.fetchall()]

    async def rescorable_page(
        self, run_ids: Sequence[int] = (), after_id: int = 0, limit: int = 500
    ) -> list[ResultRow]:
        """Markdown results whose reply arrived readable (no error), with what scoring reads:
        the raw reply, the case's code, its label and gold. Keyset pages by id."""
        where = "e.suite_kind = 'markdown' AND e.error IS NULL AND e.id > ?"
        params: list[Any] = [after_id]
        if run_ids:
            where += f" AND e.run_id IN ({', '.join('?' * len(run_ids))})"
            params.extend(run_ids)
        if self._adopted is not None:
            where += " AND e.run_id IS NOT NULL"
        cursor = await self.db.execute(
            "SELECT e.id, e.run_id, e.app, e.case_id, e.test_file, e.expected_result,"
            " e.actual_result, e.outcome, e.explanation, e.raw_reply, e.gold, e.reasons,"
            " e.scoring_version, c.code AS code FROM evaluations e"
            f" LEFT JOIN case_texts c ON c.hash = e.case_hash WHERE {where} ORDER BY e.id LIMIT ?",
            [*params, limit],
        )
        return [stored.evaluation_row(dict(row)) for row in await cursor.fetchall()]

    async def update_scores(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Write rescored results: (outcome, actual_result, explanation, reasons, gold,
        scoring_version, id) each, in one transaction."""
        required = self._adopted.required if self._adopted is not None else frozenset()
        if "actual_result" in required:  # the original's NOT NULL column: "" for no verdict
            rows = [(r[0], "" if r[1] is None else r[1], *r[2:]) for r in rows]
        await self.db.executemany(
            "UPDATE evaluations SET outcome=?, actual_result=?, explanation=?, reasons=?,"
            " gold=?, scoring_version=? WHERE id=?",
            [tuple(storable(v) for v in row) for row in rows],
        )
        await self.db.commit()

    async def spent(self, run_id: int) -> float:
        """What a run's own requests cost (results reused from earlier runs cost nothing)."""
        cursor = await self.db.execute(
            f"SELECT TOTAL({BELIEVABLE_COST_SQL}) FROM evaluations"
            " WHERE run_id=? AND reused_from IS NULL",
            (run_id,),
        )
        row = await cursor.fetchone()
        return float(row[0]) if row else 0.0

    async def prompt_names(self) -> list[str]:
        """The evaluation prompts that runs with results were made with, by name."""
        cursor = await self.db.execute(
            "SELECT DISTINCT prompt_name FROM runs WHERE prompt_name IS NOT NULL"
            " AND id IN (SELECT DISTINCT run_id FROM evaluations) ORDER BY prompt_name"
        )
        return [row[0] for row in await cursor.fetchall()]

    async def names_of_prompt(self, prompt_hash: str) -> list[str]:
        """The names runs of this evaluation prompt's text were recorded under."""
        cursor = await self.db.execute(
            "SELECT DISTINCT prompt_name FROM runs WHERE prompt_hash=? AND prompt_name IS NOT NULL"
            " ORDER BY prompt_name",
            (prompt_hash,),
        )
        return [row[0] for row in await cursor.fetchall()]

    async def distinct(self, column: str) -> list[str]:
        if column not in ("model_name", "app", "outcome"):
            raise ValueError(column)
        cursor = await self.db.execute(
            f"SELECT DISTINCT {column} FROM evaluations ORDER BY {column}"
        )
        return [stored.text(row[0], required=True) or "" for row in await cursor.fetchall()]

    # --- comparison views (case x run grid, run-versus-run flips): keyset pages by case id ---

    async def grid_page(
        self,
        run_ids: Sequence[int],
        after_case: str | None = None,
        limit: int = 200,
        only_disagreements: bool = False,
        only_failures: bool = False,
    ) -> list[GridRow]:
        """The next `limit` cases (by case id) of `run_ids`, each with every run's verdict.

        Only first repeats count. `only_disagreements` keeps the cases whose outcomes differ,
        `only_failures` those that some run did not get right (both: what satisfies both)."""
        if not run_ids:
            return []
        marks = ", ".join("?" * len(run_ids))
        after = " AND case_id > ?" if after_case is not None else ""
        conditions = [
            *(["COUNT(DISTINCT outcome) > 1"] if only_disagreements else []),
            *(["TOTAL(outcome != 'correct') > 0"] if only_failures else []),
        ]
        having = f" HAVING {' AND '.join(conditions)}" if conditions else ""
        cursor = await self.db.execute(
            f"SELECT case_id FROM evaluations WHERE +run_id IN ({marks}) AND repeat = 0{after}"
            f" GROUP BY case_id{having} ORDER BY case_id LIMIT ?",
            [*run_ids, *([after_case] if after_case is not None else []), limit],
        )
        case_ids = [row[0] for row in await cursor.fetchall()]
        if not case_ids:
            return []
        rows = {case_id: GridRow(case_id, "", "") for case_id in case_ids}
        cursor = await self.db.execute(
            "SELECT run_id, case_id, app, expected_result, outcome, actual_result"
            f" FROM evaluations WHERE run_id IN ({marks}) AND repeat = 0"
            f" AND case_id IN ({', '.join('?' * len(case_ids))})",
            [*run_ids, *case_ids],
        )
        for run_id, case_id, app, expected, outcome, actual in await cursor.fetchall():
            row = rows[case_id]
            row.app, row.expected = app, expected
            row.verdicts[run_id] = Verdict(run_id, outcome, actual)
        return list(rows.values())

    async def grid_counts(self, run_ids: Sequence[int]) -> GridCounts:
        """How many cases the grid of `run_ids` has, and on how many the runs disagree."""
        if not run_ids:
            return GridCounts(0, 0)
        cursor = await self.db.execute(
            "SELECT COUNT(*), TOTAL(n > 1), TOTAL(bad > 0) FROM (SELECT"
            " COUNT(DISTINCT outcome) AS n, TOTAL(outcome != 'correct') AS bad"
            f" FROM evaluations WHERE +run_id IN ({', '.join('?' * len(run_ids))})"
            " AND repeat = 0 GROUP BY case_id)",
            list(run_ids),
        )
        row = await cursor.fetchone()
        if not row:
            return GridCounts(0, 0)
        return GridCounts(int(row[0]), int(row[1]), int(row[2]))

    async def case_answers(self, run_ids: Sequence[int], case_id: str) -> list[ResultRow]:
        """Each run's full first answer to one case, in the order of `run_ids`."""
        if not run_ids:
            return []
        cursor = await self.db.execute(
            "SELECT e.*, c.code AS code, c.description AS description FROM evaluations e"
            " LEFT JOIN case_texts c ON c.hash = e.case_hash"
            f" WHERE e.run_id IN ({', '.join('?' * len(run_ids))}) AND e.case_id = ?"
            " AND e.repeat = 0",
            [*run_ids, case_id],
        )
        found = {row["run_id"]: cast(ResultRow, dict(row)) for row in await cursor.fetchall()}
        return [found[r] for r in run_ids if r in found]

    async def flips_page(
        self,
        before: int,
        after: int,
        after_case: str | None = None,
        limit: int = 200,
        only: str | None = None,
    ) -> list[FlipRow]:
        """The next `limit` cases (by case id) whose outcome differs between two runs.

        `only` keeps one direction: "fixed", "broke" or "changed" (`core.comparison.Flip`)."""
        # a: the run before, b: the run after
        clauses = ["a.run_id = ?", "a.repeat = 0", "a.outcome != b.outcome"]
        params: list[Any] = [after, before]  # b.run_id in the join, then a.run_id
        if after_case is not None:
            clauses.append("a.case_id > ?")
            params.append(after_case)
        if only == "fixed":
            clauses.append("b.outcome = 'correct'")
        elif only == "broke":
            clauses.append("a.outcome = 'correct'")
        elif only == "changed":
            clauses.append("a.outcome != 'correct' AND b.outcome != 'correct'")
        cursor = await self.db.execute(
            "SELECT a.case_id, a.app, a.expected_result, a.outcome, a.actual_result,"
            " b.outcome, b.actual_result FROM evaluations a JOIN evaluations b"
            " ON b.run_id = ? AND b.case_id = a.case_id AND b.repeat = 0"
            f" WHERE {' AND '.join(clauses)} ORDER BY a.case_id LIMIT ?",
            [*params, limit],
        )
        return [
            FlipRow(
                case_id, app, expected, Verdict(before, a_out, a_act), Verdict(after, b_out, b_act)
            )
            for case_id, app, expected, a_out, a_act, b_out, b_act in await cursor.fetchall()
        ]

    async def flip_counts(self, before: int, after: int) -> FlipCounts:
        """How many cases flipped each way between two runs, and how many are in one only."""
        cursor = await self.db.execute(
            "SELECT a.outcome, b.outcome, COUNT(*) FROM evaluations a JOIN evaluations b"
            " ON b.run_id = ? AND b.case_id = a.case_id AND b.repeat = 0"
            " WHERE a.run_id = ? AND a.repeat = 0 GROUP BY a.outcome, b.outcome",
            (after, before),
        )
        tally = {"fixed": 0, "broke": 0, "changed": 0, "same": 0}
        both = 0
        for before_outcome, after_outcome, n in await cursor.fetchall():
            both += n
            key = (
                "same"
                if before_outcome == after_outcome
                else flip_of(before_outcome, after_outcome).value
            )
            tally[key] += n
        cursor = await self.db.execute(
            "SELECT run_id, COUNT(*) FROM evaluations WHERE run_id IN (?, ?) AND repeat = 0"
            " GROUP BY run_id",
            (before, after),
        )
        sizes = {run_id: n for run_id, n in await cursor.fetchall()}
        return FlipCounts(
            **tally,
            only_before=sizes.get(before, 0) - both,
            only_after=sizes.get(after, 0) - both,
        )

    async def results_page_sorted(
        self,
        flt: ResultFilter | None,
        sort: str,
        after: tuple[Any, int] | None = None,
        limit: int = 200,
        descending: bool = False,
    ) -> list[ResultRow]:
        """One page of results ordered by `sort` ("case", "outcome", "run"), then id.

        Keyset pagination on (that column, id): pass the last row's pair as `after`."""
        column = SORT_COLUMNS[sort]
        where, params = (flt or ResultFilter()).where()
        if after is not None:
            where += (" AND " if where else " WHERE ") + (
                f"({column}, e.id) {'<' if descending else '>'} (?, ?)"
            )
            params.extend(after)
        way = " DESC" if descending else ""
        cursor = await self.db.execute(
            "SELECT e.id, e.timestamp, e.model_name, e.run_id, e.app, e.case_id,"
            " e.expected_result, e.actual_result, e.outcome, e.latency_ms, e.cost,"
            " e.prompt_tokens, e.completion_tokens, e.repeat, e.suite_kind, e.reasons"
            f" FROM evaluations e{where} ORDER BY {column}{way}, e.id{way} LIMIT ?",
            [*params, limit],
        )
        return [cast(ResultRow, dict(row)) for row in await cursor.fetchall()]


# The columns the results browser sorts by (`Store.results_page_sorted`), by the row key.
SORT_COLUMNS = {"case_id": "e.case_id", "outcome": "e.outcome", "run_id": "e.run_id"}
