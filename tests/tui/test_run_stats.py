"""The run tally: counts, accuracy, ETA from the latest pace, and the capped run table."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable

from secbench_tui.config import Settings
from secbench_tui.core.models import Case, Completion, Evaluation, Outcome, Scored, SuiteKind
from secbench_tui.core.run.events import CaseFinished, RunStarted
from secbench_tui.tui import scoreboard
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens import run as run_screen
from secbench_tui.tui.tally import PACE_WINDOW, RunTally
from tests.tui.conftest import SIZE, record_run, settle, wait_until


def finished(
    done: int, outcome: Outcome, cost: float | None, reused: bool = False, total: int = 10
) -> CaseFinished:
    case = Case(
        kind=SuiteKind.MARKDOWN,
        app="a",
        case_id=f"a/{done}.md",
        test_file="x",
        expected="bad",
        code="x",
        messages=(),
    )
    ev = Evaluation(
        run_id=1,
        case=case,
        scored=Scored(actual="bad", outcome=outcome),
        completion=Completion(prompt_tokens=100, completion_tokens=7, cost=cost),
        reused=reused,
    )
    return CaseFinished(1, ev, done, total)


def test_tally_counts_accuracy_tokens_cost_and_eta() -> None:
    now = [100.0]
    tally = RunTally(clock=lambda: now[0])
    tally.start(RunStarted(1, "m", total=10, pending=8, reused=2, resumed=False, concurrency=1))
    tally.begin()  # its first case is asked
    assert tally.done == 0 and tally.eta is None and tally.accuracy is None
    tally.add(finished(1, Outcome.WRONG, 0.02, reused=True))  # reused ones come first, at once
    tally.add(finished(2, Outcome.CORRECT, 0.02, reused=True))
    assert tally.done == 2 and tally.asked == 0 and tally.eta is None
    now[0] = 104.0
    tally.add(finished(3, Outcome.CORRECT, 0.01))
    tally.add(finished(4, Outcome.UNPARSED, None))
    assert tally.counts == {"correct": 2, "wrong": 1, "unparsed": 1, "error": 0}
    assert tally.accuracy == 0.5  # unparsed counts against the model
    assert (tally.prompt_tokens, tally.completion_tokens) == (400, 28)
    assert tally.cost == pytest.approx(0.05)
    assert tally.eta == pytest.approx(4.0 / 2 * 6)  # 2 s per asked case, 6 cases left
    tally.ended = 105.0
    assert tally.eta is None and tally.elapsed == 5.0


def test_the_eta_follows_the_latest_pace_and_holds_while_an_answer_is_late() -> None:
    now = [0.0]
    tally = RunTally(clock=lambda: now[0])
    tally.start(RunStarted(1, "m", total=100, pending=100, reused=0, resumed=False, concurrency=1))
    tally.begin()
    now[0] = 60.0  # the first answer waited a minute on a rate limit
    tally.add(finished(1, Outcome.CORRECT, None, total=100))
    assert tally.eta == pytest.approx(60.0 * 99)
    for done in range(2, 2 + PACE_WINDOW):  # then one answer a second
        now[0] += 1.0
        tally.add(finished(done, Outcome.CORRECT, None, total=100))
    left = 100 - (1 + PACE_WINDOW)
    assert tally.eta == pytest.approx(1.0 * left)  # the slow start no longer counts
    now[0] += 0.5
    assert tally.eta == pytest.approx(0.5 + 1.0 * (left - 1))
    now[0] += 30.0  # the next answer is late: the ETA holds, it does not reach zero
    assert tally.eta == pytest.approx(1.0 * (left - 1))


async def test_the_run_table_keeps_only_the_latest_rows(
    make_settings: Callable[..., Settings], clean_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scoreboard, "MAX_ROWS", 3)
    app = make_app(make_settings(model="baseline/always-bad"), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, run_screen.RunScreen))
        await settle(pilot)
        table = app.screen.query_one("#run-table", DataTable)
        assert [table.get_row_at(i)[0] for i in range(table.row_count)] == ["3", "4", "5"]
        assert app.screen.tally.done == 5  # the tally still counts every case


@pytest.mark.parametrize("reuse", [False, True], ids=["asked-again", "reused"])
async def test_a_resumed_run_tallies_its_earlier_cases_as_the_summary_does(
    make_settings: Callable[..., Settings], clean_suite: Path, reuse: bool
) -> None:
    settings = make_settings(model="baseline/always-bad", resume=True)
    if reuse:  # a finished run whose results the resumed one can reuse
        await record_run(make_settings(model="baseline/always-bad"))
    run_id = await record_run(make_settings(model="baseline/always-bad"))
    with sqlite3.connect(settings.db) as conn:  # as if it had been stopped after 3 cases
        conn.execute("UPDATE runs SET status='stopped' WHERE id=?", (run_id,))
        conn.execute("DELETE FROM evaluations WHERE run_id=? AND case_index >= 3", (run_id,))
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, run_screen.RunScreen))
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, run_screen.RunScreen) and screen.run_id == run_id
        tally = screen.tally
        assert (tally.asked, tally.reused, tally.done) == ((0, 2, 5) if reuse else (2, 0, 5))
        assert screen.finished is not None
        summary = screen.finished.summary
        assert summary.cases == 5 == tally.graded
        assert (tally.counts["correct"], tally.counts["wrong"]) == (summary.correct, summary.wrong)
