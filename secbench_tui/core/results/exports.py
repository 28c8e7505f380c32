"""The report's results for other tools: JSON, CSV and JUnit XML.

Each export takes the `ReportData` the HTML report is made from, so all four show the same
runs: by default the latest run of each model on each suite, or the runs and models chosen.
JSON carries every run's settings and summary figures and one record per evaluation; CSV the
evaluations only; JUnit one test per evaluation, where a wrong verdict is a failure, an
unparsed reply a failure of its own type and an error an error, so CI shows all three.

Model text is foreign: JSON and JUnit keep it exact but write C1 controls and DEL as escapes
(`\u009b`, `&#x9b;`), so neither file carries a raw terminal control even when printed; CSV,
made for spreadsheets, shows controls as `\x1b` and defuses formulas (`untrusted.csv_cell`).
"""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from secbench_tui.core.models import Outcome
from secbench_tui.core.results.export_records import (
    RESULT_COLUMNS,
    ExportDocument,
    ExportedFigures,
    ExportedResult,
    ExportedRun,
    StandingAgainstBest,
)
from secbench_tui.core.results.findings import exploits_of
from secbench_tui.core.results.reasons import stored_gold, stored_reason
from secbench_tui.core.results.report.data import Contender, ReportData, VdbContender
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.untrusted import csv_cell, inert

_VARIANT_KEYS = {
    "variant_of": "original",
    "relation": "relation",
    "rewrite_seed": "seed",
    "code_hash": "code_hash",
    "proven": "proven",
}

_JSON_ONLY = {"request"}  # the messages sent: a CSV has one row per result, flat
# XML 1.0 cannot carry most control characters, whatever the escaping; model output can.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# Allowed in JSON strings and XML text, yet terminal controls: written as escapes instead.
_C1 = re.compile("[\x7f-\x9f]")


def _rows_of(c: Any) -> list[ResultRow]:
    """A run's results: its originals, then its variants (`--rewrites`) when it has some."""
    return list(getattr(c, "all_rows", c.rows))


def exported_result(row: ResultRow, data: ReportData | None = None) -> ExportedResult:
    """One evaluation as the exports write it; with `data` (JSON), the messages sent too."""
    record: dict[str, object] = {column: row.get(column) for column in RESULT_COLUMNS}
    if data is not None:  # JSON: the messages sent, by the hashes of `request_texts`
        record["request"] = data.requests.get(int(row.get("id") or 0))
    record["scores"] = json.loads(row.get("scores") or "{}")
    reason = stored_reason(row.get("reasons"))
    record["gold_rules"] = list(stored_gold(row.get("gold")))
    if reason is not None:
        record["rules_cited"] = [c.rule for c in reason.citations]
        record["quotes"] = [c.quote for c in reason.citations]
        record["right_rule"] = reason.right_rule
        record["right_line"] = reason.right_line
        record["schema_problem"] = reason.problem  # how it broke schema 2
    else:
        record |= {"rules_cited": [], "quotes": [], "right_rule": None, "right_line": None}
        record["schema_problem"] = None
    record["exploit"] = exploits_of(row) or None
    record["exploit_outcome"] = row.get("exploit_outcome")
    record["exploit_reason"] = row.get("exploit_reason")
    variant = row.get("variant")
    if isinstance(variant, dict):
        for column, key in _VARIANT_KEYS.items():
            record[column] = variant.get(key)
        record["variant_code"] = row.get("code")
    return ExportedResult.model_validate(record)


def _figures(c: Contender | VdbContender) -> ExportedFigures:
    """A run's figures, those it has: an interval only where one is defined."""
    stats: Mapping[str, object] = c.stats
    figures: dict[str, object] = {
        key: value for key, value in stats.items() if key not in ("accuracy_ci",)
    }
    interval = stats.get("accuracy_ci")
    if isinstance(interval, tuple) and interval:
        figures["accuracy_ci"] = list(interval)
    if c.repeat is not None:
        figures["repeats"] = c.repeat
    if c.vdb:
        figures["vuldetectbench"] = c.vdb
    for key in ("pairwise", "reason", "scenarios", "chance"):
        found = c.figures.get(key)
        if found is not None:
            figures[key] = found
    if c.leak is not None:
        figures["leak"] = c.leak
    if c.fixes is not None:
        figures["fixes"] = c.fixes
    if c.robustness is not None:
        figures["robustness"] = c.robustness
    if c.findings is not None:  # a markdown run's, when its findings were proven
        figures["findings"] = c.findings
    return ExportedFigures.model_validate(figures)


def exported_run(c: Contender | VdbContender) -> ExportedRun:
    run = c.run
    vs_best = None
    if c.vs_best is not None:
        vs_best = StandingAgainstBest(
            standing=c.standing, p_value=c.vs_best.p_value, shared=c.vs_best.shared
        )
    return ExportedRun(
        id=run.id,
        model=run.model_name,
        label=c.label,
        baseline=c.baseline,
        rank=c.rank,
        vs_best=vs_best,
        suite_kind=run.suite_kind,
        suite_path=run.suite_path,
        suite_hash=run.suite_hash,
        prompt=run.prompt_name,
        prompt_hash=run.prompt_hash,
        tool_version=run.tool_version,
        status=run.status,
        message=run.message,
        started_at=run.started_at,
        finished_at=run.finished_at,
        total_cases=run.total_cases,
        settings=run.settings.as_dict(),
        summary=_figures(c),
    )


def to_json(data: ReportData) -> str:
    document = ExportDocument(
        tool_version=data.tool_version,
        generated_at=data.generated_at.isoformat(timespec="seconds"),
        database=data.database,
        runs=[exported_run(c) for c in data.runs],
        results=[exported_result(row, data) for c in data.runs for row in _rows_of(c)],
        request_texts=data.request_texts,
    )
    text = json.dumps(document.model_dump(), indent=1, ensure_ascii=False)
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def to_csv(data: ReportData) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(RESULT_COLUMNS)
    for c in data.runs:
        for row in _rows_of(c):
            record = exported_result(row).model_dump(exclude=_JSON_ONLY)
            record["scores"] = row.get("scores")  # as stored: a JSON object, keys sorted
            writer.writerow([_csv_value(record[k]) for k in RESULT_COLUMNS])
    return buffer.getvalue()


def _csv_value(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, list):  # rules as `1;3`, quotes as a JSON list (they hold anything)
        if all(isinstance(v, int) for v in value):
            return ";".join(map(str, value))
        return csv_cell(inert(json.dumps(value, ensure_ascii=False)))
    return csv_cell(inert(value)) if isinstance(value, str) else value


def junit_timestamp(started_at: str | None) -> str:
    """JUnit's schema wants `YYYY-MM-DDTHH:MM:SS`, no zone and no fraction: UTC it is."""
    try:
        when = datetime.fromisoformat(str(started_at).replace("Z", "+00:00"))
    except ValueError:
        return _xml_text(started_at)
    if when.tzinfo is not None:
        when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S")


def _xml_text(value: object) -> str:
    return _NOT_XML.sub("\ufffd", "" if value is None else str(value))


def _testcase(r: ExportedResult, repeats: int) -> tuple[ET.Element, str]:
    name = (r.case_id or "") + (f" #{(r.repeat or 0) + 1}" if repeats > 1 else "")
    case = ET.Element(
        "testcase",
        classname=_xml_text(r.app or r.suite_kind),
        name=_xml_text(name),
        time=f"{(r.latency_ms or 0) / 1000:.3f}",
        file=_xml_text(r.test_file),
    )
    if r.gold_rules or r.rules_cited:  # the rules, as CI tools show properties
        properties = ET.SubElement(case, "properties")
        for key, rules in (("gold_rules", r.gold_rules), ("rules_cited", r.rules_cited)):
            ET.SubElement(properties, "property", name=key, value=",".join(map(str, rules)))
        for quote in r.quotes:
            ET.SubElement(properties, "property", name="quote", value=_xml_text(quote))
        if r.right_rule is not None:
            value = "true" if r.right_rule else "false"
            ET.SubElement(properties, "property", name="right_rule", value=value)
    if r.exploit_outcome is not None:
        held = case.find("properties")
        into = held if held is not None else ET.SubElement(case, "properties")
        ET.SubElement(into, "property", name="exploit_outcome", value=_xml_text(r.exploit_outcome))
    outcome = r.outcome or ""
    if outcome == Outcome.WRONG.value:
        failure = ET.SubElement(
            case,
            "failure",
            type="wrong",
            message=_xml_text(f"expected {r.expected_result}, the model said {r.actual_result}"),
        )
        failure.text = _xml_text(r.explanation)
    elif outcome == Outcome.UNPARSED.value:
        problem = r.schema_problem
        message = (
            f"the reply breaks verdict schema 2: {problem}"
            if problem
            else "the reply could not be read as a verdict"
        )
        failure = ET.SubElement(case, "failure", type="unparsed", message=_xml_text(message))
        failure.text = _xml_text(r.raw_reply)
    elif outcome == Outcome.ERROR.value:
        error = ET.SubElement(case, "error", type="error", message=_xml_text(r.error or "error"))
        error.text = _xml_text(r.error)
    elif r.explanation:
        ET.SubElement(case, "system-out").text = _xml_text(r.explanation)
    return case, outcome


def to_junit(data: ReportData) -> str:
    root = ET.Element("testsuites", name="secbench-tui")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    seconds = 0.0
    for c in data.runs:
        suite = ET.SubElement(
            root,
            "testsuite",
            name=_xml_text(c.label),
            timestamp=junit_timestamp(c.run.started_at),
            skipped="0",
        )
        properties = ET.SubElement(suite, "properties")
        for key, value in (
            ("run_id", c.run.id),
            ("model", c.run.model_name),
            ("suite_kind", c.run.suite_kind),
            ("suite_path", c.run.suite_path),
            ("prompt", c.run.prompt_name),
            ("prompt_hash", c.run.prompt_hash),
            ("status", c.run.status),
        ):
            ET.SubElement(properties, "property", name=key, value=_xml_text(value))
        counts = {"tests": 0, "failures": 0, "errors": 0}
        run_seconds = 0.0
        for row in c.rows:
            case, outcome = _testcase(exported_result(row), c.repeats)
            suite.append(case)
            counts["tests"] += 1
            counts["failures"] += outcome in (Outcome.WRONG.value, Outcome.UNPARSED.value)
            counts["errors"] += outcome == Outcome.ERROR.value
            run_seconds += (row.get("latency_ms") or 0) / 1000
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{run_seconds:.3f}")
        seconds += run_seconds
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode", xml_declaration=True)
    return _C1.sub(lambda m: f"&#x{ord(m.group()):x};", text) + "\n"


EXPORTERS: dict[str, Callable[[ReportData], str]] = {
    "json": to_json,
    "csv": to_csv,
    "junit": to_junit,
}
