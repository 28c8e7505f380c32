"""Markdown suites: tolerant parsing, clear skips, stable order, prompt assembly."""

from pathlib import Path

import pytest

from secbench_tui.core.suites.markdown import (
    SuiteError,
    extract_code,
    load_markdown_suite,
    parse_case_file,
    split_sections,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "suite"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def test_sections_ignore_headings_inside_code_fences() -> None:
    text = "# Code\n```python\n# not a heading\nx = 1\n```\n# Expected\ngood"
    sections = split_sections(text)
    assert set(sections) == {"code", "expected"}
    assert extract_code(sections["code"]) == "# not a heading\nx = 1"


def test_crlf_no_blank_lines_no_trailing_newline(tmp_path: Path) -> None:
    path = write(tmp_path / "a.md", "# Code\r\n```sql\r\nSELECT 1;\r\n```\r\n# Expected\r\nBad")
    assert parse_case_file(path) == ("SELECT 1;", "bad", "")


def test_description_and_extra_sections_are_kept_out_of_the_code(tmp_path: Path) -> None:
    path = write(
        tmp_path / "a.md",
        "# Description\nBreaks rule 2.\n\n# Code\n~~~\nSELECT 2;\n~~~\n\n# Expected\n`good`\n"
        "# Notes\nanything\n",
    )
    assert parse_case_file(path) == ("SELECT 2;", "good", "Breaks rule 2.")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("# Expected\ngood\n", "no '# Code' section"),
        ("# Code\n```\nx\n```\n", "no '# Expected' section"),
        ("# Description\nonly\n", "no '# Code' section and no '# Expected' section"),
        ("# Code\n```\n\n```\n# Expected\ngood\n", "'# Code' block is empty"),
        ("# Code\nSELECT 1;\n# Expected\ngood\n", "no fenced code block"),
        ("# Code\n```\nx\n```\n# Expected\nmaybe\n", "must be good or bad"),
        ("# Code\n```\nx\n```\n# Expected\n\n", "must be good or bad"),
    ],
)
def test_unusable_files_say_why(tmp_path: Path, text: str, reason: str) -> None:
    result = parse_case_file(write(tmp_path / "case.md", text))
    assert isinstance(result, str)
    assert reason in result


def test_fixture_suite_loads_sorted_with_skips() -> None:
    suite = load_markdown_suite(FIXTURE, evaluation_prompt="EVAL")
    ids = [case.case_id for case in suite.cases]
    assert ids == sorted(ids)
    assert ids == [
        "blog/edit-post-01-good.md",
        "blog/edit-post-02-bad.md",
        "shop/get-order-01-bad.md",
        "shop/list-orders-01-good.md",
        "shop/list-orders-02-bad.md",
    ]
    skipped = {s.path.name: s.reason for s in suite.skipped}
    assert set(skipped) == {"broken-bad-expected.md", "broken-empty-code.md", "broken-no-code.md"}
    assert all(str(s).startswith("skipped ") and str(s.path) in str(s) for s in suite.skipped)


def test_prompt_is_spec_then_evaluation_prompt_then_code() -> None:
    suite = load_markdown_suite(FIXTURE, apps=["shop"], evaluation_prompt="EVALUATION TEXT")
    case = suite.cases[0]
    (message,) = case.prompt_messages()
    content = message.content
    spec_at = content.index("Tables: orders")
    eval_at = content.index("EVALUATION TEXT")
    code_at = content.index(case.code)
    assert spec_at < eval_at < code_at
    assert "A tiny shop used by the tests" not in content  # SPEC's description is never sent
    assert "Scenario: list orders" not in content  # nor the case's
    assert content == "\n\n".join([content[:eval_at].strip(), "EVALUATION TEXT", case.code])


def test_unknown_app_is_named(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="no app named nope"):
        load_markdown_suite(FIXTURE, apps=["nope"])


def test_spec_without_prompt_section(tmp_path: Path) -> None:
    write(tmp_path / "app" / "SPEC.md", "# Description\nno prompt\n")
    with pytest.raises(SuiteError, match=r"SPEC.md: no '# Prompt' section"):
        load_markdown_suite(tmp_path)


def test_bundled_suite_parses_completely() -> None:
    from secbench_tui.config import bundled_cases_dir

    root = bundled_cases_dir()
    if not any(root.glob("*/SPEC.md")):
        pytest.skip("bundled suite not present")
    suite = load_markdown_suite(root, evaluation_prompt="x")
    assert suite.skipped == []
    assert len(suite.cases) >= 40
