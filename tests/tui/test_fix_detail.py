"""A verified fix in the app's detail pane: the outcome, why, the failing parameter set with
its rows, and the fix's diffs from the bad case and from its nearest compliant twin. The row
comes back from a real SQLite store, as the results screen reads it."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from secbench_tui.core.models import (
    Case,
    Completion,
    Evaluation,
    Outcome,
    RecordedSettings,
    Scored,
    SuiteKind,
)
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.fixes import StoredFix
from secbench_tui.tui.widgets.case_detail import render_result

BAD = "SELECT id, total FROM orders\nWHERE id = :id;"
TWIN = "SELECT id, total FROM orders\nWHERE id = :id\n  AND tenant = :t;"
FIX = "SELECT id FROM orders\nWHERE id = :id\n  AND tenant = :t;"


def _text(renderable: object) -> str:
    console = Console(width=140, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


async def test_a_fix_shows_why_it_is_not_proven_and_its_two_diffs(tmp_path: Path) -> None:
    app = tmp_path / "suite" / "shop"
    app.mkdir(parents=True)
    (app / "orders-01-good.md").write_text(f"# Code\n```sql\n{TWIN}\n```\n\n# Expected\ngood\n")
    bad_file = app / "orders-02-bad.md"
    bad_file.write_text(f"# Code\n```sql\n{BAD}\n```\n\n# Expected\nbad\n")
    store = await Store.open(tmp_path / "results.db")
    run = await store.create_run(
        model="m",
        suite_kind="markdown",
        suite_path=str(tmp_path / "suite"),
        suite_hash="h",
        prompt_hash="p",
        settings=RecordedSettings(task="fix"),
        fingerprint="f",
        tool_version="t",
        total_cases=1,
    )
    case = Case(
        kind=SuiteKind.MARKDOWN,
        app="shop",
        case_id="shop/orders-02-bad.md",
        test_file=str(bad_file),
        expected="bad",
        code=BAD,
    )
    await store.record(
        Evaluation(
            run_id=run,
            case=case,
            completion=Completion(text=json.dumps({"fixed_code": FIX})),
            scored=Scored(actual="bad", outcome=Outcome.CORRECT),
        ),
        request_hash="r",
    )
    (row,) = await store.run_results(run)
    detail = {
        "broken": {
            "set": 1,
            "params": {"id": 1, "t": 1},
            "why": "the result rows differ (its twin shop/orders-01-good.md)",
            "violations": [],
            "rows": [{"id": 1}],
            "twin_rows": [{"id": 1, "total": "\x1b[2J10"}],  # foreign text, made inert
        }
    }
    await store.record_fixes(
        [
            StoredFix(
                evaluation_id=int(row["id"]),
                fixed_code=FIX,
                outcome="secure but broken",
                reason="broken on parameter set 1: the result rows differ",
                secure=True,
                functional=False,
                twin="shop/orders-01-good.md",
                change_lines=2,
                detail=json.dumps(detail),
                fixing_version=1,
                fixed_at="now",
            )
        ]
    )
    shown = await store.result(int(row["id"]))
    await store.close()
    assert shown is not None and shown["fix_outcome"] == "secure but broken"
    text = _text(render_result(shown))
    assert "fix (verified on PostgreSQL)" in text
    assert "secure but broken: secure yes, functional no" in text
    assert 'differs from the twin on parameter set 1 {"id": 1, "t": 1}' in text
    assert "the twin returned" in text and "\x1b" not in text
    assert "fix: diff from the bad case" in text
    assert "-SELECT id, total FROM orders" in text and "+SELECT id FROM orders" in text
    assert "fix: diff from its nearest compliant twin, shop/orders-01-good.md" in text
    assert "changes 2 lines of the bad case" in text
