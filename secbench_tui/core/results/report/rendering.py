"""`render_html()`: the report as one self-contained HTML page, rendered with jinja2.

Autoescape is on and every printed string has its control characters made visible
(`_shown`); the page's own script and stylesheet are inline and pinned by hashes in a
Content-Security-Policy.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC
from functools import cache
from importlib import resources
from typing import Any

import jinja2

from secbench_tui.core import numbers
from secbench_tui.core.results.report.contenders import vdb_crashes
from secbench_tui.core.results.report.data import SIGNIFICANCE, ReportData, parse_time, suite_name
from secbench_tui.core.results.report.selection import narrowed_by
from secbench_tui.core.results.summary import chance_text
from secbench_tui.core.untrusted import inert

# Column heading and what it measures, as the benchmark defines it.
VDB_METRIC_NAMES = {
    "accuracy": ("Accuracy", "share of YES/NO answers that match the label"),
    "f1": ("F1", "F1 with YES (vulnerable) as the positive class"),
    "se": ("SE", "strict evaluation: 1 for the optimal option, 0.5 for the sub-optimal one"),
    "me": ("ME", "moderate evaluation: 1 when every option named is the optimal or sub-optimal"),
    "mar": ("MAR", "macro recall: the mean share of gold key objects and functions named"),
    "mir": ("MIR", "micro recall: gold key objects and functions named, pooled over samples"),
    "urs": ("URS", "union line recall: lines in common over the union of reply and gold lines"),
    "ors": ("ORS", "line recall: lines in common over the gold lines"),
}
VDB_TASK_NAMES = {
    "task1": "Task 1: vulnerability existence",
    "task2": "Task 2: vulnerability type (CWE)",
    "task3": "Task 3: key objects and functions",
    "task4": "Task 4: root cause location",
    "task5": "Task 5: trigger point location",
}
# Settings that mean nothing for some runs: the endpoint's for an offline baseline,


def _fmt_p(value: float) -> str:
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def _fmt_when(text: str | None) -> str:
    when = parse_time(text)
    if when is None:
        return text or ""
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _bucket(value: float | None) -> str:
    return "qn" if value is None else f"q{min(4, int(value * 5))}"


def _csp_hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def _shown(value: Any) -> Any:
    """Every value the template prints: text with its control characters made visible (the
    page's own markup, passed as `Markup`, is left alone)."""
    if isinstance(value, str) and not hasattr(value, "__html__"):
        return inert(value)
    return value


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("secbench_tui.core.results", "templates"),
        autoescape=True,
        finalize=_shown,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=numbers.pct,
        pvalue=_fmt_p,
        money=numbers.money,
        ms=numbers.latency_ms,
        num=numbers.integer,
        compact=numbers.compact,
        when=_fmt_when,
        duration=numbers.duration,
        bucket=_bucket,
        vdb_crashes=vdb_crashes,
        narrowed=narrowed_by,
        suite=suite_name,
        excerpt=excerpt,
        chance=chance_text,
    )
    return env


REASONING_SHOWN = 4000  # characters of a model's reasoning in the report; the database has all


def excerpt(text: object, limit: int = REASONING_SHOWN) -> str:
    """Long text (a model's reasoning) cut for the page, saying how much was left out."""
    value = "" if text is None else str(text)
    if len(value) <= limit:
        return value
    return (
        f"{value[:limit]}\n… (first {limit:,} of {len(value):,} characters; the database keeps all)"
    )


@cache
def _asset(name: str) -> str:
    return (resources.files("secbench_tui.core.results") / "templates" / name).read_text("utf-8")


def render_html(data: ReportData) -> str:
    """The whole report as one HTML document."""
    script, style = _asset("report.js"), _asset("report.css")
    csp = (
        "default-src 'none'; "
        f"script-src '{_csp_hash(script)}'; style-src '{_csp_hash(style)}'; "
        "base-uri 'none'; form-action 'none'"
    )
    template = _environment().get_template("report.html.j2")
    return template.render(
        data=data,
        script=script,
        style=style,
        csp=csp,
        vdb_names=VDB_METRIC_NAMES,
        vdb_tasks=VDB_TASK_NAMES,
        alpha=SIGNIFICANCE,
    )
