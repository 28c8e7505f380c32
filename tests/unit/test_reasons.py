"""Why a bad case is bad, and why the model said what it said (issue 19): the case format,
verdict schema 2, quotes located in the code, reason and pair figures, lint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from secbench_tui.core.lint.suite import lint_suite
from secbench_tui.core.models import Case, ReasonScore, SuiteKind, scenario_of
from secbench_tui.core.results.grading import score_markdown
from secbench_tui.core.results.pairwise import (
    PairTally,
    compare_scenarios,
    pair_figures,
    pair_kind,
    scenario_tallies,
)
from secbench_tui.core.results.parsing import Violation, parse_verdict
from secbench_tui.core.results.reasons import (
    Answer,
    judge,
    locate,
    precise,
    reason_figures,
    reason_summary_text,
    rule_text,
    within,
)
from secbench_tui.core.suites.gold import changed_lines, derived_lines, parse_lines, spec_rules
from secbench_tui.core.suites.markdown import load_markdown_suite

BUNDLED = Path(__file__).resolve().parents[2] / "secbench_tui" / "cases"

CODE = "SELECT id\nFROM orders\nWHERE id = :id\n  AND org_id = org_id\nLIMIT 10;"


def bad_case(**fields: object) -> Case:
    base: dict[str, object] = {
        "kind": SuiteKind.MARKDOWN,
        "app": "shop",
        "case_id": "shop/get-order-03-bad.md",
        "test_file": "x",
        "expected": "bad",
        "code": CODE,
        "rule": 1,
        "also_rules": (2,),
        "gold_lines": (4,),
        "spec_rules": (1, 2, 3),
    }
    base.update(fields)
    return Case(**base)


def reply(assessment: str, *violations: tuple[object, object]) -> str:
    return json.dumps(
        {
            "explanation": "because",
            "assessment": assessment,
            "violations": [{"rule": r, "quote": q} for r, q in violations],
        }
    )


def test_spec_rules_are_the_numbered_list_at_the_start_of_lines() -> None:
    prompt = "Intro.\n1. One.\n  2. nested, not a rule\n```sql\n3. in a fence\n```\n4. Four.\n"
    assert spec_rules(prompt) == (1, 4)


def test_every_bundled_bad_case_names_one_rule_of_its_spec_and_has_gold_lines() -> None:
    suite = load_markdown_suite(BUNDLED)
    bad = [c for c in suite.cases if c.expected == "bad"]
    assert len(bad) == 98
    for case in bad:
        assert case.rule in case.spec_rules, case.case_id
        assert f"rule {case.rule}" in case.description.lower()  # as its description says
        assert case.gold_lines, case.case_id
    assert all(c.rule is None and not c.gold_lines for c in suite.cases if c.expected == "good")


@pytest.mark.parametrize("style", ["secbench-tui", "security-bench"])
def test_the_model_never_sees_the_reason_sections(style: str) -> None:
    suite = load_markdown_suite(BUNDLED, evaluation_prompt="Judge.\n", request_style=style)
    for case in suite.cases:
        sent = "\n".join(m.content for m in case.prompt_messages())
        for secret in ("# Rule", "# Also acceptable", "# Lines", "Breaks rule"):
            assert secret not in sent, (case.case_id, secret)


def test_gold_lines_come_from_the_nearest_good_sibling() -> None:
    good = "a\nb\nc\nd"
    assert changed_lines("a\nX\nc\nd", good) == (2,)
    assert changed_lines("a\nc\nd", good) == (1, 2)  # b missing: the lines either side
    assert derived_lines("a\nX\nc\nd", ["q\nr\nc\nd", good]) == (2,)
    assert parse_lines("7-9, 12") == (7, 8, 9, 12)
    assert isinstance(parse_lines("seven"), str)


def test_scenario_is_the_name_without_number_and_label() -> None:
    assert scenario_of("shop/get-order-03-bad.md") == "shop/get-order"
    assert scenario_of("get-order-01-good.md") == "get-order"
    assert scenario_of("shop/notes.md") is None


def test_schema_2_replies_and_what_breaks_them() -> None:
    ok = parse_verdict(reply("bad", (1, "AND org_id = org_id")))
    assert ok.assessment == "bad" and ok.violations == (Violation(1, "AND org_id = org_id"),)
    assert parse_verdict(reply("good")).violations == ()
    assert parse_verdict(reply("bad", ("Rule 5", "x"))).violations == (Violation(5, "x"),)
    for broken in (reply("bad"), reply("good", (1, "x")), reply("bad", ("five", "x"))):
        verdict = parse_verdict(broken)
        assert verdict.assessment is None and verdict.problem, broken
    v1 = parse_verdict('Sure.\n{"explanation": "e", "assessment": "Bad"}')
    assert v1.assessment == "bad" and v1.violations is None and v1.problem is None


def test_a_broken_schema_is_unparsed_never_scored() -> None:
    scored = score_markdown(bad_case(), reply("bad"))
    assert scored.outcome == "unparsed" and scored.actual is None
    assert scored.reason is not None and "violations" in (scored.reason.problem or "")


def test_quotes_are_found_ignoring_whitespace_on_every_line_they_span() -> None:
    assert locate("AND   org_id=org_id", CODE).lines == (4,)
    assert locate("WHERE id = :id AND org_id", CODE).lines == (3, 4)
    assert locate("LIMIT 10;", CODE).lines == (5,)  # short, but a whole line
    for nowhere, why in (
        ("DROP TABLE users", "not in the code"),
        ("  ", "empty quote"),
        ("e", "too short"),  # in the code many times, and one letter says nothing
        ("org_id", "too short"),  # 6 characters, part of a line
        ("id", "too short"),
    ):
        where = locate(nowhere, CODE)
        assert where.lines == () and why in (where.note or ""), (nowhere, where)
    twice = locate("AND org_id = :org_id", "SELECT 1\nAND org_id = :org_id\nAND org_id = :org_id")
    assert twice.lines == () and "found 2 times" in (twice.note or "")


def test_a_quote_points_at_the_flaw_only_when_it_lies_within_the_gold_lines() -> None:
    case = bad_case()
    whole_block = judge(case, parse_verdict(reply("bad", (1, CODE))))
    assert whole_block.right_rule and not whole_block.right_line  # lines 1-5, gold is 4
    letter = judge(case, parse_verdict(reply("bad", (1, "e"))))
    assert letter.right_rule and not letter.right_line
    assert letter.citations[0].lines == () and "too short" in (letter.citations[0].note or "")
    assert within((3, 4, 5), (4,)) and not within((2, 3, 4), (4,)) and not within((), (4,))


def test_the_right_reason_rewards_precision() -> None:
    case = bad_case(spec_rules=(1, 2, 3, 4, 5))  # gold 1, also acceptable 2
    quote = "AND org_id = org_id"

    def said(*rules: int) -> ReasonScore:
        return judge(case, parse_verdict(reply("bad", *((r, quote) for r in rules))))

    assert said(1).right_rule and said(2).right_rule and said(1, 2).right_rule
    assert said(1, 3).right_rule and said(1, 2, 3).right_rule  # one other rule is allowed
    assert not said(1, 3, 4).right_rule and not said(1, 2, 3, 4, 5).right_rule  # every rule
    assert not said(3).right_rule
    assert precise((1, 3), frozenset({1})) and not precise((3,), frozenset({1}))
    imprecise = said(1, 3, 4)
    text = reason_summary_text(imprecise, (1, 2))
    assert "a right rule among 2 others (at most 1 allowed)" in text[-1]


def test_the_right_rule_and_the_right_line() -> None:
    case = bad_case()
    right = judge(case, parse_verdict(reply("bad", (2, "AND org_id = org_id"))))
    assert right.right_rule and right.right_line  # an acceptable rule, on the gold line
    slack = judge(case, parse_verdict(reply("bad", (1, "WHERE id = :id"))))
    assert slack.right_rule and slack.right_line  # one line off still counts
    far = judge(case, parse_verdict(reply("bad", (1, "SELECT id"))))
    assert far.right_rule and not far.right_line
    wrong = judge(case, parse_verdict(reply("bad", (3, "AND org_id = org_id"))))
    assert wrong.right_rule is False and not wrong.right_line
    said_good = judge(case, parse_verdict(reply("good")))
    assert said_good.right_rule is False
    no_rules = judge(bad_case(rule=None, also_rules=()), parse_verdict(reply("bad", (1, "x"))))
    assert no_rules.right_rule is None
    assert rule_text(right) == "2 ✓" and rule_text(wrong) == "3 ✗" and rule_text(None) == "-"
    # a right verdict citing a wrong rule is said to be just that, not "rule or verdict"
    gold = (case.rule, *case.also_rules)
    assert reason_summary_text(wrong, gold)[-1].startswith("not the right reason: a wrong rule")
    assert reason_summary_text(said_good, gold)[-1] == "not the right reason: no rule cited"


def answers() -> list[Answer]:
    """Scenario a: both goods right, one bad right (rule right), one bad wrong.
    Scenario b: everything answered bad, one good unanswered."""
    return [
        Answer("x/a-01-good.md", "good", "good"),
        Answer("x/a-02-good.md", "good", "good"),
        Answer("x/a-03-bad.md", "bad", "bad", 1, frozenset({1}), (1,), True, True),
        Answer("x/a-04-bad.md", "bad", "good", 2, frozenset({2})),
        Answer("x/b-01-good.md", "good", "bad", cited=(3,)),
        Answer("x/b-02-good.md", "good", None),
        Answer("x/b-03-bad.md", "bad", "bad", 1, frozenset({1}), (2, 3), False, False),
    ]


def test_pairs_are_counted_over_every_good_bad_combination() -> None:
    tally = pair_figures(answers())
    # a: 2x2 pairs: (g, bad-right) P-C twice, (g, bad-wrong) P-B twice; b: 2x1: P-V, unanswered
    assert tally == PairTally(
        pairs=6, p_c=2, p_v=1, p_b=2, p_r=0, unanswered=1, p_c_rule=2, scenarios=2, solved=0
    )
    assert pair_kind(answers()[0], answers()[3]) == "p_b"
    assert tally.rate("p_c") == pytest.approx(2 / 6)


def test_reason_figures_and_the_per_rule_table() -> None:
    figures = reason_figures(answers())
    assert (figures.bad_cases, figures.right_rule, figures.right_rule_and_line) == (3, 1, 1)
    assert (figures.wrong_rule, figures.wrong_verdict) == (1, 1)
    assert figures.rule_precision == pytest.approx(1 / 3)  # cited 1; 2, 3: one right of three
    assert figures.per_rule[3].false_alarms == 1 and figures.per_rule[1].right == 1


def test_scenarios_are_compared_by_mcnemar() -> None:
    solved = {f"s{i}": PairTally(scenarios=1, solved=1) for i in range(8)}
    unsolved = {f"s{i}": PairTally(scenarios=1, solved=0) for i in range(8)}
    result = compare_scenarios(solved, unsolved)
    assert (result.only_a, result.only_b) == (8, 0) and result.p_value < 0.01
    assert set(scenario_tallies(answers())) == {"x/a", "x/b"}


def test_lint_reports_missing_unknown_and_misplaced_rules(tmp_path: Path) -> None:
    app = tmp_path / "shop"
    app.mkdir()
    (app / "SPEC.md").write_text("# Prompt\nShop.\n1. Filter by tenant.\n2. Limit.\n")

    def case(name: str, expected: str, extra: str, where: str) -> None:
        (app / name).write_text(
            f"# Code\n```sql\nSELECT {where} FROM t;\n```\n\n{extra}# Expected\n{expected}\n"
        )

    case("a-01-good.md", "good", "# Rule\n1\n\n", "a")
    case("a-02-bad.md", "bad", "# Rule\n7\n\n", "b")
    case("b-01-good.md", "good", "", "c")
    case("b-02-bad.md", "bad", "", "d")
    messages = [str(f) for f in lint_suite(tmp_path).findings if f.check == "rule" and f.fails]
    assert any("a-01-good.md" in m and "good case breaks no rule" in m for m in messages)
    assert any("a-02-bad.md" in m and "rule 7 is not in the SPEC" in m for m in messages)
    assert any("b-02-bad.md" in m and "without '# Rule'" in m for m in messages)
    assert not any(f.fails for f in lint_suite(BUNDLED).findings if f.check == "rule")


def test_the_bootstrap_resamples_scenarios_and_agrees_with_the_clustered_interval() -> None:
    from secbench_tui.core.results.pairwise import bootstrap_interval, clustered_interval

    tallies = [PairTally(pairs=4, p_c=i % 5, scenarios=1, solved=i % 2) for i in range(49)]
    boot = bootstrap_interval(tallies, "p_c")
    assert boot is not None and boot == bootstrap_interval(tallies, "p_c")  # seeded
    clustered = clustered_interval([(t.p_c, t.pairs) for t in tallies])
    assert clustered is not None
    assert abs(boot[0] - clustered[0]) < 0.02 and abs(boot[1] - clustered[1]) < 0.02
    p_c = sum(t.p_c for t in tallies) / sum(t.pairs for t in tallies)
    assert boot[0] < p_c < boot[1]
    # pairs of one scenario move together: wider than if the 196 pairs were independent
    from secbench_tui.core.results.metrics import proportion_interval

    low, high = proportion_interval(p_c, 196)
    assert boot[1] - boot[0] > high - low


@pytest.mark.parametrize("p_c", [0, 4])
def test_a_pairwise_interval_is_never_zero_wide_when_every_scenario_scored_alike(p_c: int) -> None:
    """`P-C 0.0% (95% CI 0.0%-0.0%) of 8 pairs` claimed certainty from two scenarios: a
    resampling interval has no spread to show when every scenario scored the same share."""
    from secbench_tui.core.results.metrics import proportion_interval
    from secbench_tui.core.results.pairwise import bootstrap_interval

    for count in (1, 2, 49):
        tallies = [PairTally(pairs=4, p_c=p_c, scenarios=1) for _ in range(count)]
        tallies.append(PairTally(scenarios=1))  # a scenario without a pair is no unit
        interval = bootstrap_interval(tallies, "p_c")
        assert interval is not None
        assert interval == proportion_interval(p_c / 4, count)  # scenarios as the units
        assert interval[1] - interval[0] > 0.05


def test_recall_counts_a_right_rule_among_too_many_and_the_lead_figure_does_not() -> None:
    every = Answer("x/c-03-bad.md", "bad", "bad", 1, frozenset({1}), (1, 2, 3), False, False)
    figures = reason_figures([*answers(), every])
    assert (figures.bad_cases, figures.right_rule, figures.imprecise) == (4, 1, 1)
    assert (figures.wrong_rule, figures.wrong_verdict) == (1, 1)
    assert figures.rule_recall == pytest.approx(2 / 4) and figures.right_rule_rate == 0.25


def test_quoting_every_line_under_one_rule_does_not_find_the_line() -> None:
    """Each line of the code quoted as its own violation of one rule: every quote is located
    (a whole line, found once) and one of them is on the gold line, but nothing was pointed
    at. Scoring version 3 credited "rule and line" here."""
    every_line = [(1, line) for line in CODE.splitlines()]

    scored = score_markdown(bad_case(), reply("bad", *every_line))
    assert scored.reason is not None
    assert all(c.lines for c in scored.reason.citations)  # each quote located
    assert scored.reason.right_rule and not scored.reason.right_line

    on_the_flaw = score_markdown(bad_case(), reply("bad", (1, "AND org_id = org_id"), (3, CODE)))
    assert on_the_flaw.reason is not None and on_the_flaw.reason.right_line  # another rule's quote
