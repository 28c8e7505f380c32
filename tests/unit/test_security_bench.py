"""The original evaluator's way of cutting text out of suite files (security_bench)."""

from __future__ import annotations

import pytest

from secbench_tui.core.suites.security_bench import case_code, js_trim, spec_prompt


@pytest.mark.parametrize(
    ("text", "trimmed"),
    [
        ("  a b \n", "a b"),
        ("\ufeff\u00a0x\u3000", "x"),  # JavaScript trims the BOM and Unicode spaces
        ("\x1cx\x1f", "\x1cx\x1f"),  # which Python's strip() would remove, JavaScript keeps
        ("\x85x", "\x85x"),
        ("\r\nx\r\n", "x"),
    ],
)
def test_js_trim_trims_what_javascript_trims(text: str, trimmed: str) -> None:
    assert js_trim(text) == trimmed


def test_spec_prompt_runs_to_the_next_top_level_heading_line() -> None:
    spec = "# Title\nno\r\n# Prompt\r\n\r\nSchema:\r\n## Rules\r\n1. x\r\n#tag\r\n# Next\r\nno\r\n"
    assert spec_prompt(spec) == "Schema:\r\n## Rules\r\n1. x\r\n#tag"
    assert spec_prompt("# Prompt\nonly this  \n") == "only this"
    assert spec_prompt("no heading") == ""


def test_case_code_is_the_block_the_original_pattern_finds() -> None:
    text = "```\nnot this\n```\n# Code\n\n```sql\n\n  x = 1\n# comment\n```\n```\nnor this\n```\n"
    assert case_code(text) == "x = 1\n# comment"
    assert case_code("# code\n```\nSELECT 1;\n```\n") == "SELECT 1;"  # its /i flag
    assert case_code("# CODE\r\n```SQL\r\nSELECT 1;\r\n```") == "SELECT 1;"
    assert case_code("# Code\n```python\nx = 1\n```") is None  # (?:sql)? only
    assert case_code("# Code\nsee below\n```\nx\n```") is None  # text before the fence
    assert case_code("# Code\nno fence") is None
    assert case_code("```\nx\n```") is None


def test_spec_prompt_heading_is_read_in_any_case() -> None:
    assert spec_prompt("# prompt\nThe rules.\n# Expected\n") == "The rules."
