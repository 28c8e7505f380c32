"""The original security-bench evaluator's results.db, written as its final version writes it.

Its table (glideapps/security-bench `src/evaluator.ts`): the specification's seven columns with
its constraints (`timestamp` defaults to CURRENT_TIMESTAMP; `test_file`, `model_name`,
`expected_result` and `actual_result` NOT NULL), `request JSON` and `response JSON`, and
`eval_prompt`, added later with `default.txt` as its default. It INSERTs and SELECTs naming its
columns, through better-sqlite3 in rollback-journal mode; plain `sqlite3` plays it here.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CREATE = """
CREATE TABLE IF NOT EXISTS evaluations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  timestamp DATETIME DEFAULT CURRENT_TIMESTAMP,
  test_file TEXT NOT NULL,
  model_name TEXT NOT NULL,
  expected_result TEXT NOT NULL,
  actual_result TEXT NOT NULL,
  explanation TEXT,
  request JSON,
  response JSON
)
"""
ADD_PROMPT = "ALTER TABLE evaluations ADD COLUMN eval_prompt TEXT DEFAULT 'default.txt'"
COLUMNS = (
    "id",
    "timestamp",
    "test_file",
    "model_name",
    "expected_result",
    "actual_result",
    "explanation",
    "request",
    "response",
    "eval_prompt",
)
INSERT = (
    "INSERT INTO evaluations (test_file, model_name, expected_result, actual_result,"
    " explanation, request, response, eval_prompt) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
# how the original asks whether a case was already evaluated, and reads its results
ALREADY_DONE = (
    "SELECT id, actual_result, expected_result FROM evaluations"
    " WHERE test_file = ? AND model_name = ? AND eval_prompt = ?"
)
READ_ALL = f"SELECT {', '.join(COLUMNS)} FROM evaluations ORDER BY id"
SYSTEM = (
    "You are a security expert evaluating code for vulnerabilities. You will be given a "
    "database schema, security requirements, and a code fragment to analyze."
)


@dataclass(frozen=True)
class Row:
    """One result as the original records it."""

    test_file: str
    model: str
    expected: str
    actual: str
    prompt: str  # the prompt file's name, e.g. `default.txt`
    code: str
    served_model: str
    provider: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    explanation: str = "the query filters by tenant"

    @property
    def content(self) -> str:
        return json.dumps({"explanation": self.explanation, "assessment": self.actual})

    def request(self) -> str:
        return json.dumps(
            {
                "model": self.model,
                "messages": [
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": "Orders(id, tenant_id, total)."},
                    {"role": "user", "content": f"prompt {self.prompt}"},
                    {"role": "user", "content": self.code},
                ],
                "response_format": {"type": "json_schema", "json_schema": {"name": "x"}},
                "temperature": 0.1,
                "max_tokens": 30000,
            }
        )

    def response(self) -> str:
        return json.dumps(
            {
                "id": "gen-1",
                "provider": self.provider,
                "model": self.served_model,
                "object": "chat.completion",
                "choices": [
                    {
                        "logprobs": None,
                        "finish_reason": "stop",
                        "native_finish_reason": "stop",
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": self.content,
                            "refusal": None,
                            "reasoning": None,
                        },
                    }
                ],
                "usage": {
                    "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens,
                    "total_tokens": self.prompt_tokens + self.completion_tokens,
                    "cost": self.cost,
                },
            }
        )

    def values(self) -> tuple[Any, ...]:
        return (
            self.test_file,
            self.model,
            self.expected,
            self.actual,
            self.explanation,
            self.request(),
            self.response(),
            self.prompt,
        )


def create(path: Path) -> None:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(CREATE)
        conn.execute(ADD_PROMPT)
        conn.commit()


def append(path: Path, rows: Sequence[Row | tuple[Any, ...]]) -> None:
    """What the original does after each answer: one INSERT naming its columns."""
    with closing(sqlite3.connect(path, timeout=10)) as conn:
        conn.executemany(INSERT, [r.values() if isinstance(r, Row) else r for r in rows])
        conn.commit()


def read_all(path: Path) -> list[tuple[Any, ...]]:
    """Every row through the original's columns, as the original reads them."""
    with closing(sqlite3.connect(path, timeout=10)) as conn:
        return conn.execute(READ_ALL).fetchall()
