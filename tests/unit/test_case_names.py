"""The one rule that reads a case file's name, and the parts of the program that pair cases
by it: every number of digits gives the same scenarios and the same pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from secbench_tui.core.case_names import read_name, scenario_of
from secbench_tui.core.models import Case, SuiteKind
from secbench_tui.core.results.pairwise import pair_figures
from secbench_tui.core.results.reasons import Answer
from secbench_tui.core.results.robustness import robustness
from secbench_tui.core.verify.data import Scenario
from secbench_tui.core.verify.data import scenario_of as verify_scenario
from secbench_tui.tui.format import file_name


@pytest.mark.parametrize("number", ["1", "03", "007", "1234"])
def test_any_number_of_digits_names_the_same_scenario(number: str) -> None:
    case_id = f"shop/get-order-{number}-bad.md"
    assert scenario_of(case_id) == "shop/get-order"
    assert verify_scenario(case_id) == "get-order"
    read = read_name(case_id)
    assert read is not None and (read.number, read.label) == (int(number), "bad")
    case = Case(
        kind=SuiteKind.MARKDOWN, app="shop", case_id=case_id, test_file="", expected="bad", code=""
    )
    assert case.scenario == "shop/get-order"


def test_the_scenario_is_what_comes_before_the_last_number() -> None:
    assert scenario_of("shop/report-2024-01-good.md") == "shop/report-2024"
    assert scenario_of("get-order-01-good.md") == "get-order"
    for unnamed in ("shop/notes.md", "shop/get-order-bad.md", "shop/x-01-ugly.md", "x-1-bad.txt"):
        assert scenario_of(unnamed) is None


def _answers(width: int) -> list[Answer]:
    return [
        Answer(f"a/s{s}-{n:0{width}d}-{label}.md", label, label)
        for s in range(3)
        for n, label in enumerate(("good", "good", "bad", "bad"), start=1)
    ]


@pytest.mark.parametrize("width", [1, 2, 3])
def test_pairs_do_not_depend_on_the_digit_count(width: int) -> None:
    tally = pair_figures(_answers(width))
    assert (tally.pairs, tally.p_c, tally.scenarios, tally.solved) == (12, 12, 3, 3)


@pytest.mark.parametrize("width", [1, 3])
def test_robustness_pairs_by_the_same_rule(width: int) -> None:
    rows = [
        {
            "case_id": a.case_id,
            "repeat": 0,
            "expected_result": a.expected,
            "actual_result": a.expected,
            "outcome": "correct",
            "variant": None,
            "reasons": None,
        }
        for a in _answers(width)
    ]
    first = rows[0]
    rows.append(
        {
            **first,
            "case_id": f"{first['case_id']}#layout/0",
            "variant": {"original": first["case_id"], "relation": "layout", "seed": 0},
        }
    )
    figures = robustness(rows, {}, {"layout": "invariance"}, repeats=1)
    assert figures is not None and figures.pc_original == 1.0


def test_verify_runs_are_matched_by_number_whatever_its_digits(tmp_path: Path) -> None:
    scenario = Scenario(
        name="s", path=tmp_path, parameters=({},), run="default", runs=(("02", "second"),)
    )
    assert scenario.run_for("a/s-002-good.md") == "second"
    assert scenario.run_for("a/s-2-good.md") == "second"
    assert scenario.run_for("a/s-01-good.md") == "default"


def test_a_cut_file_name_keeps_its_number_and_label_whole() -> None:
    assert file_name("list-purchase-orders-0003-bad.md", 22).endswith("…-0003-bad.md")
