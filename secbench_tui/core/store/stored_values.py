"""Values read back from a database, made the types the program writes, whatever the file holds.

SQLite is dynamically typed: a column declared REAL can hold text, an INTEGER column a blob, a
JSON column anything. A results file may come from another tool, an older version or a hand
edit, and one odd value must not crash the report, an export or a summary for the whole file.
The store passes every row it reads through `evaluation_row`, and every run through the
helpers here, so the code above it can rely on the declared types: text is `str`, counts are
`int`, costs and tokens are believable numbers (see `believable`) or None, `scores` is a JSON
object of numbers.
"""

from __future__ import annotations

import json
import math
from typing import Any, cast

from secbench_tui.core import believable
from secbench_tui.core.models import JSONObject
from secbench_tui.core.store.rows import ResultRow, VariantIdentity

_TEXT = (
    "timestamp", "test_file", "model_name", "expected_result", "actual_result", "explanation",
    "suite_kind", "app", "case_id", "outcome", "raw_reply", "error", "finish_reason",
    "served_model", "provider", "case_hash", "request_hash", "notes", "code", "description",
    "reasoning", "gold", "reasons", "messages",
    "fixed_code", "fix_outcome", "fix_reason", "fix_twin", "fix_detail",  # --task fix
    "exploit", "exploit_outcome", "exploit_reason", "exploit_proof",  # --prove-findings
)  # fmt: skip
_REQUIRED_TEXT = frozenset(
    ("timestamp", "test_file", "model_name", "expected_result", "suite_kind", "app", "case_id")
    + ("outcome",)
)
_COUNTS = ("case_index", "repeat")  # NOT NULL, 0 and up
_TOKENS = ("prompt_tokens", "completion_tokens", "reasoning_tokens")
MAX_INDEX = 10**9  # far more cases or repeats than any run has


def text(value: Any, required: bool = False) -> str | None:
    if value is None:
        return "" if required else None
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def whole(value: Any, low: int, high: int) -> int | None:
    """An int from low to high (a float that is a whole number counts), else None."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return None
    return value


def duration_ms(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) and 0 <= value < 1e12 else None


def json_object(value: Any) -> JSONObject:
    """A JSON object stored as text; anything else reads as empty."""
    try:
        data = json.loads(value) if isinstance(value, str | bytes) else None
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def scores(value: Any) -> str:
    """The `scores` column as the engine writes it: a JSON object of finite numbers."""
    kept = {
        str(k): float(v)
        for k, v in json_object(value).items()
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    }
    return json.dumps(kept, sort_keys=True)


# A row as the file holds it: any column, any value (another tool, an older version or damage
# may have written it); `evaluation_row` makes a `ResultRow` of it.
StoredRow = dict[str, object]


def evaluation_row(row: StoredRow) -> ResultRow:
    """One `evaluations` row (possibly joined with `case_texts`) with believable values."""
    clean = dict(row)
    for name in _TEXT:
        if name in clean:
            clean[name] = text(clean[name], name in _REQUIRED_TEXT)
    for name in _COUNTS:
        if name in clean:
            clean[name] = whole(clean[name], 0, MAX_INDEX) or 0
    for name in _TOKENS:
        if name in clean:
            clean[name] = believable.tokens(whole(clean[name], 0, believable.MAX_TOKENS))
    if "cost" in clean:
        clean["cost"] = believable.cost(clean["cost"])
    if "latency_ms" in clean:
        clean["latency_ms"] = duration_ms(clean["latency_ms"])
    if "attempts" in clean:
        clean["attempts"] = whole(clean["attempts"], 1, MAX_INDEX) or 1
    if "scoring_version" in clean:
        clean["scoring_version"] = whole(clean["scoring_version"], 0, MAX_INDEX)
    if "http_status" in clean:
        clean["http_status"] = whole(clean["http_status"], 100, 999)
    for name in ("id", "run_id", "reused_from"):
        if name in clean and clean[name] is not None:
            clean[name] = whole(clean[name], -(2**63), 2**63 - 1)
    if "scores" in clean:
        clean["scores"] = scores(clean["scores"])
    if "variant" in clean:
        clean["variant"] = variant(clean["variant"])
    if "fix_change_lines" in clean:
        clean["fix_change_lines"] = whole(clean["fix_change_lines"], 0, MAX_INDEX)
    for name in ("fix_secure", "fix_functional"):
        if name in clean:
            flag = whole(clean[name], 0, 1)
            clean[name] = None if flag is None else bool(flag)
    return cast(ResultRow, clean)


def variant(value: Any) -> VariantIdentity | None:
    """A rewritten case's identity as stored (JSON object text), or None for an original
    case or a value that is not such an object."""
    if not isinstance(value, str):
        return None
    try:
        data = json.loads(value)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("original"), str):
        return None
    if not isinstance(data.get("relation"), str):
        return None
    return cast(VariantIdentity, data)


# SQL for a believable cost, for sums made in the database (budgets, per-run totals).
BELIEVABLE_COST_SQL = (
    "CASE WHEN typeof(cost) IN ('integer', 'real') AND cost >= 0"
    f" AND cost <= {believable.MAX_COST_PER_REQUEST} THEN cost END"
)
