"""Text from a hostile server and a hostile suite stays inert, end to end (issue 10).

The command runs against a loopback server whose replies, error messages, provider and model
names carry escape sequences, C1 controls, Textual markup and spreadsheet formulas, over a
suite whose case file names do too, at an endpoint URL holding credentials. What it prints
must hold no control character, the CSV export no live formula, and nothing stored, shown or
exported the credentials, while the database keeps every foreign text exactly.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.e2e.harness import (
    EVIL_NAME,
    FAKE_KEY,
    MARKUP_NAME,
    PASSWORD,
    QUERY_SECRET,
    all_bytes,
    by_case,
    cli_env,
    run_cli,
    runs,
    secret_url,
    write_hostile_suite,
    write_suite,
)
from tests.e2e.server import HOSTILE, LoopbackServer, answer, bad_request, http_error, reply

# Control characters a terminal would act on: C0 but newline, DEL, C1.
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
FORMULA = '=HYPERLINK("http://127.0.0.1/x?"&A1,"click")'


def assert_inert(text: str, where: str) -> None:
    found = sorted({f"\\x{ord(c):02x}" for c in CONTROL.findall(text)})
    assert not found, f"{where} holds control characters {found}:\n{text!r}"


def assert_no_secrets(data: str | bytes, where: str) -> None:
    raw = data.encode() if isinstance(data, str) else data
    for secret in (PASSWORD, QUERY_SECRET, FAKE_KEY):
        assert secret.encode() not in raw, f"{secret} in {where}"


def export(db: Path, fmt: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--db", str(db), *extra]
        + (["--export", fmt] if fmt != "html" else ["--report"]),
        cwd=db.parent,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


# A formula after a no-break space, and one in full-width forms (issue 22)
SPACED_FORMULA = "\u00a0=cmd|' /C calc'!A0"
WIDE_FORMULA = "\uff1dSUM(1\uff0b1)"


@pytest.fixture
def hostile_run(tmp_path: Path) -> tuple[Path, subprocess.CompletedProcess[str], dict[str, str]]:
    """A run of the hostile suite against the hostile server, at a URL with credentials."""
    suite = tmp_path / "suite"
    markers = write_hostile_suite(suite)
    ids = list(markers)
    db = tmp_path / "results.db"
    with LoopbackServer() as server:
        # 1: the explanation, the served model and the provider name are hostile
        server.always(
            markers[ids[0]],
            answer("bad", HOSTILE, served_model=HOSTILE, provider="@SUM(1+1)" + HOSTILE),
        )
        # 2: a retry whose server message is hostile, then a good answer
        # (its served model and provider hide a formula behind a no-break space, full width)
        server.script(
            markers[ids[1]],
            http_error(500, HOSTILE),
            then=answer("good", served_model=SPACED_FORMULA, provider=WIDE_FORMULA),
        )
        # 3: an error whose server message is hostile
        server.always(markers[ids[2]], bad_request(HOSTILE))
        # 4: an explanation that is a spreadsheet formula
        server.always(
            markers[ids[3]], answer("bad", FORMULA, provider="-2+3", served_model=" @SUM(A1)")
        )
        result = run_cli(secret_url(server.port), db, suite, "--max-retries", "1", key=FAKE_KEY)
        sent = server.completions()
    assert result.returncode == 0, result.stderr
    # requests still used the credentials
    assert sent and all(r.query == f"api_key={QUERY_SECRET}" for r in sent)
    return db, result, markers


def test_headless_lines_hold_no_control_characters(
    hostile_run: tuple[Path, subprocess.CompletedProcess[str], dict[str, str]],
) -> None:
    db, result, _ = hostile_run
    assert_inert(result.stdout, "stdout")
    assert_inert(result.stderr, "stderr")
    out = result.stdout.splitlines()
    # the escapes are shown, not dropped; the file name with a newline stays on its line
    assert any("evil-\\x1b]0;pwned-title\\x07\\x1b[2J-01-bad.md" in line for line in out)
    assert any("shop/split\\nline-02-good.md" in line for line in out)
    assert any(f"shop/{MARKUP_NAME}.md" in line for line in out)
    retry = [line for line in result.stderr.splitlines() if line.startswith("retry:")]
    assert retry and "\\x1b]0;pwned-title\\x07" in retry[0]
    error = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert error and "\\x9b7m" in error[0]
    assert_no_secrets(result.stdout + result.stderr, "the output")


def test_the_database_keeps_the_exact_text_but_no_credentials(
    hostile_run: tuple[Path, subprocess.CompletedProcess[str], dict[str, str]],
) -> None:
    db, _, markers = hostile_run
    rows = by_case(db)
    assert set(rows) == set(markers)
    first = rows[f"shop/{EVIL_NAME}.md"]
    assert first["explanation"] == HOSTILE
    assert first["served_model"] == HOSTILE
    assert first["provider"] == "@SUM(1+1)" + HOSTILE
    assert HOSTILE in rows[f"shop/{MARKUP_NAME}.md"]["error"]
    (run,) = runs(db)
    settings = json.loads(run["settings"])
    assert settings["base_url"].startswith("http://***@127.0.0.1:")
    assert settings["base_url"].endswith("/api/v1?api_key=***")
    assert_no_secrets(all_bytes(db), "the database")


def test_csv_export_defuses_formulas_and_shows_controls(
    hostile_run: tuple[Path, subprocess.CompletedProcess[str], dict[str, str]],
) -> None:
    db, _, _ = hostile_run
    result = export(db, "csv")
    assert result.returncode == 0, result.stderr
    assert_inert(result.stdout.replace("\r\n", "\n"), "the CSV export")
    table = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(table) == 4
    by_name = {row["case_id"]: row for row in table}
    formula = by_name["shop/plain-04.md"]
    assert formula["explanation"] == "'" + FORMULA
    assert formula["provider"] == "'-2+3"
    assert formula["served_model"] == "' @SUM(A1)"
    hidden = next(row for key, row in by_name.items() if "line-02-good" in key)
    assert hidden["served_model"] == "'" + SPACED_FORMULA
    assert hidden["provider"] == "'" + WIDE_FORMULA
    assert by_name["shop/" + EVIL_NAME.replace("\x1b", "\\x1b").replace("\x07", "\\x07") + ".md"]
    for row in table:
        for column, cell in row.items():
            numeric = re.fullmatch(r"[+-]?\d+(\.\d*)?([eE][+-]?\d+)?", cell)
            first = unicodedata.normalize("NFKC", cell.lstrip(" \u00a0\u3000"))[:1]
            assert numeric or first not in ("=", "+", "-", "@", "\t", "\r"), (column, cell)
    # numbers are left alone
    assert all(float(row["cost"]) > 0 for row in table if row["outcome"] != "error")


def test_json_and_junit_stay_exact_and_the_report_inert(
    hostile_run: tuple[Path, subprocess.CompletedProcess[str], dict[str, str]],
) -> None:
    db, _, _ = hostile_run
    as_json = export(db, "json")
    assert as_json.returncode == 0, as_json.stderr
    assert_inert(as_json.stdout, "the JSON export")  # C1 written as \u009b, still exact
    document = json.loads(as_json.stdout)
    explanations = {r["explanation"] for r in document["results"]}
    assert HOSTILE in explanations and FORMULA in explanations
    assert {r["served_model"] for r in document["results"]} >= {HOSTILE}
    assert document["runs"][0]["settings"]["base_url"].endswith("?api_key=***")
    assert_no_secrets(as_json.stdout, "the JSON export")

    junit = export(db, "junit")
    assert junit.returncode == 0, junit.stderr
    assert "\x9b" not in junit.stdout and "\x1b" not in junit.stdout
    ET.fromstring(junit.stdout)  # well-formed XML

    report = export(db, "html")
    assert report.returncode == 0, report.stderr
    (page,) = (db.parent / "reports").glob("report_*.html")
    html = page.read_text(encoding="utf-8")
    assert_inert(html.replace("\t", ""), "the HTML report")
    assert "[bold red]loud[/bold red]" in html and "\\x1b]0;pwned-title\\x07" in html
    assert "http://***@127.0.0.1:" in html
    assert_no_secrets(html, "the HTML report")


def test_an_abort_shows_the_server_message_inert_and_the_url_redacted(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    write_hostile_suite(suite)
    db = tmp_path / "results.db"
    with LoopbackServer() as server:
        server.enqueue(http_error(401, HOSTILE))
        result = run_cli(secret_url(server.port), db, suite, key=FAKE_KEY)
        port = server.port
    assert result.returncode == 3, result.stderr
    assert_inert(result.stdout, "stdout")
    assert_inert(result.stderr, "stderr")
    aborted = [line for line in result.stderr.splitlines() if " aborted: " in line]
    assert aborted and "\\x1b]0;pwned-title\\x07" in aborted[0]
    assert f"the server at http://***@127.0.0.1:{port}/api/v1?api_key=***" in aborted[0]
    assert_no_secrets(result.stdout + result.stderr, "the output")
    assert_no_secrets(all_bytes(db), "the database")


def test_a_server_messages_line_break_is_shown_as_backslash_n_on_its_one_line(
    tmp_path: Path,
) -> None:
    """docs/data.md ("Untrusted text"): one-line places show newlines as `\\n`; a retry line
    and the error line (and the stored error) keep the server's line break visible."""
    (case,) = write_suite(tmp_path / "suite", {"app": ["bad"]})
    db = tmp_path / "r.db"
    message = "over\x1b[2J[blink]loaded[/blink]\nline2 \x9b31m"
    with LoopbackServer() as server:
        server.always(case.marker, http_error(503, message))
        result = run_cli(server.base_url, db, tmp_path / "suite", "--max-retries", "1")
    assert_inert(result.stdout + result.stderr, "the output")
    shown = "over\\x1b[2J[blink]loaded[/blink]\\nline2 \\x9b31m"
    retry = [line for line in result.stderr.splitlines() if line.startswith("retry:")]
    assert retry and shown in retry[0], result.stderr
    error = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert error and shown in error[0], result.stderr


def test_a_reply_nested_past_pythons_limit_is_one_unparsed_case(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """A reply whose JSON nests 100,000 deep (Python's decoder recurses once per level) is
    that case's unparsed reply, kept exactly; it was recorded as an error ("RecursionError")
    with its reply lost."""
    cases = write_suite(tmp_path / "suite", {"shop": ["bad", "good"]})
    deep = '{"assessment": "bad", "violations": ' + "[" * 100_000 + "]" * 100_000 + "}"
    server.always(cases[0].marker, reply(deep))
    db = tmp_path / "results.db"

    done = run_cli(server.base_url, db, tmp_path / "suite")

    assert "Traceback" not in done.stderr, done.stderr
    found = by_case(db)
    outcomes = {case: row["outcome"] for case, row in found.items()}
    assert outcomes == {"shop/case-0001-bad.md": "unparsed", "shop/case-0002-good.md": "correct"}
    assert found["shop/case-0001-bad.md"]["raw_reply"] == deep  # kept, exactly
