"""Files a suite links to from outside its folder are never read: skipped, with their names.

Real symlinks on a real file system; the secret file's content must not reach a case.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from secbench_tui.core.suites.markdown import SuiteError, load_markdown_suite
from secbench_tui.core.vuldetectbench.loader import VulDetectBenchError, load_vuldetectbench

SECRET = "TOP-SECRET-ssh-key-material"
CASE = "# Code\n```sql\nSELECT {body};\n```\n# Expected\n{label}\n"


def case_text(body: str, label: str = "bad") -> str:
    return CASE.format(body=body, label=label)


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A suite with one ordinary app, and a folder outside it holding a secret case and app."""
    suite, elsewhere = tmp_path / "suite", tmp_path / "elsewhere"
    (suite / "shop").mkdir(parents=True)
    (suite / "shop" / "SPEC.md").write_text("# Prompt\nThe shop.\n", encoding="utf-8")
    (suite / "shop" / "a-bad.md").write_text(case_text("1"), encoding="utf-8")
    (elsewhere / "app").mkdir(parents=True)
    (elsewhere / "secret.md").write_text(case_text(SECRET), encoding="utf-8")
    (elsewhere / "app" / "SPEC.md").write_text(f"# Prompt\n{SECRET}\n", encoding="utf-8")
    (elsewhere / "app" / "x-bad.md").write_text(case_text(SECRET), encoding="utf-8")
    return suite, elsewhere


def test_a_case_file_linking_outside_the_suite_is_skipped_by_name(
    layout: tuple[Path, Path],
) -> None:
    suite, elsewhere = layout
    (suite / "shop" / "b-bad.md").symlink_to(elsewhere / "secret.md")
    loaded = load_markdown_suite(suite)
    assert [c.case_id for c in loaded.cases] == ["shop/a-bad.md"]
    (skip,) = loaded.skipped
    assert skip.path == suite / "shop" / "b-bad.md"
    assert "outside the suite folder" in str(skip) and "b-bad.md" in str(skip)
    assert all(SECRET not in c.code for c in loaded.cases)


def test_an_app_folder_or_spec_linking_outside_the_suite_is_skipped(
    layout: tuple[Path, Path],
) -> None:
    suite, elsewhere = layout
    (suite / "linked").symlink_to(elsewhere / "app", target_is_directory=True)
    (suite / "spec-only").mkdir()
    (suite / "spec-only" / "SPEC.md").symlink_to(elsewhere / "app" / "SPEC.md")
    (suite / "spec-only" / "c-bad.md").write_text(case_text("2"), encoding="utf-8")
    loaded = load_markdown_suite(suite)
    assert [c.app for c in loaded.cases] == ["shop"]
    assert sorted(s.path.name for s in loaded.skipped) == ["linked", "spec-only"]
    assert all(SECRET not in c.prompt_prefix + c.code for c in loaded.cases)


def test_links_inside_the_suite_still_count(layout: tuple[Path, Path]) -> None:
    suite, _ = layout
    (suite / "shop" / "b-bad.md").symlink_to(suite / "shop" / "a-bad.md")
    shutil.copytree(suite / "shop", suite / "real")
    (suite / "alias").symlink_to(suite / "real", target_is_directory=True)
    loaded = load_markdown_suite(suite)
    assert not loaded.skipped
    assert len(loaded.cases) == 6


def test_only_links_outside_left_is_a_suite_error(layout: tuple[Path, Path]) -> None:
    suite, elsewhere = layout
    shutil.rmtree(suite / "shop")
    (suite / "linked").symlink_to(elsewhere / "app", target_is_directory=True)
    with pytest.raises(SuiteError, match="no app folders"):
        load_markdown_suite(suite)


def test_a_vuldetectbench_task_file_linking_outside_is_skipped_or_refused(tmp_path: Path) -> None:
    folder, elsewhere = tmp_path / "vdb", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    record = {"idx": "1", "cwe": "119", "code": "int main() { return 0; }", "answer": "YES"}
    (folder / "task1_code.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    secret = dict(record, code=SECRET)
    (elsewhere / "t3.jsonl").write_text(json.dumps(secret) + "\n", encoding="utf-8")
    (folder / "task3_code.jsonl").symlink_to(elsewhere / "t3.jsonl")

    skipped: list[str] = []
    cases = load_vuldetectbench(folder, [1, 3], skipped=skipped)
    assert [c.case_id for c in cases] == ["task1/0"]
    assert len(skipped) == 1 and "task3_code.jsonl" in skipped[0]
    with pytest.raises(VulDetectBenchError, match=r"task3_code\.jsonl: not read"):
        load_vuldetectbench(folder, [1, 3])
