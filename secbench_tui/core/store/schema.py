"""The tables of a secbench-tui database as version 1 made them, and the result columns.

The `evaluations` table keeps the specification's seven columns with their names and meanings
and adds what reports, resuming and browsing need; later versions add columns through
`migrations.MIGRATIONS`. `EVAL_COLUMNS` is every column a result row is written with, in
order.
"""

from __future__ import annotations

import aiosqlite

SCHEMA_VERSION = 12

# A result's verified fix (`--task fix`, the `fixes` table), where a read of whole rows shows
# it (`ResultRow`'s fix keys), and what the figures need of it (reads without text).
FIX_SQL = (
    "x.fixed_code AS fixed_code, x.outcome AS fix_outcome, x.reason AS fix_reason,"
    " x.secure AS fix_secure, x.functional AS fix_functional, x.twin AS fix_twin,"
    " x.change_lines AS fix_change_lines, x.detail AS fix_detail"
)
FIX_FIGURES_SQL = "x.outcome AS fix_outcome, x.change_lines AS fix_change_lines"
FIX_JOIN = "LEFT JOIN fixes x ON x.evaluation_id = e.id"

SCHEMA_V1 = """
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

# What the endpoint's reply gave, and what asking it took: the same columns in the same order
# in the table and in the exports (`results.export_records.ExportedResult`, whose tests check it).
REPLY_COLUMNS = (
    "raw_reply",
    "error",
    "http_status",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
)
ASKING_COLUMNS = ("cost", "latency_ms", "attempts", "served_model", "provider")

EVAL_COLUMNS = (
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
    *REPLY_COLUMNS,
    *ASKING_COLUMNS,
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
ROW_SQL = "e.id, " + ", ".join(f"e.{column}" for column in EVAL_COLUMNS)


async def create_v1(db: aiosqlite.Connection) -> None:
    # statement by statement: executescript would commit the migration's transaction
    for statement in SCHEMA_V1.split(";"):
        if statement.strip():
            await db.execute(statement)
