"""Right for the right reason, end to end: a loopback server answers each case with a chosen
verdict, rules and quotes; the figures the tool reports are checked against counts made here,
independently of the tool's code (issue 19).

The suite is written here: scenarios of two good and two bad cases, each bad case one line away
from the first good one. The first bad case breaks rule 1 (in scenario 0 rule 2 is also
acceptable); the second breaks rule 3, except in scenario 1 where `# Lines` moves its gold line.
"""

from __future__ import annotations

import json
import math
import random
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from secbench_tui.core.results.grading import SCORING_VERSION
from tests.e2e.harness import rows, run_cli
from tests.e2e.server import Behaviour, LoopbackServer, bad_request, reply

RULES = (1, 2, 3, 4)
SCENARIOS = 8
SPEC = (
    "# Prompt\nThe shop service.\n\n"
    "1. Every query filters by tenant_id.\n"
    "2. Callers see only their own orders.\n"
    "3. Every list has a LIMIT of at most 100.\n"
    "4. Never return password_hash.\n"
)


@dataclass
class Written:
    """One case as written, and (after scripting) what the server answers for it."""

    case_id: str
    scenario: int
    expected: str
    code_lines: list[str]
    gold: set[int] = field(default_factory=set)
    gold_lines: set[int] = field(default_factory=set)
    verdict: str | None = None  # what the answer says, None: no verdict (unparsed, error)
    cited: list[tuple[int, int | None]] = field(default_factory=list)  # (rule, line of quote)

    @property
    def code(self) -> str:
        return "\n".join(self.code_lines)


def _good_lines(s: int, variant: int) -> list[str]:
    return [
        "SELECT id, total" + (", placed_at" if variant else ""),
        f"FROM orders_{s}",
        "WHERE id = :id",
        "  AND tenant_id = :tenant_id",
        "  AND owner_id = :user_id",
        "LIMIT 10;",
    ]


def write_reason_suite(root: Path) -> list[Written]:
    folder = root / "shop"
    folder.mkdir(parents=True)
    (folder / "SPEC.md").write_text(SPEC, encoding="utf-8")
    cases: list[Written] = []
    for s in range(SCENARIOS):
        for n in (1, 2):
            cases.append(Written(f"shop/sc{s}-0{n}-good.md", s, "good", _good_lines(s, n - 1)))
        bad1 = _good_lines(s, 0)
        bad1[3] = "  AND tenant_id = tenant_id"  # line 4: rule 1
        bad2 = _good_lines(s, 0)
        bad2[5] = "LIMIT :n;"  # line 6: rule 3
        cases.append(Written(f"shop/sc{s}-03-bad.md", s, "bad", bad1, {1, 2} if s == 0 else {1}))
        cases[-1].gold_lines = {4}
        cases.append(Written(f"shop/sc{s}-04-bad.md", s, "bad", bad2, {3}, {2} if s == 1 else {6}))
    for case in cases:
        extra = ""
        if case.expected == "bad":
            rule = 1 if case.case_id.endswith("03-bad.md") else 3
            extra = f"# Rule\n{rule}\n\n"
            if case.gold - {rule}:
                extra += f"# Also acceptable\n{', '.join(map(str, sorted(case.gold - {rule})))}\n\n"
            if case.scenario == 1 and rule == 3:
                extra += "# Lines\n2\n\n"
        text = f"# Code\n```sql\n{case.code}\n```\n\n{extra}# Expected\n{case.expected}\n"
        (root / case.case_id).write_text(text, encoding="utf-8")
    return cases


def _quote_for(case: Written, rng: random.Random) -> tuple[str, int | None]:
    """A quote and the line it is on: a gold line (its spaces changed), the line next to one,
    a line far away, or text not in the code."""
    choice = rng.choice(("gold", "next", "far", "nowhere"))
    gold = min(case.gold_lines) if case.gold_lines else 4
    if choice == "nowhere":
        return "DROP TABLE everything", None
    line = {"gold": gold, "next": gold + 1 if gold < 6 else gold - 1, "far": 1 if gold > 3 else 6}[
        choice
    ]
    text = case.code_lines[line - 1]
    return "  ".join(text.split()) if choice == "gold" else text.strip(), line


def script_answers(server: LoopbackServer, cases: list[Written], seed: int) -> None:
    """Each case gets one answer drawn at random from every kind of reply there is."""
    rng = random.Random(seed)
    for case in cases:
        kind = rng.choice(("good", "bad", "bad", "bad", "prose", "garbage", "broken", "error"))
        behaviour: Behaviour
        if kind == "error":
            behaviour = bad_request()
        elif kind == "garbage":
            behaviour = reply("I cannot tell without more context.")
        elif kind == "broken":  # a bad verdict naming no violation: breaks schema 2
            body = {"explanation": "x", "assessment": "bad", "violations": []}
            behaviour = reply(json.dumps(body))
        elif kind == "prose":  # schema 1, inside prose: a verdict with no reason
            case.verdict = rng.choice(("good", "bad"))
            answer = json.dumps({"explanation": "Looks fine.", "assessment": case.verdict})
            behaviour = reply(f"Here is my review.\n\n{answer}\n\nThanks.")
        elif kind == "good":
            case.verdict = "good"
            body = {"explanation": "ok", "assessment": "good", "violations": []}
            behaviour = reply(json.dumps(body))
        else:
            case.verdict = "bad"
            violations = []
            for _ in range(rng.choice((1, 1, 2, 3))):
                rule = rng.choice(RULES) if rng.random() < 0.5 else rng.choice((1, 3))
                quote, line = _quote_for(case, rng)
                case.cited.append((rule, line))
                violations.append({"rule": rule, "quote": quote})
            body = {"explanation": "broken", "assessment": "bad", "violations": violations}
            behaviour = reply(json.dumps(body))
        server.always(case.code, behaviour)


# --- the figures, counted here -------------------------------------------------------------


def right_rule(case: Written) -> bool:
    """Answered bad citing an acceptable rule, and at most one rule that is not."""
    cited = {rule for rule, _ in case.cited}
    return case.verdict == "bad" and bool(cited & case.gold) and len(cited - case.gold) <= 1


def cites_gold(case: Written) -> bool:
    return case.verdict == "bad" and any(rule in case.gold for rule, _ in case.cited)


def right_line(case: Written) -> bool:
    """The right rule, and every located quote of an acceptable rule (at least one) within a
    line of a gold line."""
    pointed = [line for rule, line in case.cited if rule in case.gold and line is not None]
    return (
        right_rule(case)
        and bool(pointed)
        and all(any(abs(line - g) <= 1 for g in case.gold_lines) for line in pointed)
    )


def expected_figures(cases: list[Written]) -> dict[str, dict[str, object]]:
    bad = [c for c in cases if c.expected == "bad"]
    cited = [rule for c in bad for rule in dict.fromkeys(r for r, _ in c.cited)]
    cited_right = [
        rule for c in bad for rule in dict.fromkeys(r for r, _ in c.cited) if rule in c.gold
    ]
    pairs = {"p_c": 0, "p_v": 0, "p_b": 0, "p_r": 0, "p_c_rule": 0, "n": 0}
    solved = 0
    for s in range(SCENARIOS):
        members = [c for c in cases if c.scenario == s]
        solved += all(c.verdict == c.expected for c in members)
        for g in (c for c in members if c.expected == "good"):
            for b in (c for c in members if c.expected == "bad"):
                pairs["n"] += 1
                kind = {
                    ("good", "bad"): "p_c",
                    ("bad", "bad"): "p_v",
                    ("good", "good"): "p_b",
                    ("bad", "good"): "p_r",
                }.get((g.verdict or "", b.verdict or ""))
                if kind:
                    pairs[kind] += 1
                pairs["p_c_rule"] += kind == "p_c" and right_rule(b)
    false_alarms: dict[int, int] = {}
    for c in cases:
        if c.expected == "good" and c.verdict == "bad":
            for rule in dict.fromkeys(r for r, _ in c.cited):
                false_alarms[rule] = false_alarms.get(rule, 0) + 1
    n = pairs.pop("n")
    return {
        "pairwise": {"pairs": n, **{k: v / n for k, v in pairs.items()}},
        "reason": {
            "bad_cases": len(bad),
            "right_rule": sum(map(right_rule, bad)) / len(bad),
            "right_rule_and_line": sum(map(right_line, bad)) / len(bad),
            "rule_precision": len(cited_right) / len(cited) if cited else None,
            "rule_recall": sum(map(cites_gold, bad)) / len(bad),
        },
        "scenarios": {"count": SCENARIOS, "solved": solved},
        "counts": {
            "right": sum(map(right_rule, bad)),
            "imprecise": sum(1 for c in bad if cites_gold(c) and not right_rule(c)),
            "wrong_rule": sum(1 for c in bad if c.verdict == "bad" and not cites_gold(c)),
            "wrong_verdict": sum(1 for c in bad if c.verdict != "bad"),
        },
        "false_alarms": false_alarms,
    }


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b)  # type: ignore[arg-type]
    return a == b


def run_and_check(
    server: LoopbackServer, tmp_path: Path, seed: int
) -> tuple[Path, dict, list[Written]]:
    cases = write_reason_suite(tmp_path / "suite")
    script_answers(server, cases, seed)
    db = tmp_path / "results.db"
    out = tmp_path / "summary.json"
    done = run_cli(
        server.base_url, db, tmp_path / "suite", "--max-retries", "0", "--summary-json", str(out)
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    want = expected_figures(cases)
    for block in ("pairwise", "reason", "scenarios"):
        for key, value in want[block].items():  # type: ignore[union-attr]
            assert _close(summary[block][key], value), (seed, block, key, summary[block], value)
    counts = want["counts"]
    assert summary["reason"]["right_rule_cases"] == counts["right"]
    assert summary["reason"]["wrong_rule"] == counts["wrong_rule"]
    assert summary["reason"]["imprecise"] == counts["imprecise"]
    assert summary["reason"]["wrong_verdict"] == counts["wrong_verdict"]
    low, high = wilson(counts["right"], want["reason"]["bad_cases"])  # type: ignore[arg-type]
    shown_low, shown_high = summary["reason"]["right_rule_ci"]
    assert math.isclose(shown_low, low) and math.isclose(shown_high, high)
    p_c_low, p_c_high = summary["pairwise"]["p_c_ci"]
    assert 0 <= p_c_low <= summary["pairwise"]["p_c"] <= p_c_high <= 1
    per_rule = summary["reason"]["per_rule"]
    for rule, alarms in want["false_alarms"].items():  # type: ignore[union-attr]
        assert per_rule[str(rule)]["false_alarms"] == alarms, (seed, rule, per_rule)
    assert all(
        row["false_alarms"] == want["false_alarms"].get(int(rule), 0)  # type: ignore[union-attr]
        for rule, row in per_rule.items()
    )
    return db, summary, cases


def test_every_reason_and_pair_figure_matches_counts_made_independently(
    server: LoopbackServer, tmp_path: Path
) -> None:
    for seed in (1, 2, 3):
        server.reset()
        run_and_check(server, tmp_path / f"seed{seed}", seed)


def test_a_reply_that_breaks_schema_2_is_unparsed_and_says_why(
    server: LoopbackServer, tmp_path: Path
) -> None:
    cases = write_reason_suite(tmp_path / "suite")
    broken = json.dumps({"explanation": "x", "assessment": "good", "violations": [{"rule": 1}]})
    for case in cases:
        server.always(case.code, reply(broken))
    db = tmp_path / "results.db"
    done = run_cli(server.base_url, db, tmp_path / "suite")
    assert done.returncode == 0, done.stderr
    stored = rows(db)
    assert {r["outcome"] for r in stored} == {"unparsed"}
    assert all("violations" in json.loads(r["reasons"])["problem"] for r in stored)
    out = tmp_path / "results.xml"
    suite = tmp_path / "suite"
    done = run_cli(server.base_url, db, suite, "--export", "junit", "--out", str(out))
    assert done.returncode == 0, done.stderr
    xml = out.read_text()
    assert xml.count("the reply breaks verdict schema 2: assessment is good but") == len(cases)
    out = tmp_path / "results.json"
    done = run_cli(server.base_url, db, suite, "--export", "json", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert all(r["schema_problem"] for r in json.loads(out.read_text())["results"])


def test_rescore_changes_stored_scores_after_a_scoring_change_without_a_request(
    server: LoopbackServer, tmp_path: Path
) -> None:
    db, summary, cases = run_and_check(server, tmp_path, seed=4)
    asked = len(server.completions())
    before = {r["id"]: r for r in rows(db)}
    # The database as the scoring before version 2 left it: no reasons, no gold, no version,
    # and a bad verdict with no violations (schema 2 broken) counted as a verdict.
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("UPDATE evaluations SET reasons=NULL, gold=NULL, scoring_version=NULL")
        conn.execute(
            "UPDATE evaluations SET outcome = CASE expected_result WHEN 'bad' THEN 'correct'"
            " ELSE 'wrong' END, actual_result='bad' WHERE raw_reply LIKE '%\"violations\": []%'"
            ' AND raw_reply LIKE \'%"assessment": "bad"%\''
        )
        conn.commit()
    old = {r["id"]: r for r in rows(db)}
    assert old != before
    done = run_cli(server.base_url, db, tmp_path / "suite", "--rescore")
    assert done.returncode == 0, done.stderr
    assert "rescored" in done.stdout
    assert len(server.completions()) == asked  # the model was not asked again
    after = {r["id"]: r for r in rows(db)}
    for row_id, row in after.items():
        if row["error"] is None:  # a reply arrived: scored again, by this version
            assert row["scoring_version"] == SCORING_VERSION
            for column in ("outcome", "actual_result", "reasons", "gold"):
                assert row[column] == before[row_id][column], (row["case_id"], column)
    assert any(old[i]["outcome"] != after[i]["outcome"] for i in after)
    report = tmp_path / "report.json"
    suite = tmp_path / "suite"
    done = run_cli(server.base_url, db, suite, "--export", "json", "--out", str(report))
    assert done.returncode == 0, done.stderr
    exported = json.loads(report.read_text())
    assert exported["runs"][0]["summary"]["pairwise"]["p_c"] == summary["pairwise"]["p_c"]
    results = {r["case_id"]: r for r in exported["results"]}
    answered = {r["case_id"] for r in after.values() if r["error"] is None}
    for case in cases:  # the rules cited and the quotes, as the server sent them
        assert results[case.case_id]["rules_cited"] == [rule for rule, _ in case.cited]
        assert len(results[case.case_id]["quotes"]) == len(case.cited)
        if case.case_id not in answered:  # an error has no reply to rescore: its gold stays
            continue  # as this test left it (none)
        assert results[case.case_id]["gold_rules"] == (
            sorted(case.gold, key=lambda r: r not in (1, 3)) if case.expected == "bad" else []
        )
    done = run_cli(server.base_url, db, suite, "--export", "csv", "--out", str(tmp_path / "r.csv"))
    assert done.returncode == 0, done.stderr
    header, *lines = (tmp_path / "r.csv").read_text().splitlines()
    assert "rules_cited" in header.split(",") and "quotes" in header.split(",")

    # A quote holding a lone surrogate (JSON's \ud800) is kept as U+FFFD: scored again by the
    # same scoring, it is the same reason, and a rescore says nothing changed.
    with closing(sqlite3.connect(db)) as conn:
        quoting = conn.execute(
            'UPDATE evaluations SET raw_reply = replace(raw_reply, \'"quote": "\','
            ' \'"quote": "\\ud800\') WHERE raw_reply LIKE \'%"quote": "%\''
        ).rowcount
        conn.commit()
    assert quoting > 0
    first = run_cli(server.base_url, db, suite, "--rescore")
    assert first.returncode == 0 and f"reason changed on {quoting}" in first.stdout, first.stdout
    again = run_cli(server.base_url, db, suite, "--rescore")
    assert again.returncode == 0 and "reason changed on 0" in again.stdout, again.stdout


def test_baselines_land_on_the_chance_levels(server: LoopbackServer, tmp_path: Path) -> None:
    """On the bundled suite: always bad has P-V 100% and P-C 0; a coin flip has P-C near 25%
    (inside its interval), and the rules it cites are the SPEC's."""
    from secbench_tui.core.suites.gold import spec_rules
    from secbench_tui.core.suites.markdown import discover_apps

    bundled = Path(__file__).resolve().parents[2] / "secbench_tui" / "cases"
    rules = {app.name: set(spec_rules(app.prompt)) for app in discover_apps(bundled)}
    db = tmp_path / "results.db"
    figures = {}
    for model in ("baseline/always-bad", "baseline/always-good", "baseline/random"):
        out = tmp_path / f"{model.split('/')[1]}.json"
        done = run_cli(
            server.base_url, db, bundled, "--summary-json", str(out), "--seed", "3", model=model
        )
        assert done.returncode == 0, done.stderr
        figures[model] = json.loads(out.read_text())
    always_bad = figures["baseline/always-bad"]["pairwise"]
    assert always_bad["pairs"] == 196
    assert (always_bad["p_v"], always_bad["p_c"], always_bad["p_b"], always_bad["p_r"]) == (
        1.0,
        0.0,
        0.0,
        0.0,
    )
    assert figures["baseline/always-good"]["pairwise"]["p_b"] == 1.0
    assert figures["baseline/always-good"]["reason"]["right_rule"] == 0.0
    coin = figures["baseline/random"]["pairwise"]
    low, high = coin["p_c_ci"]
    assert low <= 0.25 <= high, coin
    assert coin["p_c"] + coin["p_v"] + coin["p_b"] + coin["p_r"] == 1.0
    assert figures["baseline/random"]["scenarios"]["count"] == 49
    for row in rows(db):
        reason = json.loads(row["reasons"])
        assert reason["given"] is True  # schema 2 kept: violations listed when bad
        cited = {c["rule"] for c in reason["citations"]}
        assert cited <= rules[row["app"]]
        assert bool(cited) == (row["actual_result"] == "bad")


def test_the_report_compares_two_models_on_scenarios_solved(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """Two models, two sets of answers: the report's scenario McNemar table counts the
    scenarios each solved as counted here, and its per-model rows lead with P-C."""
    import html
    import re

    suite = tmp_path / "suite"
    cases = write_reason_suite(suite)
    db = tmp_path / "results.db"
    solved: dict[str, set[int]] = {}
    for seed, model in ((5, "openai/gpt-4o-mini"), (6, "anthropic/claude-3.5-haiku")):
        server.reset()
        for case in cases:
            case.verdict, case.cited = None, []
        # mostly right answers, so that some scenarios are solved
        rng = random.Random(seed)
        for case in cases:
            right = rng.random() < 0.8
            case.verdict = case.expected if right else ("good" if case.expected == "bad" else "bad")
            violations = [{"rule": 1, "quote": "x"}] if case.verdict == "bad" else []
            body = {"explanation": "e", "assessment": case.verdict, "violations": violations}
            server.always(case.code, reply(json.dumps(body)))
        done = run_cli(server.base_url, db, suite, model=model)
        assert done.returncode == 0, done.stderr
        solved[model] = {
            s
            for s in range(SCENARIOS)
            if all(c.verdict == c.expected for c in cases if c.scenario == s)
        }
    out = tmp_path / "report.html"
    done = run_cli(server.base_url, db, suite, "--report", "--out", str(out))
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    table = page.split('id="scenario-pairs"', 1)[1].split("</table>", 1)[0]
    cells = [html.unescape(c) for c in re.findall(r'<td class="n">([^<]*)</td>', table)]
    first, second = (html.unescape(c) for c in re.findall(r"<td>([^<]*)</td>", table)[:2])
    a, b = solved[first], solved[second]  # the report's order (A, B)
    assert {first, second} == set(solved)
    assert cells[:4] == [str(SCENARIOS), str(len(a & b)), str(len(a - b)), str(len(b - a))]
    assert 'id="reasons-table"' in page and "P-C" in page


def test_a_suite_without_rules_shows_reasons_as_not_available(
    server: LoopbackServer, tmp_path: Path
) -> None:
    from tests.e2e.harness import write_suite

    write_suite(tmp_path / "suite", {"shop": ["good", "bad", "good", "bad"]})
    out = tmp_path / "summary.json"
    db = tmp_path / "results.db"
    done = run_cli(server.base_url, db, tmp_path / "suite", "--summary-json", str(out))
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    assert summary["reason"]["bad_cases"] == 0 and summary["reason"]["right_rule"] is None
    assert summary["accuracy"] == 1.0  # the verdicts still count (schema 1 replies)
    assert "right reason n/a (no bad case of this run names a rule)" in done.stdout
