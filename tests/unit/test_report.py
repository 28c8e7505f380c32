"""The HTML report from a real SQLite file filled through `Store`: selection, figures, output."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest

from secbench_tui.config import Settings
from secbench_tui.core.models import (
    Case,
    Completion,
    Evaluation,
    Message,
    Outcome,
    RecordedSettings,
    Scored,
    SuiteKind,
)
from secbench_tui.core.results.report.data import ReportData, ReportError
from secbench_tui.core.results.report.files import report_path
from secbench_tui.core.results.report.gathering import gather
from secbench_tui.core.results.report.rendering import _csp_hash, render_html
from secbench_tui.core.store.database import Store
from secbench_tui.reporting import export_main

# The designed data set. Answers per model, in case order; None: unparsed, "ERR": error.
CASES = [
    ("shop", "a-good.md", "good"),
    ("shop", "b-bad.md", "bad"),
    ("shop", "c-bad.md", "bad"),
    ("blog", "d-good.md", "good"),
    ("blog", "e-bad.md", "bad"),
]
ANSWERS = {
    "m/alpha": ["good", "bad", "bad", "bad", None],  # 3 of 5; shop 3/3, blog 0/2
    "m/beta": ["bad", "bad", "good", "good", "ERR"],  # 2 of 5
    "baseline/always-bad": ["bad", "bad", "bad", "bad", "bad"],  # 3 of 5
}


def make_case(app: str, name: str, expected: str, kind: SuiteKind = SuiteKind.MARKDOWN) -> Case:
    code = f"-- {app}/{name}\nSELECT 1;"
    return Case(
        kind=kind,
        app=app,
        case_id=f"{app}/{name}",
        test_file=f"/suite/{app}/{name}",
        expected=expected,
        code=code,
        messages=(Message(role="user", content=code),),
        description=f"Scenario of {name}",
    )


def evaluation(
    run_id: int, index: int, case: Case, said: str | None, repeat: int = 0
) -> Evaluation:
    if said == "ERR":
        completion = Completion(error="HTTP 503: upstream overloaded", status=503)
        scored = Scored(actual=None, outcome=Outcome.ERROR)
    elif said is None:
        completion = Completion(text="I cannot tell.", latency_ms=900.0)
        scored = Scored(actual=None, outcome=Outcome.UNPARSED)
    else:
        outcome = Outcome.CORRECT if said == case.expected else Outcome.WRONG
        completion = Completion(
            text=f'{{"assessment": "{said}"}}',
            latency_ms=100.0 * (index + 1),
            prompt_tokens=100,
            completion_tokens=10,
            cost=0.001,
        )
        scored = Scored(actual=said, outcome=outcome, explanation=f"{said} because {case.app}")
    return Evaluation(
        run_id=run_id,
        case=case,
        repeat=repeat,
        index=index,
        completion=completion,
        scored=scored,
    )


async def add_run(
    store: Store,
    model: str,
    answers: list[list[str | None]] | list[str | None],
    cases: list[Case] | None = None,
    suite_path: str = "/suite",
    settings: dict[str, object] | None = None,
    kind: str = "markdown",
) -> int:
    """One run; `answers[i]` is a verdict, or a list of verdicts for repeats."""
    cases = cases if cases is not None else [make_case(*c) for c in CASES]
    tries = [a if isinstance(a, list) else [a] for a in answers]
    run_id = await store.create_run(
        model=model,
        suite_kind=kind,
        suite_path=suite_path,
        suite_hash="suitehash0123456789",
        prompt_hash="prompthash0123456789",
        settings=RecordedSettings.model_validate(
            settings if settings is not None else {"repeats": len(tries[0])}
        ),
        fingerprint=f"{model}:{suite_path}",
        tool_version="0.1.0",
        total_cases=sum(len(t) for t in tries),
    )
    for index, (case, said_list) in enumerate(zip(cases, tries, strict=True)):
        for repeat, said in enumerate(said_list):
            ev = evaluation(run_id, index, case, said, repeat)
            await store.record(ev, f"{run_id}:{case.case_id}:{repeat}")
    await store.finish_run(run_id, "completed")
    return run_id


async def fill(path: Path) -> dict[str, int]:
    store = await Store.open(path)
    try:
        runs = {"old-alpha": await add_run(store, "m/alpha", ["bad"] * 5)}
        for model, answers in ANSWERS.items():
            runs[model] = await add_run(store, model, answers)
    finally:
        await store.close()
    return runs


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "results.db"
    asyncio.run(fill(path))
    return path


async def gather_from(path: Path, **kwargs: object) -> ReportData:
    store = await Store.open(path)
    try:
        return await gather(store, **kwargs)  # type: ignore[arg-type]
    finally:
        await store.close()


# --- selection ---------------------------------------------------------------------------


async def test_default_selection_is_the_latest_run_of_each_model(db: Path) -> None:
    data = await gather_from(db)
    assert [c.model for c in data.contenders] == ["m/alpha", "m/beta", "baseline/always-bad"]
    assert data.contenders[0].run.id == 2  # not run 1, the older m/alpha run
    assert [c.label for c in data.contenders] == ["m/alpha", "m/beta", "baseline/always-bad"]


async def test_explicit_runs_keep_both_runs_of_a_model_apart(db: Path) -> None:
    data = await gather_from(db, run_ids=[1, 2])
    # Equal accuracy (3 of 5); run 2 ranks first on balanced accuracy (run 1 says bad always).
    assert [c.label for c in data.contenders] == ["m/alpha (run 2)", "m/alpha (run 1)"]
    assert [c.stats["correct"] for c in data.contenders] == [3, 3]
    assert [c.rank for c in data.contenders] == [1, 2]


async def test_models_filter(db: Path) -> None:
    data = await gather_from(db, models=["m/beta"])
    assert [c.model for c in data.contenders] == ["m/beta"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"run_ids": [2, 42]}, "--runs: no run 42"),
        ({"models": ["m/gamma"]}, "--models: no runs of m/gamma"),
    ],
)
async def test_unknown_selection_is_a_clear_error(db: Path, kwargs, message: str) -> None:
    with pytest.raises(ReportError, match=re.escape(message)):
        await gather_from(db, **kwargs)


async def test_empty_database_is_a_clear_error(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "empty.db")
    try:
        with pytest.raises(ReportError, match="no results to report"):
            await gather(store)
    finally:
        await store.close()


# --- figures -----------------------------------------------------------------------------


async def test_overview_figures(db: Path) -> None:
    data = await gather_from(db)
    alpha, beta, base = data.contenders
    assert alpha.stats["accuracy"] == pytest.approx(0.6)
    assert (alpha.stats["unparsed"], alpha.stats["errors"]) == (1, 0)
    assert beta.stats["accuracy"] == pytest.approx(0.4)
    assert (beta.stats["unparsed"], beta.stats["errors"]) == (0, 1)
    assert base.baseline and not alpha.baseline
    assert alpha.apps["shop"]["accuracy"] == 1.0 and alpha.apps["blog"]["accuracy"] == 0.0
    assert alpha.confusion == {
        "good": {"bad": 1, "good": 1, "none": 0},
        "bad": {"bad": 2, "good": 0, "none": 1},
    }
    # Overall leaves the reference out: alpha and beta, 5 of 10.
    assert data.overall["models"] == 2 and data.overall["accuracy"] == pytest.approx(0.5)
    assert data.app_totals["blog"]["accuracy"] == pytest.approx(0.25)
    assert alpha.stats["cost"] == pytest.approx(0.004)
    assert alpha.stats["latency_p50_ms"] == pytest.approx(300.0)


async def test_pairwise_and_hardest(db: Path) -> None:
    data = await gather_from(db)
    pairs = {(p.a.model, p.b.model): p.comparison for p in data.pairs}
    ab = pairs[("m/alpha", "m/beta")]
    assert (ab.shared, ab.only_a, ab.only_b, ab.both_correct, ab.both_wrong) == (5, 2, 1, 1, 1)
    assert ab.agreement == pytest.approx(0.4)
    assert ab.p_value == pytest.approx(1.0)
    assert [case.case_id for case in data.hardest][0] == "blog/e-bad.md"
    first = data.hardest[0]
    assert first.failed_by == ["m/alpha", "m/beta"] and first.judged == 2


async def test_repeats_show_consistency_and_pass_hat_n(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    try:
        answers = [["good"] * 3, ["bad", "good", "bad"], ["bad"] * 3, ["bad"] * 3, ["good"] * 3]
        await add_run(store, "m/repeat", answers)
        data = await gather(store)
    finally:
        await store.close()
    (c,) = data.contenders
    assert c.repeats == 3
    assert c.repeat is not None
    assert c.repeat["pass_hat_n"] == pytest.approx(2 / 5)  # a-good and c-bad always right
    assert c.repeat["consistency"] == pytest.approx((4 + 2 / 3) / 5)
    html = render_html(data)
    assert 'id="repeats-table"' in html
    assert "2/3 pass, consistency 67%" in html


async def test_vuldetectbench_section(tmp_path: Path) -> None:
    cases = [
        make_case("task1", "0", "YES", SuiteKind.VULDETECTBENCH),
        make_case("task1", "1", "NO", SuiteKind.VULDETECTBENCH),
        make_case("task2", "0", "A. CWE-1|B. CWE-2", SuiteKind.VULDETECTBENCH),
    ]
    store = await Store.open(tmp_path / "v.db")
    try:
        run_id = await store.create_run(
            model="m/vdb",
            suite_kind="vuldetectbench",
            suite_path="/vdb",
            suite_hash="s",
            prompt_hash="p",
            settings=RecordedSettings(vdb_scoring="correct"),
            fingerprint="f",
            tool_version="0.1.0",
            total_cases=3,
        )
        scored = [
            Scored(actual="YES", outcome=Outcome.CORRECT, scores={"hit": 1.0, "tp": 1.0}),
            Scored(actual="YES", outcome=Outcome.WRONG, scores={"hit": 0.0, "fp": 1.0}),
            Scored(actual="B", outcome=Outcome.WRONG, scores={"se": 0.5, "me": 1.0}),
        ]
        for index, (case, score) in enumerate(zip(cases, scored, strict=True)):
            ev = Evaluation(
                run_id=run_id, case=case, index=index, completion=Completion(text="x"), scored=score
            )
            await store.record(ev, f"vdb{index}")
        data = await gather(store)
    finally:
        await store.close()
    assert data.contenders == []
    (c,) = data.vdb
    assert c.vdb["task1"]["accuracy"] == pytest.approx(0.5)
    assert c.vdb["task2"]["se"] == pytest.approx(0.5) and c.vdb["task2"]["me"] == 1.0
    assert data.vdb_columns == [
        ("task1", "accuracy"),
        ("task1", "f1"),
        ("task2", "se"),
        ("task2", "me"),
    ]
    html = render_html(data)
    table = tables(html)["vdb-table"]
    assert table[-1][0].startswith("m/vdb")
    assert table[-1][-4:] == ["50.0%", "66.7%", "50.0%", "100.0%"]


# --- the HTML ----------------------------------------------------------------------------


class Tables(HTMLParser):
    """Cell texts of every table with an id: {id: [[cell, ...], ...]}."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.stack: list[str | None] = []
        self.cell: list[str] | None = None
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            table_id = dict(attrs).get("id")
            self.stack.append(table_id)
            if table_id:
                self.tables[table_id] = []
        elif tag == "tr" and self.stack and self.stack[-1]:
            self.tables[self.stack[-1]].append([])
        elif tag in ("td", "th") and self.stack and self.stack[-1]:
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self.stack:
            self.stack.pop()
        elif tag in ("td", "th") and self.cell is not None and self.stack and self.stack[-1]:
            self.tables[self.stack[-1]][-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def tables(html: str) -> dict[str, list[list[str]]]:
    parser = Tables()
    parser.feed(html)
    return parser.tables


def by_model(table: list[list[str]]) -> dict[str, dict[str, str]]:
    """A ranked table's rows keyed by the Model column, each row keyed by its headers."""
    header, *rows = table
    column = header.index("Model")
    return {row[column]: dict(zip(header, row, strict=False)) for row in rows}


async def test_html_has_the_spec_sections_and_every_case(db: Path) -> None:
    html = render_html(await gather_from(db))
    found = tables(html)
    overview = by_model(found["overview-table"])
    assert overview["m/alpha"]["Accuracy 95% CI"].split()[0] == "60.0%"
    assert overview["m/beta"]["Accuracy 95% CI"].split()[0] == "40.0%"
    assert overview["baseline/always-bad reference"]["Accuracy 95% CI"].split()[0] == "60.0%"
    assert overview["Overall (2 models, without references)"]["Accuracy 95% CI"] == "50.0%"
    matrix = {row[0]: row[1:] for row in found["app-matrix"][1:]}
    assert matrix["m/alpha"][:2] == ["0.0% of 2", "100.0% of 3"]  # apps sorted: blog, shop
    assert html.count('<details class="case"') == len(CASES)
    for app, name, _ in CASES:
        assert f'<span class="cid">{app}/{name}</span>' in html
    # Pass/fail per model and case: alpha passes a-good, beta fails it.
    case_a = html[html.index("shop/a-good.md</span>") :].split("</details>")[0]
    assert re.search(r'data-model="m/alpha" data-pass="1">.*?PASS', case_a)
    assert re.search(r'data-model="m/beta" data-pass="0">.*?FAIL', case_a)
    assert "I cannot tell." in html  # the raw reply of an unparsed answer
    assert "HTTP 503: upstream overloaded" in html
    assert html.count("<script") == 1
    assert "<svg" in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")


async def test_script_and_style_are_pinned_by_the_csp(db: Path) -> None:
    html = render_html(await gather_from(db))
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    script = re.search(r"<script>(.*?)</script>", html, re.DOTALL)
    style = re.search(r"<style>(.*?)</style>", html, re.DOTALL)
    assert script is not None and style is not None
    policy = csp.group(1).replace("&#39;", "'")
    assert f"script-src '{_csp_hash(script.group(1))}'" in policy
    assert f"style-src '{_csp_hash(style.group(1))}'" in policy
    assert "default-src 'none'" in policy and "unsafe" not in policy
    assert ' style="' not in html  # style attributes would be blocked by the policy


async def test_every_string_from_the_database_is_escaped(tmp_path: Path) -> None:
    evil = '<img src=x onerror="alert(1)">\'"&'
    cases = [
        Case(
            kind=SuiteKind.MARKDOWN,
            app=f"app{evil}",
            case_id=f"app/{evil}.md",
            test_file="/suite/x.md",
            expected="bad",
            code=f"</code></pre><script>alert(2)</script>{evil}",
            messages=(Message(role="user", content="x"),),
            description=f"<b>desc</b>{evil}",
        )
    ]
    store = await Store.open(tmp_path / "x.db")
    try:
        run_id = await add_run(
            store, f"m/{evil}", ["good"], cases=cases, settings={"note": evil, "repeats": 1}
        )
        ev = Evaluation(
            run_id=run_id,
            case=cases[0],
            repeat=1,
            completion=Completion(text=f"raw {evil}"),
            scored=Scored(actual=f"said{evil}", outcome=Outcome.UNPARSED),
        )
        await store.record(ev, "second")
        await add_run(store, "m/other", ["bad"], cases=cases)
        html = render_html(await gather(store))
    finally:
        await store.close()
    assert "<img" not in html and "<b>" not in html
    assert html.count("<script") == 1
    assert 'onerror="alert' not in html
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;&#39;&#34;&amp;" in html
    parser = Tables()
    parser.feed(html)
    handlers = [(t, a) for t, a in parser.tags if any(k.startswith("on") for k in a)]
    assert handlers == []


# --- files -------------------------------------------------------------------------------


def test_report_path_is_local_time_and_never_overwrites(tmp_path: Path) -> None:
    when = datetime(2024, 1, 15, 14, 30, 0)
    first = report_path(tmp_path, when)
    assert first.name == "report_2024-01-15_14-30-00.html"
    first.write_text("x")
    assert report_path(tmp_path, when).name == "report_2024-01-15_14-30-00-2.html"


def test_report_command_writes_into_reports_and_prints_the_path(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    before = datetime.now().replace(microsecond=0)
    assert export_main(Settings(db=db), True, None, None, None, None) == 0
    after = datetime.now()
    printed = capsys.readouterr().out.strip()
    match = re.fullmatch(r"reports/report_(\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d)\.html", printed)
    assert match, printed
    stamp = datetime.strptime(match.group(1), "%Y-%m-%d_%H-%M-%S")
    assert before <= stamp <= after
    written = (work / printed).read_text("utf-8")
    assert written.startswith("<!DOCTYPE html>") and "m/alpha" in written


@pytest.mark.parametrize("create", [False, True])
def test_report_command_without_results_fails_clearly(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    create: bool,
) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "results.db"
    if create:
        asyncio.run(_create_empty(db))
    assert export_main(Settings(db=db), True, None, None, None, None) == 2  # usage: --db
    err = capsys.readouterr().err
    assert f"--db {db}" in err
    assert ("no results to report" if create else "no such database") in err
    assert db.exists() is create  # a missing database is not created
    assert not (tmp_path / "reports").exists()


async def _create_empty(path: Path) -> None:
    await (await Store.open(path)).close()


def test_report_command_reports_an_unwritable_folder(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the folder should be")
    settings = Settings(db=db, reports_dir=blocker / "reports")
    assert export_main(settings, True, None, None, None, None) == 1
    assert "cannot write" in capsys.readouterr().err
