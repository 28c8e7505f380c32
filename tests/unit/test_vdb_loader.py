"""Loading VulDetectBench folders: cases, ids, settings, errors, baselines, prompts."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from vdb_fixtures import SHARED_VDB, make_case

from secbench_tui.core.models import SuiteKind
from secbench_tui.core.vuldetectbench.loader import (
    VulDetectBenchError,
    baseline_answer,
    is_vuldetectbench_dir,
    load_vuldetectbench,
)
from secbench_tui.core.vuldetectbench.task_scores import (
    aggregate_vuldetectbench,
    score_vuldetectbench,
)

TEST_SET = SHARED_VDB / "test"
DIGESTS = SHARED_VDB / "prompt-digests.jsonl"
SELECTION = "A.CWE-707:Improper Neutralization\nB.No Vulnerabilities\nC.CWE-15:External"


def _record(task: int, idx: str = "7", answer: str = "YES") -> dict[str, str]:
    record = {"idx": idx, "cwe": "119", "code": f"int main() {{ return {task}; }}"}
    record["answer"] = answer
    if task == 2:
        record["selection"] = SELECTION
        record["answer"] = "C.CWE-15:External|A.CWE-707:Improper Neutralization"
    if task >= 3:
        record["answer"] = "`return 3;`" if task > 3 else "main"
    return record


def _write(folder: Path, task: int, lines: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"task{task}_code.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def small_set(tmp_path: Path) -> Path:
    folder = tmp_path / "vdb"
    for task in range(1, 6):
        lines = [json.dumps(_record(task)), json.dumps(_record(task))]  # same idx twice
        _write(folder, task, lines)
    return folder


def test_recognises_a_folder_of_task_files(small_set: Path, tmp_path: Path) -> None:
    assert is_vuldetectbench_dir(small_set)
    assert not is_vuldetectbench_dir(tmp_path / "missing")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "SPEC.md").write_text("# Prompt\n")
    assert not is_vuldetectbench_dir(tmp_path / "other")
    assert not is_vuldetectbench_dir(small_set / "task1_code.jsonl")


def test_cases_are_identified_by_task_and_position(small_set: Path) -> None:
    cases = load_vuldetectbench(small_set, tasks=[3, 1])
    assert [c.case_id for c in cases] == ["task3/0", "task3/1", "task1/0", "task1/1"]
    first = cases[2]
    assert first.kind is SuiteKind.VULDETECTBENCH and first.app == "task1"
    assert first.expected == "YES" and first.structured is False
    assert first.test_file == str(small_set / "task1_code.jsonl")
    assert first.meta == {"task": 1, "pos": 0, "idx": "7", "cwe": "119", "method": None}
    assert [m.role for m in first.messages] == ["system", "user"]
    assert first.code == "int main() { return 1; }"


def test_methods_change_tasks_three_to_five_only(small_set: Path) -> None:
    plain = {c.case_id: c for c in load_vuldetectbench(small_set)}
    for method in ("cot", "few-shot"):
        for case in load_vuldetectbench(small_set, method=method):
            same = case.messages == plain[case.case_id].messages
            assert same == (case.meta["task"] <= 2), (method, case.case_id)
            assert case.meta["method"] == method


def test_task2_prompt_puts_the_options_before_the_code(small_set: Path) -> None:
    case = load_vuldetectbench(small_set, tasks=[2])[0]
    user = case.messages[1].content
    assert SELECTION + "int main()" in user
    assert case.meta["selection"] == SELECTION


def test_unknown_method_names_the_setting(small_set: Path) -> None:
    with pytest.raises(ValueError, match=r"--method 'fewshot'.*'cot' or 'few-shot'"):
        load_vuldetectbench(small_set, method="fewshot")


def test_unknown_task_names_the_setting(small_set: Path) -> None:
    with pytest.raises(VulDetectBenchError, match="--tasks 1,6"):
        load_vuldetectbench(small_set, tasks=[1, 6])


def test_missing_task_file_is_named(small_set: Path) -> None:
    (small_set / "task4_code.jsonl").unlink()
    assert len(load_vuldetectbench(small_set, tasks=[1, 5])) == 4
    with pytest.raises(VulDetectBenchError, match=r"task4_code\.jsonl: missing.*--tasks"):
        load_vuldetectbench(small_set)


def test_bad_json_line_is_named(tmp_path: Path) -> None:
    _write(tmp_path, 1, [json.dumps(_record(1)), "", '{"idx": "1", "code": '])
    with pytest.raises(VulDetectBenchError, match=r"task1_code\.jsonl:3: not valid JSON"):
        load_vuldetectbench(tmp_path, tasks=[1])


def test_missing_field_is_named(tmp_path: Path) -> None:
    _write(tmp_path, 2, [json.dumps({"idx": "1", "code": "x", "answer": "A.x|B.y"})])
    with pytest.raises(VulDetectBenchError, match=r"task2_code\.jsonl:1: field 'selection'"):
        load_vuldetectbench(tmp_path, tasks=[2])


def test_limit_keeps_the_first_cases_of_each_task(small_set: Path) -> None:
    for task in (2, 4):
        lines = [json.dumps(_record(task, idx=str(i))) for i in range(5)]
        _write(small_set, task, lines)
    cases = load_vuldetectbench(small_set, tasks=[2, 4, 1], limit=3)
    assert [c.case_id for c in cases] == [
        "task2/0", "task2/1", "task2/2", "task4/0", "task4/1", "task4/2", "task1/0", "task1/1",
    ]  # fmt: skip
    assert [c.meta["idx"] for c in cases[:3]] == ["0", "1", "2"]
    with pytest.raises(VulDetectBenchError, match="--limit 0"):
        load_vuldetectbench(small_set, limit=0)


def test_blank_lines_do_not_count_as_positions(tmp_path: Path) -> None:
    _write(tmp_path, 1, [json.dumps(_record(1, "a")), "", json.dumps(_record(1, "b"))])
    cases = load_vuldetectbench(tmp_path, tasks=[1])
    assert [(c.case_id, c.meta["idx"]) for c in cases] == [("task1/0", "a"), ("task1/1", "b")]


# --- baselines ---------------------------------------------------------------


def test_baselines_answer_in_the_asked_format(small_set: Path) -> None:
    rng = random.Random(1)
    cases = {c.meta["task"]: c for c in load_vuldetectbench(small_set)}
    assert baseline_answer(cases[1], "always-bad", rng) == "YES"
    assert baseline_answer(cases[1], "always-good", rng) == "NO"
    assert baseline_answer(cases[1], "random", rng) in {"YES", "NO"}
    assert baseline_answer(cases[2], "always-bad", rng) == "A."
    assert baseline_answer(cases[2], "always-good", rng) == "B."
    assert baseline_answer(cases[2], "random", rng) in {"A.", "B.", "C."}
    assert baseline_answer(cases[3], "always-bad", rng) == "`int` `main` `return`"
    assert baseline_answer(cases[4], "always-bad", rng) == "`int main() { return 4; }`"
    assert baseline_answer(cases[5], "always-good", rng) == "No vulnerable code."
    with pytest.raises(ValueError, match="always-bad"):
        baseline_answer(cases[1], "oracle", rng)


@pytest.mark.skipif(not TEST_SET.is_dir(), reason="needs ../shared/vuldetectbench")
def test_baselines_score_at_chance_on_the_real_test_set() -> None:
    cases = load_vuldetectbench(TEST_SET, tasks=[1, 2])
    rng = random.Random(5)
    summary = {
        policy: aggregate_vuldetectbench(
            (c.meta["task"], score_vuldetectbench(c, baseline_answer(c, policy, rng)))
            for c in cases
        )
        for policy in ("always-bad", "always-good", "random")
    }
    assert summary["always-bad"]["task1"]["accuracy"] == 0.5  # 500 YES, 500 NO
    assert summary["always-good"]["task1"]["f1"] == 0.0
    assert summary["always-good"]["task2"]["me"] == 0.0  # "No Vulnerabilities" is never gold
    assert 0.3 < summary["random"]["task1"]["accuracy"] < 0.7
    assert 0.2 < summary["random"]["task2"]["me"] < 0.6


def test_baseline_for_a_case_without_options() -> None:
    case = make_case(2, "B.x|C.y")
    assert baseline_answer(case, "always-bad", random.Random(0)) == "A."


# --- prompts: byte-identical to the library's --------------------------------


@pytest.mark.skipif(not DIGESTS.is_file(), reason="needs ../shared/vuldetectbench")
def test_all_prompts_match_the_library_digests() -> None:
    digest = {}
    for method in (None, "cot", "few-shot"):
        for case in load_vuldetectbench(TEST_SET, method=method):
            system, user = (m.content.encode("utf-8") for m in case.messages)
            digest[(case.meta["task"], method, case.meta["pos"])] = (
                hashlib.sha256(system).hexdigest(),
                hashlib.sha256(user).hexdigest(),
                case.expected,
                case.meta["idx"],
            )
    rows = [json.loads(line) for line in DIGESTS.read_text("utf-8").splitlines() if line]
    assert len(rows) == 5400
    wrong = [
        (r["task"], r["method"], r["pos"])
        for r in rows
        if digest.get((r["task"], r["method"], r["pos"]))
        != (r["system_sha256"], r["user_sha256"], r["answer"], r["id"])
    ]
    assert wrong == []
    assert len(digest) == 5400


def test_core_modules_do_not_import_textual_or_rich() -> None:
    code = (
        "import sys\n"
        "import secbench_tui.core.vuldetectbench.loader\n"
        "import secbench_tui.core.vuldetectbench.task_scores\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
