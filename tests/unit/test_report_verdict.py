"""The report's answer to "which model?": ranking, ties, chance level, cost, run selection.

A designed data set in a real SQLite file: 30 cases (15 bad, 15 good) and models whose
answers make McNemar's test come out one way or the other by construction.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from test_report import by_model, tables

from secbench_tui.core import numbers
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
from secbench_tui.core.results import exports
from secbench_tui.core.results.metrics import mcnemar_exact, proportion_interval, wilson_interval
from secbench_tui.core.results.report.data import ReportData
from secbench_tui.core.results.report.gathering import gather
from secbench_tui.core.results.report.rendering import render_html
from secbench_tui.core.store.database import Store

N = 30
CASES = [
    Case(
        kind=SuiteKind.MARKDOWN,
        app="shop" if n % 3 else "blog",
        case_id=f"{'shop' if n % 3 else 'blog'}/case-{n:02d}.md",
        test_file=f"/suite/case-{n:02d}.md",
        expected="bad" if n % 2 else "good",
        code=f"SELECT {n};",
        messages=(Message(role="user", content=f"SELECT {n};"),),
        description=f"case {n}",
    )
    for n in range(N)
]
WRONG = {"bad": "good", "good": "bad"}


def right_on(*numbers: int) -> list[str]:
    """Verdicts right on the cases numbered, wrong on every other one."""
    return [c.expected if n in numbers else WRONG[c.expected] for n, c in enumerate(CASES)]


STRONG = right_on(*range(N))  # 30 of 30
TWIN = right_on(*range(2, N))  # 28 of 30: differs from STRONG on 2 cases, p = 0.5
BAD_ONLY = right_on(*range(1, N, 2))  # 15 of 30: right on the bad cases only, like always-bad


async def record_run(
    store: Store,
    model: str,
    answers: list[str] | list[list[str]],
    *,
    cost: float = 0.001,
    settings: dict[str, object] | None = None,
    status: str = "completed",
    cases: list[Case] = CASES,
    kind: str = "markdown",
    suite: str = "/suite",
) -> int:
    tries = [a if isinstance(a, list) else [a] for a in answers]
    run_id = await store.create_run(
        model=model,
        suite_kind=kind,
        suite_path=suite,
        suite_hash="suitehash",
        prompt_hash="prompthash",
        settings=RecordedSettings.model_validate(
            settings if settings is not None else {"repeats": len(tries[0])}
        ),
        fingerprint=model,
        tool_version="0.1.0",
        total_cases=len(cases),
    )
    for index, (case, said_list) in enumerate(zip(cases, tries, strict=False)):
        for repeat, said in enumerate(said_list):
            outcome = Outcome.CORRECT if said == case.expected else Outcome.WRONG
            evaluation = Evaluation(
                run_id=run_id,
                case=case,
                index=index,
                repeat=repeat,
                completion=Completion(text=said, cost=cost, latency_ms=100.0),
                scored=Scored(actual=said, outcome=outcome, explanation=f"said {said}"),
            )
            await store.record(evaluation, f"{run_id}:{index}:{repeat}")
    await store.finish_run(run_id, status)
    return run_id


@pytest.fixture
async def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    opened = await Store.open(tmp_path / "results.db")
    yield opened
    await opened.close()


async def designed(store: Store) -> ReportData:
    await record_run(store, "m/weak", BAD_ONLY, cost=0.0001)
    await record_run(store, "m/strong", STRONG, cost=0.01)
    await record_run(store, "baseline/always-bad", ["bad"] * N, cost=0.0)
    await record_run(store, "m/twin", TWIN, cost=0.001)
    return await gather(store)


# --- ranking and verdict -----------------------------------------------------------------


async def test_models_are_ranked_by_accuracy_with_references_last(store: Store) -> None:
    data = await designed(store)
    assert [c.model for c in data.contenders] == [
        "m/strong",
        "m/twin",
        "m/weak",
        "baseline/always-bad",
    ]
    assert [c.rank for c in data.contenders] == [1, 2, 3, None]
    assert [c.standing for c in data.contenders] == ["best", "tied", "behind", "behind"]
    assert [c.colour for c in data.contenders] == ["s0", "s1", "s2", "ref"]
    chart = data.accuracy_chart
    assert chart is not None and [b.css for b in chart.bars] == ["s0", "s1", "s2", "ref"]
    assert chart.marks == [(chart.left + chart.plot * 0.5, "best reference 50.0%")]


async def test_verdict_names_the_tie_the_cheaper_twin_and_the_model_at_chance(
    store: Store,
) -> None:
    data = await designed(store)
    (verdict,) = data.verdicts
    labels = lambda cs: [c.label for c in cs]  # noqa: E731
    assert verdict.best.model == "m/strong"
    assert labels(verdict.top) == ["m/strong", "m/twin"]
    assert labels(verdict.behind) == ["m/weak"]
    assert verdict.reference is not None and verdict.reference.model == "baseline/always-bad"
    assert labels(verdict.near_chance) == ["m/weak"]  # the same answers as always-bad
    assert verdict.cheapest is not None and verdict.cheapest.model == "m/twin"
    assert verdict.partial == []
    twin = data.contenders[1]
    assert twin.vs_best is not None
    assert (twin.vs_best.only_a, twin.vs_best.only_b) == (2, 0)  # the best's wins first
    assert twin.vs_best.p_value == pytest.approx(mcnemar_exact(2, 0)) == 0.5


async def test_cost_per_correct_answer(store: Store) -> None:
    data = await designed(store)
    figures = {c.model: c.stats["cost_per_correct"] for c in data.contenders}
    assert figures["m/strong"] == pytest.approx(0.01 * N / N)
    assert figures["m/twin"] == pytest.approx(0.001 * N / 28)
    assert figures["m/weak"] == pytest.approx(0.0001 * N / 15)


async def test_the_verdict_reads_as_a_decision(store: Store) -> None:
    html = render_html(await designed(store))
    verdict = html[html.index('<section id="verdict">') : html.index('<section id="overview">')]
    text = " ".join(re.sub(r"<[^>]+>", "", verdict).split())
    assert "m/strong is the most accurate: 100.0% of answers right" in text
    assert "Not clearly better than m/twin (p = 0.500)" in text
    assert "Of these, m/twin costs least per correct answer ($0.00107)" in text
    assert "Clearly ahead of (McNemar’s test, p &lt; 0.05): m/weak" in text
    assert "Not clearly better than it: m/weak (50.0%)" in text


async def test_one_model_clearly_best_says_so(store: Store) -> None:
    await record_run(store, "m/strong", STRONG)
    await record_run(store, "m/weak", BAD_ONLY)
    data = await gather(store)
    (verdict,) = data.verdicts
    assert [c.model for c in verdict.top] == ["m/strong"] and verdict.cheapest is None
    html = render_html(data)
    assert "Clearly better than every other model" in html


async def test_a_narrowed_run_is_flagged_and_ranked_after_whole_ones(store: Store) -> None:
    whole = await record_run(store, "m/whole", TWIN)
    part = await record_run(
        store, "m/part", STRONG[:10], cases=CASES[:10], settings={"limit": 10, "repeats": 1}
    )
    data = await gather(store, run_ids=[whole, part])
    assert [c.model for c in data.contenders] == ["m/whole", "m/part"]  # 100% on 10 ranks 2nd
    (verdict,) = data.verdicts
    assert verdict.best.model == "m/whole" and verdict.cases == N
    assert [c.model for c in verdict.partial] == ["m/part"]
    # Not distinguishable on 10 shared cases, but never offered as an equal choice.
    assert data.contenders[1].standing == "tied" and verdict.top == [verdict.best]
    html = render_html(data)
    assert "Not comparable: <strong>m/part</strong> answered 10 of 30 cases" in html
    assert f"(run {part}: --limit 10)" in html


# --- which runs by default ---------------------------------------------------------------


async def test_default_prefers_a_whole_run_to_a_later_narrow_or_stopped_one(
    store: Store,
) -> None:
    whole = await record_run(store, "m/a", TWIN)
    narrow = await record_run(
        store, "m/a", STRONG[:5], cases=CASES[:5], settings={"apps": ["shop"], "repeats": 1}
    )
    stopped = await record_run(store, "m/a", STRONG[:7], cases=CASES[:7], status="stopped")
    data = await gather(store)
    assert [c.run.id for c in data.contenders] == [whole]
    assert [r.id for r in data.others] == [narrow, stopped]
    html = render_html(data)
    others = html[html.index('id="others"') :]
    assert f"run {narrow}: m/a, markdown, 5 results" in others and "--apps shop" in others
    assert f"run {stopped}: m/a, markdown, 7 results" in others and "stopped" in others
    # A later whole run replaces the earlier one.
    newer = await record_run(store, "m/a", STRONG)
    data = await gather(store)
    assert [c.run.id for c in data.contenders] == [newer]
    assert whole in [r.id for r in data.others]


async def test_without_a_whole_run_the_latest_narrow_one_is_shown(store: Store) -> None:
    await record_run(store, "m/a", STRONG[:5], cases=CASES[:5], settings={"limit": 5})
    latest = await record_run(store, "m/a", STRONG[:6], cases=CASES[:6], settings={"limit": 6})
    data = await gather(store)
    assert [c.run.id for c in data.contenders] == [latest]


async def test_vuldetectbench_runs_of_other_tasks_are_kept_side_by_side(store: Store) -> None:
    vdb = [
        Case(
            kind=SuiteKind.VULDETECTBENCH,
            app=f"task{task}",
            case_id=f"task{task}/{n}",
            test_file="task.jsonl",
            expected="YES",
            code="int x;",
            messages=(Message(role="user", content="x"),),
        )
        for task in (1, 2)
        for n in range(2)
    ]
    first = await record_run(
        store, "m/v", ["YES", "YES"], cases=vdb[:2], kind="vuldetectbench", settings={"tasks": [1]}
    )
    second = await record_run(
        store, "m/v", ["YES", "YES"], cases=vdb[2:], kind="vuldetectbench", settings={"tasks": [2]}
    )
    data = await gather(store)
    assert [c.run.id for c in data.vdb] == [first, second]
    assert data.others == []


# --- statistics shown --------------------------------------------------------------------


async def test_repeats_get_an_interval_over_cases_not_tries(store: Store) -> None:
    # Each case asked three times; right on every try of 20 cases, on no try of 10.
    answers = [[v] * 3 for v in right_on(*range(20))]
    await record_run(store, "m/r", answers, settings={"repeats": 3})
    (c,) = (await gather(store)).contenders
    assert c.stats["cases"] == 3 * N and c.case_count == N
    assert c.stats["accuracy_ci"] == pytest.approx(proportion_interval(20 / 30, N))
    naive = wilson_interval(60, 90)
    assert c.stats["accuracy_ci"][1] - c.stats["accuracy_ci"][0] > naive[1] - naive[0]
    html = render_html(await gather(store))
    assert by_model(tables(html)["overview-table"])["m/r"]["Cases"] == "30 ×3"


async def test_per_class_recall_in_the_overview_and_the_confusion_matrices(store: Store) -> None:
    html = render_html(await designed(store))
    overview = by_model(tables(html)["overview-table"])
    weak = overview["m/weak"]
    assert (weak["Recall bad"], weak["Recall good"], weak["Bal. acc."]) == (
        "100.0%",
        "0.0%",
        "50.0%",
    )
    confusion = html[html.index('<section id="confusion">') : html.index('<section id="pairs">')]
    assert "<th>expected \\ said</th>" in confusion and ">Recall</th>" in confusion
    assert confusion.count("100.0%") >= 3  # strong: both classes; weak: bad


# --- how it was produced ----------------------------------------------------------------


async def test_settings_shown_once_when_shared_and_only_where_they_apply(store: Store) -> None:
    endpoint = {
        "base_url": "https://openrouter.ai/api/v1",
        "max_tokens": 1024,
        "tasks": [1, 2, 3, 4, 5],
        "method": None,
        "repeats": 1,
    }
    await record_run(store, "m/a", STRONG, settings={**endpoint, "temperature": 0.0})
    await record_run(store, "m/b", TWIN, settings={**endpoint, "temperature": 0.7})
    await record_run(store, "baseline/random", BAD_ONLY, settings={**endpoint, "seed": 3})
    data = await gather(store)
    assert data.common_settings == [("repeats", "1")]
    settings = {c.model: dict(c.settings) for c in data.contenders}
    assert settings["m/a"] == {
        "base_url": "https://openrouter.ai/api/v1",
        "max_tokens": "1024",
        "temperature": "0.0",
    }
    assert settings["baseline/random"] == {"seed": "3"}  # no endpoint, no VulDetectBench keys
    html = render_html(data)
    runs_table = html[html.index('id="runs-table"') :]
    assert "tasks" not in runs_table and "method" not in runs_table


def test_money_keeps_three_significant_digits() -> None:
    assert [numbers.money(v) for v in (None, 0.0, 0.5336, 0.000114, 12.345)] == [
        "n/a",
        "$0",
        "$0.534",
        "$0.000114",
        "$12.35",
    ]
    assert [numbers.compact(v) for v in (999, 11097, 611549, 1813253)] == [
        "999",
        "11.1k",
        "612k",
        "1.81M",
    ]


# --- exports carry the same figures ------------------------------------------------------


async def test_exports_carry_the_new_figures_and_a_schema_timestamp(store: Store) -> None:
    import json
    import xml.etree.ElementTree as ET

    data = await designed(store)
    document = json.loads(exports.to_json(data))
    twin = next(r for r in document["runs"] if r["model"] == "m/twin")
    assert twin["summary"]["cost_per_correct"] == pytest.approx(0.03 / 28)
    assert twin["summary"]["distinct_cases"] == N
    assert twin["rank"] == 2 and twin["vs_best"] == {
        "standing": "tied",
        "p_value": 0.5,
        "shared": N,
    }
    assert [r["rank"] for r in document["runs"] if r["baseline"]] == [None]
    root = ET.fromstring(exports.to_junit(data))
    for suite in root.iter("testsuite"):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.get("timestamp") or "")
    assert exports.junit_timestamp("2026-01-02T03:04:05.678Z") == "2026-01-02T03:04:05"
    assert exports.junit_timestamp("2026-01-02T05:04:05+02:00") == "2026-01-02T03:04:05"
    assert math.isclose(twin["summary"]["accuracy"], 28 / 30)


async def test_a_lone_model_without_references_is_told_how_to_get_chance_level(
    store: Store,
) -> None:
    await record_run(store, "m/alone", TWIN)
    await record_run(store, "baseline/random", BAD_ONLY)
    data = await gather(store, models=["m/alone"])
    (verdict,) = data.verdicts
    assert verdict.reference is None and verdict.near_chance == []
    text = " ".join(re.sub(r"<[^>]+>", "", render_html(data)).split())
    assert "m/alone is the only model here: 93.3% of answers right" in text
    assert "No reference run in this report to test the models against" in text
    assert "secbench-tui --model baseline/random --no-ui" in text


async def test_hardest_cases_name_the_case_once_and_say_all_when_all_missed(
    store: Store,
) -> None:
    await designed(store)
    await record_run(store, "m/third", right_on(*range(1, N)))  # misses case 0, as twin does
    data = await gather(store, models=["m/twin", "m/weak", "m/third"])
    first = data.hardest[0]
    assert (first.case_id, first.name, first.app) == ("blog/case-00.md", "case-00.md", "blog")
    rows = {row[0]: row for row in tables(render_html(data))["hardest-table"][1:]}
    assert rows["case-00.md"][1:5] == ["blog", "good", "3 of 3", "all 3"]
    assert rows["case-01.md"][3:5] == ["1 of 3", "m/twin"]  # not all: named


async def test_each_suite_gets_its_own_ranking_and_verdict(store: Store) -> None:
    await record_run(store, "m/a", TWIN, suite="/one")
    await record_run(store, "m/b", STRONG, suite="/one")
    await record_run(store, "m/a", STRONG, suite="/two")
    await record_run(store, "baseline/random", BAD_ONLY, suite="/three")  # references only
    data = await gather(store)
    assert [(c.run.suite_path, c.model, c.rank) for c in data.contenders] == [
        ("/one", "m/b", 1),
        ("/one", "m/a", 2),
        ("/three", "baseline/random", None),
        ("/two", "m/a", 1),
    ]
    assert [(v.suite, v.best.model) for v in data.verdicts] == [("/one", "m/b"), ("/two", "m/a")]
    assert data.accuracy_chart is not None and data.accuracy_chart.marks == []
    html = render_html(data)
    assert "<h3>On <code>/one</code></h3>" in html and "<h3>On <code>/two</code></h3>" in html


async def test_the_chance_row_is_computed_from_the_cases_asked(store: Store) -> None:
    """An unbalanced suite (2 bad to 1 good): always bad scores 66.7%, not 50%."""
    unbalanced = [
        Case(
            kind=SuiteKind.MARKDOWN,
            app="shop",
            case_id=f"shop/s{n // 3}-{n % 3 + 1:02d}-{'good' if n % 3 == 0 else 'bad'}.md",
            test_file=f"/suite/{n}.md",
            expected="good" if n % 3 == 0 else "bad",
            code=f"SELECT {n};",
        )
        for n in range(30)
    ]
    await record_run(store, "m/model", [c.expected for c in unbalanced], cases=unbalanced)
    data = await gather(store)
    ((suite, chance),) = data.chance_rows
    assert chance.accuracy == {"always_bad": 2 / 3, "always_good": 1 / 3, "majority": 2 / 3}
    assert chance.p_c == {"coin_flip": 0.25, "always_bad": 0.0}
    row = re.sub(r"<[^>]+>", " ", render_html(data).split('class="total chance"', 1)[1])
    row = " ".join(row.split("</tr>", 1)[0].split())
    assert "always bad 66.7%, always good 33.3%, majority label 66.7%" in row
    assert "coin flip 25.0%, always bad 0.0%" in row
    assert "50% / 50%" not in render_html(data)


async def test_a_leaky_suite_is_said_first_and_gets_no_verdict(store: Store) -> None:
    leak = {
        "threshold": 0.6,
        "cues": [
            {"app": "shop", "features": "code-length", "holdout": "case", "balanced_accuracy": 0.83}
        ],
        "guesses": {c.case_id: 1.0 if c.expected == "bad" else 0.0 for c in CASES},
    }
    await record_run(store, "m/strong", STRONG, settings={"repeats": 1, "leak": leak})
    await record_run(store, "m/weak", BAD_ONLY, settings={"repeats": 1, "leak": leak})
    data = await gather(store)
    assert [v.withheld is not None for v in data.verdicts] == [True]
    assert data.shown_verdicts == []
    page = render_html(data)
    body = page.split("<body>", 1)[1]
    assert 'id="verdict"' not in page and "is the most accurate" not in page
    head = " ".join(re.sub(r"<[^>]+>", " ", body.split("<nav", 1)[0]).split())
    assert "The labels leak" in head and "code-length in shop (held out by case) 0.83" in head
    assert "leak" not in dict(data.common_settings)  # shown in its own section, not as JSON
    import json

    exported = json.loads(exports.to_json(data))
    assert exported["runs"][0]["summary"]["leak"]["cues"][0]["balanced_accuracy"] == 0.83
