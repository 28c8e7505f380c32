"""Databases the original security-bench evaluator wrote, adopted in place.

The original (glideapps/security-bench) keeps one table, `evaluations`: the specification's
seven columns and, in its final version, `eval_prompt` (the prompt file's name), `request`
and `response` (the bodies as JSON). It reads and appends to that table by column name, so
secbench-tui leaves the table where it is, with every column, value and id, and adds its own
columns beside them: the original still opens the file and appends to it. A copy of the file
as it was is written beside it before the first change.

A row the original wrote has no run (`run_id IS NULL`) until it is imported, which happens on
every open: it joins the imported run of its model and `eval_prompt` (whose file name without
its extension is the run's prompt name), its outcome is computed from the verdicts it holds,
and its `request` and `response` are read for the code asked about, the raw reply, tokens,
cost, provider, served model and finish reason. JSON that cannot be read is kept as it is and
the row says so in `error`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import aiosqlite

from secbench_tui.core.models import ChatRequest, JSONObject
from secbench_tui.core.store.values import now_iso, storable, text_hash
from secbench_tui.core.usage import Reasoning, Usage

BACKUP_SUFFIX = ".bak-before-secbench-tui"
IMPORTED_MESSAGE = "imported from a security-bench results.db"
ORIGINAL_EXTRAS = ("eval_prompt", "request", "response")  # the original's final version

# Our columns of schema version 1, as added beside the original's. `run_id` stays NULL on the
# rows the original writes until they are imported; the rest have the defaults our table has.
_OUR_COLUMNS: tuple[tuple[str, str], ...] = (
    ("timestamp", "DATETIME"),
    ("test_file", "TEXT"),
    ("model_name", "TEXT"),
    ("expected_result", "TEXT"),
    ("actual_result", "TEXT"),
    ("explanation", "TEXT"),
    ("run_id", "INTEGER REFERENCES runs(id)"),
    ("suite_kind", "TEXT NOT NULL DEFAULT 'markdown'"),
    ("app", "TEXT NOT NULL DEFAULT ''"),
    ("case_id", "TEXT"),
    ("case_index", "INTEGER NOT NULL DEFAULT 0"),
    ("repeat", "INTEGER NOT NULL DEFAULT 0"),
    ("outcome", "TEXT"),
    ("raw_reply", "TEXT"),
    ("error", "TEXT"),
    ("http_status", "INTEGER"),
    ("finish_reason", "TEXT"),
    ("prompt_tokens", "INTEGER"),
    ("completion_tokens", "INTEGER"),
    ("cost", "REAL"),
    ("latency_ms", "REAL"),
    ("attempts", "INTEGER NOT NULL DEFAULT 1"),
    ("served_model", "TEXT"),
    ("provider", "TEXT"),
    ("scores", "TEXT NOT NULL DEFAULT '{}'"),
    ("case_hash", "TEXT REFERENCES case_texts(hash)"),
    ("request_hash", "TEXT"),
    ("reused_from", "INTEGER"),
)

_CHUNK = 500


async def _columns(db: aiosqlite.Connection) -> dict[str, tuple[bool, Any]]:
    """The evaluations table's columns: name -> (NOT NULL, default)."""
    cursor = await db.execute("PRAGMA table_info(evaluations)")
    return {row[1]: (bool(row[3]), row[4]) for row in await cursor.fetchall()}


async def unadopted(db: aiosqlite.Connection) -> bool:
    """True for a file the original wrote that secbench-tui has not changed yet."""
    cursor = await db.execute("PRAGMA user_version")
    row = await cursor.fetchone()
    if row is None or int(row[0]) != 0:
        return False
    cursor = await db.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='evaluations'"
    )
    return await cursor.fetchone() is not None


def backup_path(path: Path, now: datetime | None = None) -> Path:
    """`<db>.bak-before-secbench-tui`, or with the time added when that file exists."""
    first = path.with_name(path.name + BACKUP_SUFFIX)
    if not first.exists():
        return first
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")
    return path.with_name(f"{first.name}-{stamp}")


async def back_up(db: aiosqlite.Connection, path: Path) -> Path:
    """Copy the file beside itself before anything in it changes; returns the copy's path.

    The caller holds the write lock (`BEGIN IMMEDIATE`) and has checked, under it, that the
    file is still the original's: nobody writes during the copy, and of several processes
    opening the same file at once exactly one copies it. The file is read through a second
    SQLite connection, never opened directly: closing any descriptor of a file drops every
    POSIX lock this process holds on it, the write lock included, and SQLite alone knows to
    keep a descriptor open while its locks are held. A file in rollback-journal mode (how the
    original leaves it) is copied byte for byte (`serialize`); a WAL file with SQLite's backup
    API, so the copy includes what the log holds.
    """
    target = backup_path(path)
    partial = target.with_name(target.name + ".partial")
    cursor = await db.execute("PRAGMA journal_mode")
    row = await cursor.fetchone()
    wal = row is not None and str(row[0]).lower() == "wal"
    await asyncio.to_thread(_copy, path, partial, wal)
    partial.replace(target)
    return target


def _copy(path: Path, partial: Path, wal: bool) -> None:
    import sqlite3

    source = sqlite3.connect(path)
    try:
        if not wal:
            partial.write_bytes(source.serialize())
            return
        copy = sqlite3.connect(partial)
        try:
            source.backup(copy)
        finally:
            copy.close()
    finally:
        source.close()


async def add_our_columns(db: aiosqlite.Connection) -> None:
    """Schema version 0 -> 1 for the original's table: our columns beside its own."""
    have = await _columns(db)
    if "id" not in have:
        raise ValueError("its evaluations table has no id column")
    for name, declaration in _OUR_COLUMNS:
        if name not in have:
            await db.execute(f"ALTER TABLE evaluations ADD COLUMN {name} {declaration}")
    # our table's UNIQUE (run_id, case_id, repeat); rows not yet imported (NULL) never clash
    await db.execute(
        "CREATE UNIQUE INDEX IF NOT EXISTS ux_eval_case ON evaluations (run_id, case_id, repeat)"
    )


# --- reading what a row of the original kept ---------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """What a row's `request` and `response` columns say, and what in them could not be read."""

    code: str | None = None
    raw_reply: str | None = None
    http_status: int | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    served_model: str | None = None
    provider: str | None = None
    reasoning: str | None = None
    reasoning_tokens: int | None = None
    unreadable: str | None = None


def _json(value: Any) -> tuple[Any, str | None]:
    """(the parsed value, None) or (None, why not); NULL is (None, None)."""
    if value is None:
        return None, None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return None, f"holds a {type(value).__name__}, not JSON"
    try:
        return json.loads(value), None
    except RecursionError:
        return None, "is JSON nested too deeply to read"
    except ValueError as exc:
        return None, f"is not JSON ({str(exc)[:80]})"


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        return "".join(str(p.get("text", "")) for p in value if isinstance(p, dict))
    return None


def _reply_text(choice: JSONObject) -> str | None:
    """Where the original looked for the reply, in its order."""
    message = choice.get("message")
    message = message if isinstance(message, dict) else {}
    for value in (message.get("content"), choice.get("content"), choice.get("text")):
        if _text(value):
            return _text(value)
    return _text(message.get("text")) or _text(message.get("content"))


def _code(request: Any) -> str | None:
    """The code asked about: the request's last message (the original sends it last)."""
    messages = request.get("messages") if isinstance(request, dict) else None
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        return _text(messages[-1].get("content"))
    return None


def read_exchange(request: Any, response: Any) -> Exchange:
    """Read a row's request and response bodies; whatever is unreadable is named, not fatal."""
    problems: list[str] = []
    sent, why = _json(request)
    if why:
        problems.append(f"request {why}")
    got, why = _json(response)
    if why:
        problems.append(f"response {why}")
    exchange = Exchange(code=_code(sent))
    if isinstance(got, dict):
        usage = Usage.of(got)
        choices = got.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if isinstance(choice, dict):
            finish = choice.get("finish_reason") or choice.get("native_finish_reason")
            reasoning = Reasoning.of(got, choice.get("message"))
            exchange = replace(
                exchange,
                raw_reply=_reply_text(choice),
                finish_reason=finish if isinstance(finish, str) else None,
                reasoning=reasoning.text,
                reasoning_tokens=reasoning.tokens,
            )
        else:
            problems.append("response has no choices")
        exchange = replace(
            exchange,
            http_status=200,  # the original kept only replies it could read
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost=usage.cost,
            served_model=usage.served_model,
            provider=usage.provider,
        )
    elif got is not None:
        problems.append("response is not a JSON object")
    if response is not None and exchange.raw_reply is None:
        # the body as it was, as for a reply of ours that could not be read
        body = response.decode("utf-8", "replace") if isinstance(response, bytes) else response
        exchange = replace(exchange, raw_reply=storable(str(body)))
    if problems:
        exchange = replace(exchange, unreadable="imported: the " + "; the ".join(problems))
    return exchange


def prompt_name_of(eval_prompt: Any) -> str | None:
    """`default.txt` -> `default`: a prompt file's name as our prompts are named."""
    if eval_prompt is None or str(eval_prompt).strip() == "":
        return None
    return PurePosixPath(str(eval_prompt).replace("\\", "/")).stem or str(eval_prompt)


def eval_prompt_of(prompt_name: str | None) -> str | None:
    """What the original would write for one of our prompts: its file name."""
    return f"{prompt_name}.txt" if prompt_name else None


def _label(value: Any) -> str | None:
    return str(value).strip().lower() if value is not None else None


def outcome_of(expected: Any, actual: Any) -> str:
    """The verdicts as the original wrote them, read whatever their case."""
    said = _label(actual)
    if said not in ("good", "bad"):
        return "unparsed"
    return "correct" if said == _label(expected) else "wrong"


def case_of(test_file: Any) -> tuple[str, str]:
    """(app, case id) of a test file path: `.../tests/shop/a.md` is app `shop`, case
    `shop/a.md`, as a suite read by secbench-tui names the same case."""
    if test_file is None:
        return "", ""
    parts = PurePosixPath(str(test_file).replace("\\", "/")).parts
    return (parts[-2] if len(parts) > 1 else ""), "/".join(parts[-2:])


# --- importing rows the original wrote ---------------------------------------------------


async def has_new_rows(db: aiosqlite.Connection) -> bool:
    cursor = await db.execute("SELECT 1 FROM evaluations WHERE run_id IS NULL LIMIT 1")
    return await cursor.fetchone() is not None


@dataclass
class _ImportedRun:
    id: int
    repeats: dict[str, int]  # next repeat per case id


async def _imported_run(
    db: aiosqlite.Connection, model: str, eval_prompt: Any, has_prompt: bool
) -> _ImportedRun:
    """The imported run of this model and prompt file, made on first need."""
    settings = json.dumps(
        {"eval_prompt": None if eval_prompt is None else str(eval_prompt)} if has_prompt else {},
        sort_keys=True,
    )
    cursor = await db.execute(
        "SELECT id FROM runs WHERE status='imported' AND model_name=? AND settings=?"
        " ORDER BY id LIMIT 1",
        (model, settings),
    )
    row = await cursor.fetchone()
    if row is None:
        now = now_iso()
        cursor = await db.execute(
            "INSERT INTO runs (model_name, suite_kind, suite_path, settings, started_at,"
            " finished_at, status, total_cases, message, prompt_name)"
            " VALUES (?, 'markdown', '', ?, ?, ?, 'imported', 0, ?, ?)",
            (model, settings, now, now, IMPORTED_MESSAGE, prompt_name_of(eval_prompt)),
        )
        assert cursor.lastrowid is not None
        return _ImportedRun(cursor.lastrowid, {})
    cursor = await db.execute(
        "SELECT case_id, MAX(repeat) + 1 FROM evaluations WHERE run_id=? GROUP BY case_id",
        (row[0],),
    )
    return _ImportedRun(int(row[0]), {r[0]: int(r[1]) for r in await cursor.fetchall()})


_UPDATE = (
    "UPDATE evaluations SET run_id=?, app=?, case_id=?, case_index=?, repeat=?, outcome=?,"
    " raw_reply=?, error=?, http_status=?, finish_reason=?, prompt_tokens=?,"
    " completion_tokens=?, cost=?, served_model=?, provider=?, case_hash=?, reasoning=?,"
    " reasoning_tokens=? WHERE id=?"
)


async def import_new_rows(db: aiosqlite.Connection) -> int:
    """Give every row the original wrote since the last open its run and our columns.

    Runs inside the caller's transaction; returns how many rows were imported.
    """
    have = await _columns(db)
    extras = [c for c in ORIGINAL_EXTRAS if c in have]
    select = ", ".join(
        ["id", "timestamp", "test_file", "model_name", "expected_result", "actual_result"] + extras
    )
    runs: dict[tuple[str, Any], _ImportedRun] = {}
    touched: set[int] = set()
    count, after = 0, -(2**63)
    while True:
        cursor = await db.execute(
            f"SELECT {select} FROM evaluations WHERE run_id IS NULL AND id > ? ORDER BY id"
            f" LIMIT {_CHUNK}",
            (after,),
        )
        rows = [
            dict(zip([d[0] for d in cursor.description], r, strict=True))
            for r in await cursor.fetchall()
        ]
        if not rows:
            break
        updates = [await _update(db, row, runs, "eval_prompt" in extras) for row in rows]
        await db.executemany(_UPDATE, updates)
        touched |= {u[0] for u in updates}
        count += len(rows)
        after = rows[-1]["id"]
    await _refresh_runs(db, sorted(touched))
    return count


async def _update(
    db: aiosqlite.Connection,
    row: JSONObject,
    runs: dict[tuple[str, Any], _ImportedRun],
    has_prompt: bool,
) -> tuple[Any, ...]:
    model = "" if row["model_name"] is None else str(row["model_name"])
    key = (model, row.get("eval_prompt"))
    if key not in runs:
        runs[key] = await _imported_run(db, model, row.get("eval_prompt"), has_prompt)
    run = runs[key]
    app, case_id = case_of(row["test_file"])
    repeat = run.repeats.get(case_id, 0)
    run.repeats[case_id] = repeat + 1
    seen = read_exchange(row.get("request"), row.get("response"))
    case_hash = None
    if seen.code is not None:
        case_hash = text_hash(seen.code, "")
        await db.execute(
            "INSERT OR IGNORE INTO case_texts (hash, code, description) VALUES (?, ?, '')",
            (case_hash, storable(seen.code)),
        )
    return (
        run.id,
        storable(app),
        storable(case_id),
        row["id"],
        repeat,
        outcome_of(row["expected_result"], row["actual_result"]),
        storable(seen.raw_reply),
        seen.unreadable,
        seen.http_status,
        storable(seen.finish_reason),
        seen.prompt_tokens,
        seen.completion_tokens,
        seen.cost,
        storable(seen.served_model),
        storable(seen.provider),
        case_hash,
        storable(seen.reasoning),
        seen.reasoning_tokens,
        row["id"],
    )


async def _refresh_runs(db: aiosqlite.Connection, run_ids: Sequence[int]) -> None:
    """An imported run's size and times are those of its rows."""
    for run_id in run_ids:
        await db.execute(
            "UPDATE runs SET total_cases=(SELECT COUNT(*) FROM evaluations WHERE run_id=:r),"
            " started_at=COALESCE((SELECT MIN(timestamp) FROM evaluations WHERE run_id=:r),"
            " started_at), finished_at=COALESCE((SELECT MAX(timestamp) FROM evaluations"
            " WHERE run_id=:r), finished_at) WHERE id=:r",
            {"r": run_id},
        )


# --- writing our rows into the original's table ------------------------------------------


@dataclass(frozen=True)
class WriteLayout:
    """How a row of ours must be written into the original's table so both tools read it.

    The original declared some columns NOT NULL without a default (`actual_result`, in its
    later versions): where we have nothing to say (an error, an unreadable reply) we write "".
    Our rows name their prompt file in `eval_prompt`, as the original's rows do.
    """

    required: frozenset[str] = frozenset()
    eval_prompt: bool = False
    request: bool = False  # the original's final version kept each request's body

    def row(
        self, columns: Sequence[str], values: Sequence[Any], prompt_name: str | None
    ) -> tuple[list[str], list[Any]]:
        names, cells = list(columns), list(values)
        if self.eval_prompt:
            names.append("eval_prompt")
            cells.append(eval_prompt_of(prompt_name))
        for name in sorted(self.required - set(names)):
            names.append(name)
            cells.append(None)
        cells = [
            "" if cell is None and name in self.required else cell
            for name, cell in zip(names, cells, strict=True)
        ]
        return names, cells


async def write_layout(db: aiosqlite.Connection) -> WriteLayout | None:
    """The layout of an adopted table (one where `run_id` may be NULL), else None."""
    have = await _columns(db)
    if "run_id" not in have or have["run_id"][0]:
        return None  # our own table
    required = frozenset(
        name for name, (not_null, default) in have.items() if not_null and default is None
    ) - {"id"}
    return WriteLayout(
        required=required, eval_prompt="eval_prompt" in have, request="request" in have
    )


def same_request(stored: Any, body: ChatRequest) -> bool:
    """Whether a row's stored `request` is `body`: the same model, messages and parameters
    (compared as JSON values, so key order and spacing do not count)."""
    sent, why = _json(stored)
    return why is None and sent == body
