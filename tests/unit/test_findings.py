"""Proven findings without PostgreSQL: what a result stores, the figures read back from a real
SQLite file, what the summary and the exports show, and the random-exploit baseline."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from secbench_tui.config.environment import bundled_cases_dir
from secbench_tui.core.models import Completion, Evaluation, Outcome, Scored
from secbench_tui.core.results.exports import exported_result
from secbench_tui.core.results.findings import (
    NO_EXPLOIT,
    PROVEN,
    OfferedExploit,
    finding_summary,
    findings_of_reply,
    proof_lines,
    stored_finding,
)
from secbench_tui.core.results.findings_text import findings_lines
from secbench_tui.core.results.lines import plain
from secbench_tui.core.results.summary import RunSummary
from secbench_tui.core.run.providers.baselines import BaselineProvider
from secbench_tui.core.store.database import Store
from secbench_tui.core.suites.exploit_verdict import MAX_EXPLOITS, parse_exploit
from secbench_tui.core.suites.markdown import load_markdown_suite
from tests.unit.test_store import make_case, new_run

EXPLOIT = {"params": [{"name": "org", "value": 1}], "request": None, "rows": []}


def _reply(*rules: int) -> str:
    return json.dumps(
        {
            "explanation": "x",
            "assessment": "bad",
            "violations": [{"rule": r, "quote": "q", "exploit": EXPLOIT} for r in rules],
        }
    )


def _proof(outcome: str, reason: str | None = None) -> dict[str, object]:
    return {"outcome": outcome, "reason": reason, "detail": "d", "ran": None, "rows": []}


def test_a_reply_offers_the_exploits_of_its_violations_in_order() -> None:
    reply = json.dumps(
        {
            "assessment": "bad",
            "violations": [
                {"rule": 3, "quote": "a", "exploit": None},
                {"rule": 4, "quote": "b", "exploit": "anything at all"},
                {"rule": 5, "quote": "c"},
            ],
        }
    )
    assert findings_of_reply(reply) == [OfferedExploit(4, "anything at all")]
    assert findings_of_reply('{"assessment": "good", "violations": []}') == []
    assert findings_of_reply("not a verdict") == []


def test_a_results_outcome_is_proven_if_any_exploit_is_else_the_firsts() -> None:
    offered = [OfferedExploit(1, EXPLOIT), OfferedExploit(2, EXPLOIT)]
    proven = stored_finding(
        7, offered, [_proof("refuted", "no violating row"), _proof("proven")], 1, "pg", "t"
    )
    assert (proven.outcome, proven.reason) == (PROVEN, None)
    assert json.loads(proven.exploit or "") == [
        {"rule": 1, "exploit": EXPLOIT},
        {"rule": 2, "exploit": EXPLOIT},
    ]
    refuted = stored_finding(7, offered[:1], [_proof("refuted", "deadline")], 1, None, "t")
    assert (refuted.outcome, refuted.reason) == ("refuted", "deadline")
    none = stored_finding(7, [], [], 1, None, "t")
    assert (none.outcome, none.exploit) == (NO_EXPLOIT, None)
    many = [OfferedExploit(1, EXPLOIT)] * (MAX_EXPLOITS + 1)
    capped = stored_finding(
        7, many, [_proof("refuted", "no violating row")] * MAX_EXPLOITS, 1, None, "t"
    )
    last = json.loads(capped.proof)[-1]
    assert last["reason"] == "exploit refused" and "more than 4 exploits" in last["detail"]


async def _run_with_findings(tmp_path: Path) -> tuple[Store, int]:
    """A run of one scenario (two good cases, two bad) whose findings are stored."""
    store = await Store.open(tmp_path / "r.db")
    run_id = await new_run(store)
    answers = {  # case number: (expected, said, reply, proofs)
        1: ("good", "good", '{"assessment": "good", "violations": []}', []),
        2: ("good", "bad", _reply(1), [_proof("false exploit", "no violating row")]),
        3: (
            "bad",
            "bad",
            _reply(1, 2),
            [_proof("refuted", "rule other than cited"), _proof(PROVEN)],
        ),
        4: ("bad", "bad", _reply(2), [_proof("refuted", "the compliant twin breaks too")]),
    }
    ids = {}
    try:
        for n, (expected, said, reply, _) in answers.items():
            case = replace(make_case(n, expected=expected), case_id=f"shop/s-0{n}-{expected}.md")
            outcome = Outcome.CORRECT if said == expected else Outcome.WRONG
            evaluation = Evaluation(
                run_id=run_id,
                case=case,
                index=n,
                completion=Completion(text=reply),
                scored=Scored(actual=said, outcome=outcome),
            )
            ids[n] = await store.record(evaluation, request_hash=f"r{n}")
        await store.record_findings(
            [
                stored_finding(ids[n], findings_of_reply(reply), proofs, 1, "PostgreSQL 16", "t")
                for n, (_, _, reply, proofs) in answers.items()
            ]
        )
    except BaseException:
        await store.close()
        raise
    return store, run_id


async def test_figures_are_read_back_from_the_stored_findings(tmp_path: Path) -> None:
    store, run_id = await _run_with_findings(tmp_path)
    try:
        rows = await store.run_results(run_id)
        stored = await store.findings_of_runs([run_id])
        one = await store.result(rows[2]["id"])
    finally:
        await store.close()
    assert len(stored) == 4
    assert [r.get("exploit_outcome") for r in rows] == [
        NO_EXPLOIT,
        "false exploit",
        PROVEN,
        "refuted",
    ]
    f = finding_summary(rows)
    assert f is not None
    assert (f.bad_cases, f.proven, f.proven_rate) == (2, 1, 0.5)
    assert (f.offered, f.offered_proven, f.exploit_precision, f.false_exploits) == (4, 1, 0.25, 1)
    assert f.refutations == {
        "no violating row": 1,
        "rule other than cited": 1,
        "the compliant twin breaks too": 1,
    }
    # pairs (good 1 or 2, bad 3 or 4): right only with good 1; of those, bad 3 is proven
    assert (f.pairs, f.p_c_proven) == (4, 0.25)
    assert f.proven_rate_ci is not None and f.proven_rate_ci[0] < 0.5 < f.proven_rate_ci[1]
    assert f.apps == {"shop": {"bad_cases": 2, "proven": 1}}
    assert one is not None and one.get("exploit_outcome") == PROVEN
    assert any("exploit 2 (rule 2): proven" in line for line in proof_lines(one))
    record = exported_result(one)
    assert record.exploit_outcome == PROVEN and record.exploit == [
        {"rule": 1, "exploit": EXPLOIT},
        {"rule": 2, "exploit": EXPLOIT},
    ]
    shown = plain(findings_lines(f))
    assert "proven findings 50.0%" in shown and "exploit precision 25.0% of 4" in shown
    dumped = RunSummary(findings=f).model_dump()
    assert dumped["findings"]["p_c_proven"] == 0.25
    assert "findings" not in RunSummary().model_dump()  # a run never proven has none


def test_a_run_never_proven_has_no_findings_figures() -> None:
    assert finding_summary([{"case_id": "a/s-01-bad.md", "expected_result": "bad"}]) is None


def test_the_random_exploit_baseline_draws_valid_exploits_from_each_scenario() -> None:
    suite = load_markdown_suite(bundled_cases_dir())
    baseline = BaselineProvider("baseline/random-exploit", seed=0)
    again = BaselineProvider("baseline/random-exploit", seed=0)
    other = BaselineProvider("baseline/random-exploit", seed=1)
    kinds = set()
    for case in suite.cases[:: len(suite.cases) // 12]:
        reply = baseline.answer(case)
        assert reply == again.answer(case)  # seeded by the seed and the case
        (offered,) = findings_of_reply(reply)
        assert offered.rule in case.spec_rules
        exploit = parse_exploit(offered.exploit)  # a valid schema 3 exploit
        kinds.add("http" if exploit.request is not None else "sql")
    assert kinds == {"http", "sql"}
    assert any(baseline.answer(c) != other.answer(c) for c in suite.cases[:10])


@pytest.mark.parametrize("model", ["baseline/random", "baseline/always-bad"])
def test_the_other_baselines_offer_no_exploit(model: str) -> None:
    case = load_markdown_suite(bundled_cases_dir()).cases[2]
    assert findings_of_reply(BaselineProvider(model, 0).answer(case)) == []


async def test_the_report_and_the_exports_carry_the_findings(tmp_path: Path) -> None:
    from secbench_tui.core.results.exports import to_csv, to_json, to_junit
    from secbench_tui.core.results.report.gathering import gather
    from secbench_tui.core.results.report.rendering import render_html

    store, _ = await _run_with_findings(tmp_path)
    try:
        data = await gather(store)
    finally:
        await store.close()
    (contender,) = data.contenders
    assert contender.findings is not None and contender.findings.proven == 1
    html = render_html(data)
    assert 'id="findings-table"' in html and "Proven findings" in html
    assert "the compliant twin breaks too 1" in html
    document = json.loads(to_json(data))
    assert document["runs"][0]["summary"]["findings"]["proven_rate"] == 0.5
    outcomes = [r["exploit_outcome"] for r in document["results"]]
    assert outcomes == ["no exploit", "false exploit", "proven", "refuted"]
    header, *lines = to_csv(data).splitlines()
    assert {"exploit", "exploit_outcome", "exploit_reason"} <= set(header.split(","))
    assert any(",proven," in line for line in lines)
    assert 'name="exploit_outcome" value="proven"' in to_junit(data)
