"""The Python API: library-style scripts run through our engine and store."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from secbench_tui.core.store.database import Store
from secbench_tui.vuldetectbench import Agent, Tasks, VulDetectBench_Engine

SELECTION = "A.No Vulnerabilities\nB.CWE-121:Stack Overflow\nC.CWE-476:NULL Pointer"


def _write_set(folder: Path) -> Path:
    folder.mkdir()
    records = {
        1: [{"answer": "YES"}, {"answer": "NO"}, {"answer": "YES"}],
        2: [{"answer": "B.CWE-121:Stack Overflow|C.CWE-476:NULL Pointer", "selection": SELECTION}],
        3: [{"answer": "strcpy buf"}],
        4: [{"answer": "`strcpy(buf, src);`"}],
        5: [{"answer": "`free(p);`"}],
    }
    for task, rows in records.items():
        lines = [
            json.dumps({"idx": str(i), "cwe": "121", "code": "void f() {}", **row})
            for i, row in enumerate(rows)
        ]
        (folder / f"task{task}_code.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    return folder


class Oracle(Agent):
    """Answers from a table keyed by the question, 'YES' to task 1; raises when told to."""

    def __init__(self, fail_on: str | None = None) -> None:
        super().__init__()
        self.calls = 0
        self.fail_on = fail_on

    def __call__(self, prompt: dict[str, str]) -> str:
        self.calls += 1
        user = prompt["user"]
        assert prompt["system"]
        if self.fail_on and self.fail_on in user:
            raise RuntimeError("model overloaded")
        if user.startswith("Is the code vulnerable"):
            return "YES"
        if user.startswith("What is the vulnerability type"):
            return "B."
        if user.startswith("What data objects"):
            return "`strcpy` and `buf`"
        if user.startswith("Which line of code is the root cause"):
            return "`strcpy(buf, src);`"
        return "The trigger is here."


def test_a_library_style_script_runs_and_saves_the_report(tmp_path: Path) -> None:
    data = _write_set(tmp_path / "vdb")
    agent = Oracle()
    tasks = Tasks(data_dir=str(data), task_no=None, method=None)
    engine = VulDetectBench_Engine(
        model=agent,
        task_and_metrics=tasks,
        save_path=str(tmp_path / "out"),
        verbose=True,
        db=tmp_path / "results.db",
    )
    returned = engine.run()
    saved = json.loads((tmp_path / "out" / "evaluation_report.json").read_text("utf-8"))
    assert saved == returned and agent.calls == 7
    by_name = {repo["task name"]: repo for repo in saved}
    task1 = by_name["Vulnerability Existence Detection"]
    assert task1["overall metrics"] == [{"Accuracy": 2 / 3}, {"F1-Score": 0.8}]
    assert [s["metrics"][0]["score"] for s in task1["verbose"]] == [1.0, 0.0, 1.0]
    assert by_name["Vulnerability Type Inference"]["overall metrics"] == [
        {"Avg Moderate Evaluation Score": 1.0},
        {"Avg Strict Evaluation Score": 1.0},
    ]
    assert by_name["Key Objects & Functions Identification"]["overall metrics"][0] == {
        "Macro Token Recall": 1.0
    }
    assert by_name["Root Cause Location"]["overall metrics"][0] == {"Avg Union Line Recall": 1.0}
    trigger = by_name["Trigger Point Location"]
    assert trigger["verbose"][0]["outcome"] == "unparsed"
    assert trigger["run"]["unparsed"] == 1

    async def stored() -> tuple[int, str]:
        store = await Store.open(tmp_path / "results.db")
        try:
            assert engine.run_id is not None
            rows = await store.run_results(engine.run_id)
            return len(rows), rows[0]["model_name"]
        finally:
            await store.close()

    assert asyncio.run(stored()) == (7, "agent/Oracle")


def test_agent_failures_are_recorded_not_raised(tmp_path: Path) -> None:
    data = _write_set(tmp_path / "vdb")
    engine = VulDetectBench_Engine(
        model=Oracle(fail_on="vulnerability type"),
        task_and_metrics=Tasks(data_dir=data, task_no=[1, 2]),
        verbose=False,
        save_path=tmp_path / "out",
        db=tmp_path / "results.db",
        scoring="library",
    )
    short = engine.run()
    assert short["Vulnerability Type Inference"] == [
        {"Avg Moderate Evaluation Score": 0.0},
        {"Avg Strict Evaluation Score": 0.0},
    ]
    with closing(sqlite3.connect(tmp_path / "results.db")) as conn:
        recorded = conn.execute("SELECT case_id, outcome, error FROM evaluations").fetchall()
    assert [(c, o) for c, o, _ in recorded if o == "error"] == [("task2/0", "error")]
    assert "RuntimeError: model overloaded" in next(e for _, o, e in recorded if o == "error")


def test_bad_settings_fail_early(tmp_path: Path) -> None:
    data = _write_set(tmp_path / "vdb")
    with pytest.raises(ValueError, match="--method"):
        Tasks(data_dir=data, task_no=3, method="zero-shot")
    with pytest.raises(ValueError, match="tasks 1 to 5"):
        Tasks(data_dir=data, task_no=[0, 6])
    with pytest.raises(ValueError, match="data_dir"):
        Tasks(task_no=1)
    with pytest.raises(ValueError, match="--vdb-scoring"):
        VulDetectBench_Engine(Oracle(), Tasks(data_dir=data, task_no=1), scoring="paper")


async def test_runs_from_inside_an_event_loop(tmp_path: Path) -> None:
    data = _write_set(tmp_path / "vdb")
    engine = VulDetectBench_Engine(
        Oracle(), Tasks(data_dir=data, task_no=1), verbose=False, db=tmp_path / "r.db"
    )
    report = engine.run()
    assert report == {"Vulnerability Existence Detection": [{"Accuracy": 2 / 3}, {"F1-Score": 0.8}]}


def test_a_task_without_samples_fails_early_instead_of_scoring_zero(tmp_path: Path) -> None:
    data = _write_set(tmp_path / "vdb")
    (data / "task3_code.jsonl").write_text("\n", "utf-8")
    with pytest.raises(ValueError, match=r"task3_code\.jsonl.*no samples"):
        Tasks(data_dir=data, task_no=[1, 3])
    assert len(Tasks(data_dir=data, task_no=1).cases) == 3  # the other tasks still load


def test_an_agent_that_always_raises_still_gets_a_report(tmp_path: Path) -> None:
    data = _write_set(tmp_path / "vdb")
    engine = VulDetectBench_Engine(
        Oracle(fail_on="Is the code vulnerable"),
        Tasks(data_dir=data, task_no=1),
        save_path=tmp_path / "missing" / "deeper",
        db=tmp_path / "results.db",
    )
    (task1,) = engine.run()
    assert task1["run"]["errors"] == 3 and task1["overall metrics"][0] == {"Accuracy": 0.0}
    saved = json.loads((tmp_path / "missing" / "deeper" / "evaluation_report.json").read_text())
    assert [s["outcome"] for s in saved[0]["verbose"]] == ["error"] * 3
