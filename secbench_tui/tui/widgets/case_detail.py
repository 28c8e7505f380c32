"""One result in full: the code highlighted, expected vs actual, explanation, raw reply, usage;
and the exact request it was asked with (`render_request`).

Rendered from a result row as `Store.result()` returns it, so the results browser and any
other screen show a result the same way. Every field but the figures is foreign text (the
suite's, the model's, the server's): it is shown through `tui.plain`, escapes made visible.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from secbench_tui.core.results.findings import proof_lines
from secbench_tui.core.results.fixes import fix_text
from secbench_tui.core.results.reasons import reason_summary_text, stored_gold, stored_reason
from secbench_tui.core.store.requests import SentRequest
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.suites.twins import diff_lines, twins_of
from secbench_tui.core.untrusted import inert, inert_line
from secbench_tui.tui import format as fmt
from secbench_tui.tui.plain import plain

_FENCE_LANG = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[ \t]*([A-Za-z0-9_+#.-]+)", re.MULTILINE)


@lru_cache(maxsize=256)
def _fence_language(test_file: str) -> str | None:
    try:
        text = Path(test_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    code_at = text.lower().find("# code")
    match = _FENCE_LANG.search(text, max(code_at, 0))
    return match.group(1).lower() if match else None


def code_language(row: ResultRow) -> str:
    """The language to highlight: the case file's fence, C for VulDetectBench, else a guess."""
    if row.get("suite_kind") == "vuldetectbench":
        return "c"
    language = _fence_language(str(row.get("test_file") or ""))
    if language:
        return language
    code = row.get("code") or ""
    if re.search(r"\b(SELECT|INSERT|UPDATE|DELETE)\b", code, re.IGNORECASE):
        return "sql"
    return "text"


def _section(title: str) -> Rule:
    return Rule(Text(title, style="bold"), align="left", style="dim")


def score_line(scores: dict[str, Any]) -> Text:
    """`hit 1 · tp 1 · fp 0`: a sample's VulDetectBench scores on one line, names sorted."""
    line = Text()
    for i, (name, value) in enumerate(sorted(scores.items())):
        if i:
            line.append(" · ", style="dim")
        shown = f"{value:g}" if isinstance(value, int | float) else inert_line(value)
        line.append(f"{inert_line(name)} ", style="dim")
        line.append(shown, style="bold")
    return line or Text("(none)", style="dim")


def _scores(row: ResultRow) -> dict[str, Any]:
    try:
        scores = json.loads(row.get("scores") or "{}")
    except ValueError:
        return {}
    return scores if isinstance(scores, dict) else {}


REASONING_SHOWN = 20_000  # characters: a long chain of thought is cut, the database keeps it


def _reasoning(row: ResultRow) -> list[RenderableType]:
    """The stored reasoning, neutralised (it is the model's text), cut when very long."""
    text = str(row.get("reasoning") or "")
    shown: list[RenderableType] = [Text(inert(text[:REASONING_SHOWN]), style="italic dim")]
    if len(text) > REASONING_SHOWN:
        shown.append(
            Text(
                f"(first {REASONING_SHOWN:,} of {len(text):,} characters; the database keeps all)",
                style="dim",
            )
        )
    return shown


def _rewrites(row: ResultRow, family: Sequence[ResultRow]) -> list[RenderableType]:
    """`--rewrites`: the original and its variants side by side with their verdicts, and the
    shown variant's diff from its original."""
    variants = [r for r in family if isinstance(r.get("variant"), dict)]
    if not variants:
        return []
    original = next((r for r in family if not isinstance(r.get("variant"), dict)), None)
    table = Table(box=None, show_header=True, header_style="dim", pad_edge=False)
    for column in ("case", "relation", "proof", "verdict", "outcome"):
        table.add_column(column)
    for member in ([original] if original else []) + variants:
        info: Mapping[str, object] = member.get("variant") or {}
        outcome = str(member.get("outcome") or "")
        table.add_row(
            Text("▶ " if member.get("id") == row.get("id") else "  ")
            + Text(inert_line("original" if not info else info.get("relation"))),
            Text(inert_line(info.get("relation") or "-")),
            Text("-" if not info else ("proven" if info.get("proven") else "unproven")),
            Text(inert_line(member.get("actual_result") or "-")),
            Text(inert_line(outcome), style=fmt.OUTCOME_STYLES.get(outcome, "")),
        )
    parts: list[RenderableType] = [_section("rewrites of this case (first repeat)"), table]
    shown = row.get("variant")
    if isinstance(shown, dict) and original is not None:
        diff = difflib.unified_diff(
            str(original.get("code") or "").splitlines(),
            str(row.get("code") or "").splitlines(),
            "original",
            str(shown.get("relation")),
            lineterm="",
        )
        parts += [
            _section("diff from the original"),
            Syntax(inert("\n".join(diff)), "diff", word_wrap=True, background_color="default"),
        ]
    return parts


@lru_cache(maxsize=64)
def _twin_code(test_file: str, app: str, twin: str) -> str | None:
    """The code of a compliant twin as its file holds it now (None: gone)."""
    found = next((t for t in twins_of(Path(test_file), app) if t.case_id == twin), None)
    return found.code if found is not None else None


def _diff(before: str, after: str, before_name: str, after_name: str) -> RenderableType:
    lines = diff_lines(before, after, before_name, after_name)
    if not lines:
        return Text("(no difference)", style="dim")
    return Syntax(inert("\n".join(lines)), "diff", word_wrap=True, background_color="default")


def _fix(row: ResultRow) -> list[RenderableType]:
    """`--task fix`: what verifying the fix found (the failing parameter set and its rows when
    it is not proven), its diff from the bad case and from the nearest compliant twin."""
    described = fix_text(row)
    fixed = row.get("fixed_code")
    if not described and not fixed:
        return []
    parts: list[RenderableType] = [_section("fix (verified on PostgreSQL)")]
    if described:
        style = "green" if row.get("fix_outcome") == "proven" else ""
        parts.append(plain("\n".join(described), style=style))
    if fixed:
        parts += [
            _section("fix: diff from the bad case"),
            _diff(row.get("code") or "", fixed, "bad case", "fix"),
        ]
        twin = row.get("fix_twin")
        twin_code = (
            _twin_code(str(row.get("test_file") or ""), str(row.get("app") or ""), twin)
            if twin
            else None
        )
        if twin and twin_code is not None:
            parts += [
                _section(f"fix: diff from its nearest compliant twin, {inert_line(twin)}"),
                _diff(twin_code, fixed, inert_line(twin), "fix"),
            ]
    return parts


def render_result(
    row: ResultRow, prompt: str | None = None, family: Sequence[ResultRow] = ()
) -> RenderableType:
    """`prompt`: the name of the evaluation prompt the result was asked with (its run's);
    `family`: the case's original and `--rewrites` variants, shown side by side."""
    outcome = str(row.get("outcome") or "")
    head = Text.assemble(
        (inert_line(row.get("case_id")), "bold"),
        ("  ", ""),
        (inert_line(outcome.upper()), f"bold {fmt.OUTCOME_STYLES.get(outcome, '')}"),
        (f"\n{inert_line(row.get('model_name'))}", "dim"),
        (f" · prompt {inert_line(prompt)}" if prompt else "", "dim"),
        (f" · run {row.get('run_id')} · {inert_line(row.get('app'))}", "dim"),
    )
    if row.get("repeat"):
        head.append(f" · repeat {int(row['repeat']) + 1}", style="dim")
    parts: list[RenderableType] = [head]
    raw_reply: list[RenderableType] = [
        _section("raw reply"),
        plain(row.get("raw_reply") or "(none)", style="dim"),
    ]
    vuldetectbench = row.get("suite_kind") == "vuldetectbench"
    if vuldetectbench:
        # the gold answer and the extracted one can be long (lines of code): one section each
        parts += [
            _section("expected (gold answer)"),
            plain(row.get("expected_result") or "(none)"),
            _section("extracted answer"),
            plain(row.get("actual_result") or "(none: nothing could be extracted)"),
            _section("scores"),
            score_line(_scores(row)),
            *raw_reply,  # the model's whole answer, which the extraction read
        ]
    else:
        parts.append(
            Text.assemble(
                ("expected ", "dim"),
                (inert_line(str(row.get("expected_result"))), "bold"),
                ("   actual ", "dim"),
                (inert_line(row.get("actual_result") or "-"), "bold"),
            )
        )
        reason = reason_summary_text(
            stored_reason(row.get("reasons")), stored_gold(row.get("gold"))
        )
        if reason:
            parts += [_section("reason"), plain("\n".join(reason))]
        proof = proof_lines(row)  # --prove-findings: the exploits as sent, what ran, the rows
        if proof:
            parts += [_section("exploit, as proven"), plain("\n".join(proof))]
    if row.get("error"):
        parts += [_section("error"), plain(row["error"], style="red")]
    if row.get("notes"):  # e.g. a cost from the server that was not believed
        parts += [_section("notes"), Text(inert(row["notes"]), style="yellow")]
    if not vuldetectbench or row.get("explanation"):
        parts += [_section("explanation"), plain(row.get("explanation") or "(none)")]
    parts += _rewrites(row, family)
    parts += _fix(row)
    code = row.get("code")
    if code:
        parts += [
            _section("code"),
            Syntax(
                inert(code),
                code_language(row),
                line_numbers=True,
                word_wrap=True,
                background_color="default",
            ),
        ]
    if not vuldetectbench:
        parts += raw_reply
    if row.get("reasoning"):
        parts += [_section("reasoning (the model's thinking before its reply)"), *_reasoning(row)]
    usage = Text.assemble(
        ("tokens ", "dim"),
        f"{fmt.tokens(row.get('prompt_tokens'))} in /"
        f" {fmt.tokens(row.get('completion_tokens'))} out",
        ("   cost ", "dim"),
        fmt.money(row.get("cost")),
        ("   latency ", "dim"),
        fmt.latency(row.get("latency_ms")),
        ("   attempts ", "dim"),
        str(row.get("attempts") or 1),
    )
    if row.get("reasoning_tokens"):
        usage.append(f" ({fmt.tokens(row.get('reasoning_tokens'))} reasoning)")
    if row.get("served_model") or row.get("provider"):
        usage.append(
            f"\nserved by {inert_line(row.get('served_model') or '?')}"
            f" via {inert_line(row.get('provider') or '?')}",
            style="dim",
        )
    if row.get("reused_from"):
        usage.append(f"\nreused from result {row['reused_from']}", style="dim")
    parts += [_section("usage"), usage]
    return Group(*parts)


# what a request carried besides its messages, from the run's recorded settings
REQUEST_SETTINGS = ("temperature", "max_tokens", "seed", "response_format", "reasoning_effort")


def render_request(
    row: ResultRow, sent: SentRequest | None, settings: Mapping[str, Any] | None = None
) -> RenderableType:
    """The request a result was asked with: every message whole, in order, neutralised
    (the suite's text and the prompt are foreign), with the run's request settings."""
    head = Text.assemble(
        (inert_line(row.get("case_id")), "bold"),
        ("  request as sent", "bold"),
        (f"\nto {inert_line(row.get('model_name'))} · run {row.get('run_id')}", "dim"),
    )
    parts: list[RenderableType] = [head]
    shown = [
        f"{name} {inert_line(settings[name])}"
        for name in REQUEST_SETTINGS
        if settings and settings.get(name) is not None
    ]
    if settings and settings.get("request_style") == "security-bench":
        shown.insert(0, "the original evaluator's request, byte for byte")
    if shown:
        parts.append(Text(" · ".join(shown), style="dim"))
    if sent is None:
        return Group(*parts, Text("this result is gone", style="dim"))
    if sent.source == "original":
        parts.append(Text("the body the original security-bench stored", style="dim"))
    if sent.note:
        parts.append(Text(inert(sent.note), style="yellow"))
    total = len(sent.messages)
    for n, message in enumerate(sent.messages, start=1):
        title = f"message {n} of {total} · {inert_line(message.role)}"
        parts += [
            _section(f"{title} · {len(message.content):,} characters"),
            plain(message.content or "(empty)"),
        ]
    return Group(*parts)
