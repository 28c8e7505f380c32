"""The report on odd databases: imported legacy results, unreported costs, error-only runs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from secbench_tui.core.models import Completion, Evaluation, Outcome, RecordedSettings, Scored
from secbench_tui.core.results import exports
from secbench_tui.core.results.report.data import IMPORTED_SUITE
from secbench_tui.core.results.report.gathering import gather
from secbench_tui.core.results.report.rendering import render_html
from secbench_tui.core.store.database import Store
from tests.unit.test_report import CASES, add_run, by_model, make_case, tables


def legacy_database(path: Path) -> None:
    """A results.db of the original tool: seven columns, verdicts as the model wrote them."""
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE evaluations (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT,"
        " test_file TEXT, model_name TEXT, expected_result TEXT, actual_result TEXT,"
        " explanation TEXT)"
    )
    db.executemany(
        "INSERT INTO evaluations (timestamp, test_file, model_name, expected_result,"
        " actual_result, explanation) VALUES ('2024-01-01 10:00:00', ?, 'gpt-4', ?, ?, 'x')",
        [
            ("cases/shop/a-good.md", "good", "Good"),
            ("cases/shop/b-bad.md", "bad", "BAD"),
            ("cases/shop/c-bad.md", "Bad", "bad"),
            ("cases/shop/d-good.md", "good", "Bad"),
        ],
    )
    db.commit()
    db.close()


async def test_imported_verdicts_count_whatever_their_case(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    legacy_database(path)
    store = await Store.open(path)
    try:
        data = await gather(store)
    finally:
        await store.close()
    (c,) = data.contenders
    assert c.run.status == "imported"
    assert (c.stats["correct"], c.stats["wrong"]) == (3, 1)
    assert c.stats["confusion"] == {"tp": 2, "fp": 1, "tn": 1, "fn": 0}
    assert (c.stats["recall_bad"], c.stats["recall_good"]) == (1.0, 0.5)
    assert c.confusion == {
        "bad": {"bad": 2, "good": 0, "none": 0},
        "good": {"bad": 1, "good": 1, "none": 0},
    }
    html = render_html(data)
    row = by_model(tables(html)["overview-table"])["gpt-4"]
    assert row["Recall bad"] == "100.0%" and row["Precision"] == "66.7%"


async def test_no_price_per_correct_answer_when_some_costs_are_unknown(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "results.db")
    try:
        run_id = await add_run(store, "m/alpha", ["good", "bad", "bad", "good", "bad"])
        # a second model whose endpoint left the cost out of one reply
        cases = [make_case(*c) for c in CASES]
        other = await store.create_run(
            model="m/beta",
            suite_kind="markdown",
            suite_path="/suite",
            suite_hash="suitehash0123456789",
            prompt_hash="prompthash0123456789",
            settings=RecordedSettings(repeats=1),
            fingerprint="m/beta:/suite",
            tool_version="0.1.0",
            total_cases=len(cases),
        )
        for index, case in enumerate(cases):
            completion = Completion(
                text=f'{{"assessment": "{case.expected}"}}',
                latency_ms=100.0,
                cost=None if index == 0 else 0.001,
            )
            scored = Scored(actual=case.expected, outcome=Outcome.CORRECT)
            ev = Evaluation(
                run_id=other, case=case, repeat=0, index=index, completion=completion, scored=scored
            )
            await store.record(ev, f"{other}:{case.case_id}")
        await store.finish_run(other, "completed")
        data = await gather(store)
    finally:
        await store.close()
    figures = {c.run.id: c.stats for c in data.contenders}
    assert figures[run_id]["cost_per_correct"] == pytest.approx(0.001)
    assert figures[other]["cost"] == pytest.approx(0.004)  # four of five reported
    assert figures[other]["cost_missing"] == 1
    assert figures[other]["cost_per_correct"] is None  # 0.004 / 5 would flatter it
    ranking = by_model(tables(render_html(data))["overview-table"])
    assert ranking["m/beta"]["Cost"].startswith("≥") and ranking["m/beta"]["Per correct"] == "n/a"
    assert ranking["m/alpha"]["Cost"] == "$0.00500"


async def test_a_model_with_only_errors_is_reported_and_exported(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "results.db")
    try:
        await add_run(store, "m/down", ["ERR"] * 5)
        data = await gather(store)
    finally:
        await store.close()
    (c,) = data.contenders
    assert (c.stats["errors"], c.stats["accuracy"], c.stats["f1"]) == (5, 0.0, None)
    html = render_html(data)
    assert by_model(tables(html)["overview-table"])["m/down"]["Unparsed / errors"] == "0 / 5"
    junit = exports.to_junit(data)
    assert 'errors="5"' in junit and 'failures="0"' in junit


async def test_imported_results_beside_a_new_run_name_their_unknown_suite(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    legacy_database(path)
    store = await Store.open(path)
    try:
        await add_run(store, "gpt-4", ["good", "bad", "bad", "good", "bad"])
        data = await gather(store)
    finally:
        await store.close()
    assert len(data.suites) == 2
    html = render_html(data)
    assert "<code></code>" not in html and '<code class="path"></code>' not in html
    assert html.count(IMPORTED_SUITE) >= 2  # the verdict's heading, the table's column
    ranking = by_model(tables(html)["overview-table"])
    assert ranking["gpt-4 (run 1)"]["Suite"] == IMPORTED_SUITE
