"""JSON, CSV and JUnit exports of a real SQLite file, read back with standard parsers."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_report import ANSWERS, CASES, add_run, fill, make_case

from secbench_tui.config import Settings
from secbench_tui.core.models import Case, Message, SuiteKind
from secbench_tui.core.results import exports
from secbench_tui.core.results.report.data import ReportData
from secbench_tui.core.results.report.gathering import gather
from secbench_tui.core.store.database import Store
from secbench_tui.reporting import export_main


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "results.db"
    asyncio.run(fill(path))
    return path


async def data_of(path: Path, **kwargs: object) -> ReportData:
    store = await Store.open(path)
    try:
        return await gather(store, **kwargs)  # type: ignore[arg-type]
    finally:
        await store.close()


def expected_outcomes() -> dict[tuple[str, str], str]:
    """(model, case id) -> outcome, from the designed answers."""
    outcomes = {}
    for model, answers in ANSWERS.items():
        for (app, name, expected), said in zip(CASES, answers, strict=True):
            if said == "ERR":
                outcome = "error"
            elif said is None:
                outcome = "unparsed"
            else:
                outcome = "correct" if said == expected else "wrong"
            outcomes[(model, f"{app}/{name}")] = outcome
    return outcomes


async def test_json_export(db: Path) -> None:
    document = json.loads(exports.to_json(await data_of(db)))
    assert [r["model"] for r in document["runs"]] == list(ANSWERS)
    alpha = document["runs"][0]
    assert alpha["summary"]["accuracy"] == pytest.approx(0.6)
    assert alpha["summary"]["accuracy_ci"][0] < 0.6 < alpha["summary"]["accuracy_ci"][1]
    assert alpha["settings"] == {"repeats": 1}
    got = {(r["model_name"], r["case_id"]): r["outcome"] for r in document["results"]}
    assert got == expected_outcomes()
    assert all(r["scores"] == {} for r in document["results"])


def test_the_columns_are_the_record_fields_with_the_tables_in_its_order() -> None:
    """CSV columns and JSON record keys are `ExportedResult`'s fields; the reply's and the
    asking's columns keep the table's order (`store.schema`)."""
    from secbench_tui.core.results.export_records import RESULT_COLUMNS, ExportedResult
    from secbench_tui.core.store.schema import ASKING_COLUMNS, REPLY_COLUMNS

    assert [*RESULT_COLUMNS, "request"] == list(ExportedResult.model_fields)
    for columns in (REPLY_COLUMNS, ASKING_COLUMNS):
        start = RESULT_COLUMNS.index(columns[0])
        assert RESULT_COLUMNS[start : start + len(columns)] == columns


async def test_csv_export(db: Path) -> None:
    text = exports.to_csv(await data_of(db))
    assert text.splitlines()[0] == ",".join(exports.RESULT_COLUMNS)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(ANSWERS) * len(CASES)
    assert {(r["model_name"], r["case_id"]): r["outcome"] for r in rows} == expected_outcomes()
    for column in ("test_file", "model_name", "expected_result", "actual_result", "explanation"):
        assert column in rows[0]
    unparsed = next(r for r in rows if r["outcome"] == "unparsed")
    assert unparsed["raw_reply"] == "I cannot tell." and unparsed["actual_result"] == ""


async def test_junit_export_one_test_per_case(db: Path) -> None:
    root = ET.fromstring(exports.to_junit(await data_of(db)))
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == list(ANSWERS)
    outcomes = expected_outcomes()
    for suite in suites:
        model = suite.get("name")
        cases = suite.findall("testcase")
        assert len(cases) == len(CASES) == int(suite.get("tests", "0"))
        failures = errors = 0
        for case in cases:
            outcome = outcomes[(model, case.get("name"))]
            failure, error = case.find("failure"), case.find("error")
            if outcome == "correct":
                assert failure is None and error is None
            elif outcome == "error":
                assert error is not None and failure is None
                assert "503" in (error.get("message") or "")
                errors += 1
            else:
                assert failure is not None and failure.get("type") == outcome
                failures += 1
        assert (int(suite.get("failures", "-1")), int(suite.get("errors", "-1"))) == (
            failures,
            errors,
        )
    assert int(root.get("tests", "0")) == len(ANSWERS) * len(CASES)


async def test_junit_survives_control_characters_and_markup(tmp_path: Path) -> None:
    nasty = "a\x00b\x1b[31m</failure><x>&\ufffe"
    case = Case(
        kind=SuiteKind.MARKDOWN,
        app="shop",
        case_id=f"shop/{nasty}.md",
        test_file="/suite/shop/x.md",
        expected="good",
        code="x",
        messages=(Message(role="user", content="x"),),
    )
    store = await Store.open(tmp_path / "x.db")
    try:
        await add_run(store, f"m/{nasty}", ["bad"], cases=[case])
        data = await gather(store)
    finally:
        await store.close()
    text = exports.to_junit(data)
    root = ET.fromstring(text)  # parses: nothing invalid in XML 1.0 survived
    case_element = root.find("testsuite/testcase")
    assert case_element is not None
    assert case_element.get("name") == "shop/a\ufffdb\ufffd[31m</failure><x>&\ufffd.md"
    assert case_element.find("failure") is not None


async def test_repeats_are_separate_tests(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    try:
        await add_run(store, "m/r", [["good", "bad"]], cases=[make_case("shop", "a.md", "good")])
        data = await gather(store)
    finally:
        await store.close()
    root = ET.fromstring(exports.to_junit(data))
    names = [c.get("name") for c in root.iter("testcase")]
    assert names == ["shop/a.md #1", "shop/a.md #2"]
    assert root.get("failures") == "1"


@pytest.mark.parametrize("fmt", ["json", "csv", "junit"])
def test_export_command_writes_the_file_and_prints_its_path(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    out = tmp_path / f"out.{fmt}"
    assert export_main(Settings(db=db), False, fmt, out, None, ["m/beta"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    text = out.read_text("utf-8")
    assert "m/beta" in text and "m/alpha" not in text


def test_export_command_to_stdout_keeps_the_data_clean(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert export_main(Settings(db=db), True, "json", None, [2], None) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert [r["id"] for r in document["runs"]] == [2]
    assert captured.err.strip().startswith("reports/report_")
    assert (tmp_path / captured.err.strip()).is_file()
