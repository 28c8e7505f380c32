"""A case's `--rewrites` variants in the app's detail pane: the original and its variants side
by side with their verdicts, and the shown variant's diff from its original. The rows come
back from a real SQLite store, as the results screen reads them."""

from __future__ import annotations

from dataclasses import replace
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
from secbench_tui.core.rewrites.relations import Variant
from secbench_tui.core.store.database import Store
from secbench_tui.tui.widgets.case_detail import render_result

CODE = "SELECT u.id FROM users u WHERE u.org_id = :org;"
RENAMED = "SELECT t.id FROM users AS t WHERE t.org_id = :org;"


def _text(renderable: object) -> str:
    console = Console(width=120, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


async def test_variants_side_by_side_with_the_diff(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "results.db")
    run = await store.create_run(
        model="m",
        suite_kind="markdown",
        suite_path="suite",
        suite_hash="h",
        prompt_hash="p",
        settings=RecordedSettings(),
        fingerprint="f",
        tool_version="t",
        total_cases=3,
    )
    original = Case(
        kind=SuiteKind.MARKDOWN,
        app="a",
        case_id="a/s-01-good.md",
        test_file="a/s-01-good.md",
        expected="good",
        code=CODE,
    )
    other = replace(original, **{"case_id": "a/s-010-good.md"})  # not a variant of it
    variant = Variant(original, "alias-rename", 0, RENAMED).as_case(proven=True)
    for index, (case, said) in enumerate(((original, "good"), (other, "good"), (variant, "bad"))):
        outcome = Outcome.CORRECT if said == "good" else Outcome.WRONG
        await store.record(
            Evaluation(
                run_id=run,
                case=case,
                index=index,
                completion=Completion(text=said),
                scored=Scored(actual=said, outcome=outcome),
            ),
            request_hash=f"r{index}",
        )
    family = await store.case_family(run, "a/s-01-good.md")
    assert [r["case_id"] for r in family] == ["a/s-01-good.md", variant.case_id]
    shown = next(r for r in family if r.get("variant"))
    assert shown["variant"] is not None and shown["variant"]["relation"] == "alias-rename"
    text = _text(render_result(shown, None, family))
    await store.close()
    assert "rewrites of this case" in text and "alias-rename" in text and "proven" in text
    assert "diff from the original" in text
    assert f"-{CODE}" in text and f"+{RENAMED}" in text
    assert "wrong" in text and "correct" in text
    plain = _text(render_result(family[0], None, family))
    assert "rewrites of this case" in plain and "diff from the original" not in plain
