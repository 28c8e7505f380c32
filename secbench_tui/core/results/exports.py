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
from typing import Any, TypedDict

from secbench_tui.core.models import JSONObject, Outcome
from secbench_tui.core.results.reasons import stored_gold, stored_reason
from secbench_tui.core.results.report.data import Contender, ReportData, VdbContender
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.schema import ASKING_COLUMNS, REPLY_COLUMNS
from secbench_tui.core.untrusted import csv_cell, inert

# Per evaluation, in this order; the spec's seven columns are among them under their names.
RESULT_COLUMNS = (
    "id",
    "timestamp",
    "run_id",
    "model_name",
    "prompt_name",
    "prompt_hash",  # the prompt's words: one name may stand for different texts
    "suite_kind",
    "app",
    "case_id",
    "test_file",
    "repeat",
    "expected_result",
    "actual_result",
    "outcome",
    "explanation",
    *REPLY_COLUMNS,
    "reasoning_tokens",  # part of completion_tokens
    "reasoning",  # the model's thinking, as its endpoint returned it
    *ASKING_COLUMNS,
    "reused_from",
    "scores",
    "notes",
    "gold_rules",
    "rules_cited",
    "quotes",
    "right_rule",
    "right_line",
    "schema_problem",
    "scoring_version",
    # --rewrites: a variant's original case, relation, seed, code hash, proof and code
    "variant_of",
    "relation",
    "rewrite_seed",
    "code_hash",
    "proven",
    "variant_code",
)
_VARIANT_KEYS = {
    "variant_of": "original",
    "relation": "relation",
    "rewrite_seed": "seed",
    "code_hash": "code_hash",
    "proven": "proven",
}

# XML 1.0 cannot carry most control characters, whatever the escaping; model output can.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# Allowed in JSON strings and XML text, yet terminal controls: written as escapes instead.
_C1 = re.compile("[\x7f-\x9f]")


def _rows_of(c: Any) -> list[ResultRow]:
    """A run's results: its originals, then its variants (`--rewrites`) when it has some."""
    return list(getattr(c, "all_rows", c.rows))


class ReasonFields(TypedDict):
    """Why a verdict was right or wrong, as exports write it."""

    gold_rules: list[int]
    rules_cited: list[int]
    quotes: list[str]
    right_rule: bool | None
    right_line: bool | None
    schema_problem: str | None


def reason_fields(row: ResultRow) -> ReasonFields:
    """The rules a bad case breaks, the rules the reply cited with its quotes, and whether
    they were right (None: not scored, e.g. a good case or a suite that names no rules)."""
    reason = stored_reason(row.get("reasons"))
    return {
        "gold_rules": list(stored_gold(row.get("gold"))),
        "rules_cited": [c.rule for c in reason.citations] if reason else [],
        "quotes": [c.quote for c in reason.citations] if reason else [],
        "right_rule": reason.right_rule if reason else None,
        "right_line": reason.right_line if reason else None,
        "schema_problem": reason.problem if reason else None,  # how it broke schema 2
    }


def _result(row: ResultRow, data: ReportData | None = None) -> JSONObject:
    record = {column: row.get(column) for column in RESULT_COLUMNS}
    if data is not None:  # JSON: the messages sent, by the hashes of `request_texts`
        record["request"] = data.requests.get(int(row.get("id") or 0))
    record["scores"] = json.loads(row.get("scores") or "{}")
    record.update(reason_fields(row))
    variant = row.get("variant")
    if isinstance(variant, dict):
        for column, key in _VARIANT_KEYS.items():
            record[column] = variant.get(key)
        record["variant_code"] = row.get("code")
    return record


def _run_summary(c: Contender | VdbContender) -> JSONObject:
    run = c.run
    stats: Mapping[str, object] = c.stats
    summary: JSONObject = {
        key: value for key, value in stats.items() if key not in ("accuracy_ci",)
    }
    interval = stats.get("accuracy_ci")
    if isinstance(interval, tuple) and interval:
        summary["accuracy_ci"] = list(interval)
    if c.repeat is not None:
        summary["repeats"] = c.repeat
    if c.vdb:
        summary["vuldetectbench"] = c.vdb
    figures = c.figures
    for key, model in (  # pairwise, reason, scenarios
        ("pairwise", figures.get("pairwise")),
        ("reason", figures.get("reason")),
        ("scenarios", figures.get("scenarios")),
    ):
        if model is not None:
            summary[key] = model.model_dump()
    return {
        "id": run.id,
        "model": run.model_name,
        "label": c.label,
        "baseline": c.baseline,
        "rank": c.rank,
        "vs_best": None
        if c.vs_best is None
        else {"standing": c.standing, "p_value": c.vs_best.p_value, "shared": c.vs_best.shared},
        "suite_kind": run.suite_kind,
        "suite_path": run.suite_path,
        "suite_hash": run.suite_hash,
        "prompt": run.prompt_name,
        "prompt_hash": run.prompt_hash,
        "tool_version": run.tool_version,
        "status": run.status,
        "message": run.message,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "total_cases": run.total_cases,
        "settings": run.settings,
        "summary": summary,
    }


def to_json(data: ReportData) -> str:
    document = {
        "tool": "secbench-tui",
        "tool_version": data.tool_version,
        "generated_at": data.generated_at.isoformat(timespec="seconds"),
        "database": data.database,
        "runs": [_run_summary(c) for c in data.runs],
        "results": [_result(row, data) for c in data.runs for row in _rows_of(c)],
        # every text the results' requests are made of, once, by its SHA-256: a message's
        # content is its `parts` joined
        "request_texts": data.request_texts,
    }
    text = json.dumps(document, indent=1, ensure_ascii=False)
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def to_csv(data: ReportData) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(RESULT_COLUMNS)
    for c in data.runs:
        for row in _rows_of(c):
            record = {**_result(row), "scores": row.get("scores")}
            writer.writerow([_csv_value(record.get(k)) for k in RESULT_COLUMNS])
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


def _testcase(row: ResultRow, repeats: int) -> tuple[ET.Element, str]:
    name = row["case_id"] + (f" #{row['repeat'] + 1}" if repeats > 1 else "")
    case = ET.Element(
        "testcase",
        classname=_xml_text(row["app"] or row["suite_kind"]),
        name=_xml_text(name),
        time=f"{(row.get('latency_ms') or 0) / 1000:.3f}",
        file=_xml_text(row["test_file"]),
    )
    reason = reason_fields(row)
    if reason["gold_rules"] or reason["rules_cited"]:  # the rules, as CI tools show properties
        properties = ET.SubElement(case, "properties")
        for key in ("gold_rules", "rules_cited"):
            value = ",".join(map(str, reason[key]))
            ET.SubElement(properties, "property", name=key, value=value)
        for quote in reason["quotes"]:
            ET.SubElement(properties, "property", name="quote", value=_xml_text(quote))
        if reason["right_rule"] is not None:
            value = "true" if reason["right_rule"] else "false"
            ET.SubElement(properties, "property", name="right_rule", value=value)
    outcome = row["outcome"]
    said = row["actual_result"]
    if outcome == Outcome.WRONG.value:
        failure = ET.SubElement(
            case,
            "failure",
            type="wrong",
            message=_xml_text(f"expected {row['expected_result']}, the model said {said}"),
        )
        failure.text = _xml_text(row.get("explanation"))
    elif outcome == Outcome.UNPARSED.value:
        problem = reason["schema_problem"]
        message = (
            f"the reply breaks verdict schema 2: {problem}"
            if problem
            else "the reply could not be read as a verdict"
        )
        failure = ET.SubElement(case, "failure", type="unparsed", message=_xml_text(message))
        failure.text = _xml_text(row.get("raw_reply"))
    elif outcome == Outcome.ERROR.value:
        error = ET.SubElement(
            case, "error", type="error", message=_xml_text(row.get("error") or "error")
        )
        error.text = _xml_text(row.get("error"))
    elif row.get("explanation"):
        ET.SubElement(case, "system-out").text = _xml_text(row["explanation"])
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
            case, outcome = _testcase(row, c.repeats)
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
