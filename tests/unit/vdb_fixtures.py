"""Shared helpers for the VulDetectBench tests: recorded replies and the real test set."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from secbench_tui.core.models import Case, SuiteKind

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "vdb"
SHARED_VDB = REPO.parent / "shared" / "vuldetectbench"


@cache
def outputs() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((FIXTURES / "outputs.json").read_text("utf-8"))
    return data


@cache
def library_results() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "library_results.json").read_text("utf-8"))
    return data


def case_for(entry: dict[str, Any]) -> Case:
    """A Case carrying what scoring reads: task, gold answer, task 2's options."""
    task = entry["task"]
    meta: dict[str, Any] = {"task": task, "pos": entry["pos"], "idx": entry["idx"]}
    if "selection" in entry:
        meta["selection"] = entry["selection"]
    return Case(
        kind=SuiteKind.VULDETECTBENCH,
        app=f"task{task}",
        case_id=f"task{task}/{entry['pos']}",
        test_file=f"task{task}_code.jsonl",
        expected=entry["gold"],
        code="",
        messages=(),
        structured=False,
        meta=meta,
    )


def make_case(task: int, expected: str, selection: str | None = None, code: str = "") -> Case:
    entry: dict[str, Any] = {"task": task, "pos": 0, "idx": "0", "gold": expected}
    if selection is not None:
        entry["selection"] = selection
    return replace(case_for(entry), **{"code": code})
