"""Fill a database with many results quickly, through the store's own schema."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from secbench_tui.core.store.database import Store
from secbench_tui.core.store.values import text_hash

OUTCOMES = ("correct", "wrong", "unparsed", "error")
APPS = ("billing", "clinic", "shop", "warehouse")
CODE = "SELECT id, total FROM orders WHERE tenant_id = :tenant_id AND id = :id;"


async def fill_results(db: Path, count: int, runs: int = 4) -> int:
    """`count` results spread over `runs` runs; the schema comes from `Store.open`."""
    store = await Store.open(db)
    await store.close()
    conn = sqlite3.connect(db)
    try:
        case_hash = text_hash(CODE, "")
        conn.execute(
            "INSERT OR IGNORE INTO case_texts (hash, code, description) VALUES (?, ?, '')",
            (case_hash, CODE),
        )
        stamp = "2025-01-02T03:04:05.000Z"
        per_run = -(-count // runs)
        for run in range(runs):
            model = f"vendor/model-{run}"
            n = min(per_run, count - run * per_run)
            cursor = conn.execute(
                "INSERT INTO runs (model_name, suite_kind, suite_path, settings, started_at,"
                " finished_at, status, total_cases) VALUES (?, 'markdown', 'bench', ?, ?, ?,"
                " 'completed', ?)",
                (model, json.dumps({}), stamp, stamp, n),
            )
            run_id = cursor.lastrowid
            conn.executemany(
                "INSERT INTO evaluations (timestamp, test_file, model_name, expected_result,"
                " actual_result, explanation, run_id, suite_kind, app, case_id, case_index,"
                " outcome, raw_reply, prompt_tokens, completion_tokens, cost, latency_ms,"
                " case_hash) VALUES (?, ?, ?, ?, ?, ?, ?, 'markdown', ?, ?, ?, ?, ?, 10, 5,"
                " 0.0001, 800.0, ?)",
                (
                    (
                        stamp,
                        f"{APPS[i % 4]}/case-{i:06d}.md",
                        model,
                        "good" if i % 2 else "bad",
                        "bad",
                        f"explanation {i}",
                        run_id,
                        APPS[i % 4],
                        f"{APPS[i % 4]}/case-{i:06d}.md",
                        i,
                        OUTCOMES[i % 4],
                        json.dumps({"assessment": "bad", "explanation": f"explanation {i}"}),
                        case_hash,
                    )
                    for i in range(n)
                ),
            )
        conn.commit()
    finally:
        conn.close()
    return count
