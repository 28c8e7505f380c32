"""Every renderer survives any value a database can hold: a property test on real SQLite files.

A results file is shared, copied, migrated from other tools, or edited by hand; SQLite is
dynamically typed, so a REAL column can hold text, an INTEGER column a blob, a JSON column
garbage. Hypothesis fills every column of `runs`, `evaluations` and `case_texts` with arbitrary
values (control characters, huge, negative and infinite numbers, NULL where allowed, the wrong
type) in a real file, then renders what the user can ask for: the HTML report, every export,
and the run summaries of the headless runner and the terminal app. None may raise, and the
rows the app's results browser and comparison read come back believable.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from secbench_tui.core.results.exports import EXPORTERS
from secbench_tui.core.results.report.data import ReportError
from secbench_tui.core.results.report.gathering import gather
from secbench_tui.core.results.report.rendering import render_html
from secbench_tui.core.run.engine import RunSpec
from secbench_tui.core.run.events import RunFinished
from secbench_tui.core.run.record import run_summary
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.queries import SORT_COLUMNS
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.headless import format_summary
from secbench_tui.tui.widgets.run_end import summary_text

INT64 = st.integers(-(2**63), 2**63 - 1)
NUMBER = st.one_of(
    INT64,
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 0.5, -4e9, 1e300, -0.0, 2**62]),
)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=24)
# Values the program itself writes, so the renderers' interesting paths are reached too.
MEANINGFUL = st.sampled_from(
    [
        "good", "bad", "correct", "wrong", "unparsed", "error", "markdown", "vuldetectbench",
        "completed", "running", "stopped", "aborted", "imported", "interrupted", "{}", "[]",
        "null", '{"a": 1}', '{"apps": ["x"], "repeats": 3, "seed": -1}', '{"f1": 1e999}',
        '{"MAR": -2, "URS": "x"}', "task1/0", "task2/1", "task3/0", "task4/0", "task5/0",
        "task1", "YES", "NO", "A.x|B.y", "`x = 1;`", "2026-11-26T08:00:00.000Z", "app",
        "baseline/random", "m/a", "1", "-1", "1e999", "NaN", "\x1b[31m\r\n\x00", "shop/a.md",
    ]
)  # fmt: skip
ANY = st.one_of(st.none(), NUMBER, TEXT, st.binary(max_size=8), MEANINGFUL)
# NOT NULL columns: SQLite stores a NaN as NULL, so none there either
SOME = st.one_of(
    INT64, st.floats(allow_nan=False), TEXT, st.binary(max_size=8), MEANINGFUL, MEANINGFUL
)


def mostly(*values: Any) -> st.SearchStrategy[Any]:
    """Usually one of `values` (so reports have something to rank), sometimes anything."""
    return st.one_of(st.sampled_from(values), st.sampled_from(values), SOME)


KIND = mostly("markdown", "markdown", "vuldetectbench")
RUN_COLUMNS = {
    "model_name": mostly("m/a", "m/b", "baseline/random"), "suite_kind": KIND,
    "suite_path": SOME, "suite_hash": ANY, "prompt_hash": ANY,
    "settings": mostly("{}", '{"apps": ["x"], "repeats": 3}', '{"vdb_scoring": "library"}'),
    "fingerprint": SOME, "tool_version": ANY, "started_at": SOME, "finished_at": ANY,
    "status": mostly("completed", "stopped"), "total_cases": SOME, "message": ANY, "pid": ANY,
    "host": ANY, "prompt_name": ANY,
}  # fmt: skip
EVAL_COLUMNS = {
    "timestamp": SOME, "test_file": SOME, "model_name": SOME,
    "expected_result": mostly("good", "bad", "YES", "NO", "A.x|B.y", "`x = 1;`"),
    "actual_result": ANY, "explanation": ANY, "suite_kind": KIND, "app": mostly("shop", "blog"),
    "case_id": mostly("shop/a.md", "shop/b.md", "task1/0", "task2/0", "task3/0", "task4/0"),
    "case_index": SOME, "repeat": mostly(0, 1, 2),
    "outcome": mostly("correct", "wrong", "unparsed", "error"), "raw_reply": ANY,
    "error": ANY, "http_status": ANY, "finish_reason": ANY, "prompt_tokens": ANY,
    "completion_tokens": ANY, "cost": ANY, "latency_ms": ANY, "attempts": SOME,
    "served_model": ANY, "provider": ANY, "scores": SOME, "request_hash": ANY,
    "reused_from": ANY, "notes": ANY, "reasoning": ANY, "reasoning_tokens": ANY,
    "variant": ANY,
}  # fmt: skip
RUN_IDS = (1, 2, 3)
TEXT_HASHES = ("h1", "h2")

runs_strategy = st.lists(st.fixed_dictionaries(RUN_COLUMNS), min_size=3, max_size=3)
evaluation = st.fixed_dictionaries(
    {
        **EVAL_COLUMNS,
        "run_id": mostly(*RUN_IDS),
        "case_hash": st.one_of(st.sampled_from(TEXT_HASHES), ANY),
    }
)
texts = st.fixed_dictionaries({"code": SOME, "description": SOME})


def fill(db: Path, runs: list[dict[str, Any]], rows: list[dict[str, Any]], case_texts: list[Any]):
    """Write the values as they are: no foreign keys, no type checks (sqlite3 defaults)."""
    with closing(sqlite3.connect(db)) as conn:
        for run_id, run in enumerate(runs, start=1):
            columns = ["id", *run]
            conn.execute(
                f"INSERT INTO runs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                [run_id, *run.values()],
            )
        for text_hash, text in zip(TEXT_HASHES, case_texts, strict=False):
            conn.execute(
                "INSERT INTO case_texts (hash, code, description) VALUES (?, ?, ?)",
                (text_hash, text["code"], text["description"]),
            )
        for row in rows:
            conn.execute(
                f"INSERT OR REPLACE INTO evaluations ({', '.join(row)})"
                f" VALUES ({', '.join('?' * len(row))})",
                list(row.values()),
            )
        conn.commit()


async def create(db: Path) -> None:
    store = await Store.open(db)
    await store.close()


def believable_row(row: ResultRow) -> None:
    """What a screen gets from the store: text as text, numbers believable or unknown."""
    for name in ("case_id", "app", "model_name", "outcome", "expected_result"):
        assert isinstance(row.get(name), str), (name, row.get(name))
    cost = row.get("cost")
    assert cost is None or (isinstance(cost, float) and 0 <= cost <= 1000), cost
    for name in ("prompt_tokens", "completion_tokens"):
        tokens = row.get(name)
        assert tokens is None or (type(tokens) is int and 0 <= tokens <= 10**9), (name, tokens)
    latency = row.get("latency_ms")
    assert latency is None or isinstance(latency, float), latency


async def render_everything(db: Path) -> None:
    store = await Store.open(db)
    try:
        for selection in (None, list(RUN_IDS), *([r] for r in RUN_IDS)):
            try:
                data = await gather(store, selection)
            except ReportError:  # "nothing to report", a message for the user, is allowed
                continue
            render_html(data)
            for export in EXPORTERS.values():
                export(data)
        for sort in SORT_COLUMNS:
            for row in await store.results_page_sorted(None, sort, limit=50):
                believable_row(row)
        with closing(sqlite3.connect(db)) as conn:
            case_ids = [r[0] for r in conn.execute("SELECT DISTINCT case_id FROM evaluations")]
        for case_id in case_ids:
            for row in await store.case_answers(list(RUN_IDS), case_id):
                believable_row(row)
        spec = RunSpec(model="m/a", cases=[], suite_kind="markdown", suite_path="")
        for run in await store.runs():
            summary = await run_summary(spec, store, run.id, 1.0)
            for status, message in ((run.status, run.message), ("completed", None)):
                format_summary(summary, status, message)
                summary_text(RunFinished(run.id, status, message, summary))
    finally:
        await store.close()


@settings(
    max_examples=60,  # about 5 s; each example is a fresh database file
    deadline=None,
    database=None,  # no .hypothesis folder in the work tree
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    runs=runs_strategy,
    rows=st.lists(evaluation, min_size=1, max_size=10),
    case_texts=st.lists(texts, max_size=2),
)
def test_report_exports_and_summaries_render_any_stored_value(
    runs: list[dict[str, Any]], rows: list[dict[str, Any]], case_texts: list[Any]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "results.db"
        asyncio.run(create(db))
        fill(db, runs, rows, case_texts)
        asyncio.run(render_everything(db))


def test_budgets_and_run_totals_count_only_believable_costs(tmp_path: Path) -> None:
    """What `--resume --max-cost` starts from, and each run's cost in lists and reports."""
    db = tmp_path / "results.db"
    asyncio.run(create(db))
    costs = [-4e9, "free", float("inf"), 0.01, 2000.0, None, 0.02, b"\x00"]
    run = dict.fromkeys(RUN_COLUMNS, "x") | {"total_cases": 8, "status": "completed"}
    rows = [
        dict.fromkeys(EVAL_COLUMNS, "x")
        | {"run_id": 1, "case_id": f"c{i}", "repeat": 0, "cost": cost, "reused_from": None}
        for i, cost in enumerate(costs)
    ]
    fill(db, [run], rows, [])

    async def read() -> tuple[float, float]:
        store = await Store.open(db)
        try:
            (record,) = await store.runs()
            return await store.spent(1), record.cost
        finally:
            await store.close()

    spent, total = asyncio.run(read())
    assert spent == total == pytest.approx(0.03)
