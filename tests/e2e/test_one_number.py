"""One figure, one number: a `--rewrites` run with `--repeats` read by all five front ends.

The real command runs against a loopback model and a real PostgreSQL gate; then the headless
summary it printed, its `--summary-json`, the HTML report (`--report`), the JSON export
(`--export json`) and the app's runs table (its figure book over the same results file, and
the cells it draws) must each say the same accuracy, accuracy interval, P-C, right reason and
robustness. Issue 34 found 73.5% of 196 in the app against 75.0% of 24 everywhere else, and
an interval of 55.1-88.0 headless against 46.8-91.1 in the report.
"""

from __future__ import annotations

import asyncio
import json
import warnings
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.numbers import pct
from secbench_tui.results_db import open_results
from secbench_tui.tui.figure_book import FigureBook
from secbench_tui.tui.widgets.runs_table import run_cells
from tests.e2e.harness import rows, run_cli
from tests.e2e.server import LoopbackServer, ReceivedRequest, answer

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")

FILTERS = ("purchase-order/approval-queue-*", "purchase-order/get-supplier-*")


def _respond(request: ReceivedRequest) -> Any:
    """A verdict drawn from a checksum of the prompt: repeats and variants disagree at times,
    so the intervals and the robustness figures are not trivial."""
    prompt = request.prompt
    return answer("bad" if zlib.crc32(prompt.encode()) % 3 else "good")


def _plain(cell: object) -> str:
    return str(getattr(cell, "plain", cell))


class _Words(HTMLParser):
    """The report's text as a reader sees it: tags gone, whitespace folded."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def text(self) -> str:
        return " ".join(" ".join(self.parts).split())


def _report_text(html: str) -> str:
    words = _Words()
    words.feed(html)
    return words.text()


async def _app_figures(db: Path) -> tuple[Any, tuple[str, ...]]:
    """The app's figures of the run (its figure book, read as the runs table reads it) and
    the cells the runs table draws from them."""
    store = await open_results(db, create=False)
    try:
        (run,) = await store.runs()
        book = FigureBook()
        await book.read(store, [run])
        figures = book.get(run)
        return figures, tuple(_plain(c) for c in run_cells(run, False, figures=figures))
    finally:
        await store.close()


@pytest.mark.long
def test_the_five_front_ends_agree_on_every_figure(tmp_path: Path, pg_url: str) -> None:
    db = tmp_path / "results.db"
    summary_file = tmp_path / "summary.json"
    report = tmp_path / "report.html"
    exported = tmp_path / "export.json"
    args = ["--apps", "purchase-order", "--rewrites", "all", "--repeats", "2"]
    args += [x for f in FILTERS for x in ("--filter", f)]
    args += ["--pg-url", pg_url, "--summary-json", str(summary_file)]
    with LoopbackServer(default=_respond) as server:
        done = run_cli(server.base_url, db, bundled_cases_dir(), *args, key="sk-t", timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        for extra in (
            ["--report", "--out", str(report)],
            ["--export", "json", "--out", str(exported)],
        ):
            made = run_cli(server.base_url, db, bundled_cases_dir(), *extra, key="sk-t")
            assert made.returncode == 0, made.stderr[-3000:]
    headless = " ".join((done.stdout + done.stderr).split())
    summary = json.loads(summary_file.read_text(encoding="utf-8"))
    text = _report_text(report.read_text(encoding="utf-8"))
    (run,) = json.loads(exported.read_text(encoding="utf-8"))["runs"]
    app, cells = asyncio.run(_app_figures(db))

    # the figures, counted here from the stored rows: the originals, every try
    originals = [r for r in rows(db) if not r["variant"]]
    assert summary["cases"] == len(originals) == 2 * len({r["case_id"] for r in originals})
    accuracy = sum(r["outcome"] == "correct" for r in originals) / len(originals)
    assert summary["accuracy"] == pytest.approx(accuracy)
    low, high = summary["accuracy_ci"]
    p_c, right = summary["pairwise"]["p_c"], summary["reason"]["right_rule"]
    robust = summary["robustness"]
    assert 0 < accuracy < 1 and low < accuracy < high  # figures worth comparing

    # 1. the headless summary
    assert f"accuracy {pct(accuracy)} (95% CI {pct(low)}-{pct(high)})" in headless
    assert f"P-C {pct(p_c)} " in headless and f"right reason {pct(right)} " in headless
    assert f"invariance flips {pct(robust['flip_rate'])} " in headless
    assert f"robust accuracy {pct(robust['robust_accuracy'])} " in headless
    assert f"agreement {pct(robust['agreement'])} " in headless
    # 2. --summary-json: read above; 3. the report
    assert f"{pct(accuracy)} of answers right" in text
    distinct = len({r["case_id"] for r in originals})
    assert f"{pct(low)} – {pct(high)}) on {distinct} cases, each asked 2 times" in text
    assert f"(P-C) on {pct(p_c)} of {summary['pairwise']['pairs']} good/bad pairs" in text
    assert "right reason" in text and f"on {pct(right)} of {summary['reason']['bad_cases']}" in text
    assert f"invariance flip rate {pct(robust['flip_rate'])}" in text
    assert f"robust accuracy {pct(robust['robust_accuracy'])}" in text
    # 4. the JSON export: the same numbers
    figures = run["summary"]
    assert figures["accuracy"] == summary["accuracy"] and figures["cases"] == summary["cases"]
    assert figures["accuracy_ci"] == summary["accuracy_ci"]
    assert figures["pairwise"] == summary["pairwise"] and figures["reason"] == summary["reason"]
    exported_robustness = figures["robustness"]  # the totals (per relation: the summary)
    assert {k: robust[k] for k in exported_robustness} == exported_robustness
    # 5. the app's runs table
    assert app is not None
    assert app.accuracy == pytest.approx(accuracy) and app.cases == summary["cases"]
    assert app.pairwise.p_c == pytest.approx(p_c) and app.reason.right_rule == pytest.approx(right)
    assert cells[-4:-1] == (pct(p_c), pct(right), pct(accuracy))
