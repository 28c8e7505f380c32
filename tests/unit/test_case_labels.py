"""Case labels tell every row shown apart: a property test over the bundled suite's ids.

Any set of the bundled suite's cases (with or without `--rewrites` variants of them, as a
results table, a comparison grid or the run screen may show together), at any width a table
gives its case column in a terminal of 80 to 120 columns (`CASE_MIN` up), gets labels that
differ from each other, fit the width, and keep the case number and the scenario's start.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.case_names import read_name
from secbench_tui.core.rewrites.relations import RELATIONS
from secbench_tui.tui.case_labels import CASE_MIN, case_label, case_labels, scenario_labels

CASES = bundled_cases_dir()
IDS = sorted(
    f"{path.parent.name}/{path.name}"
    for path in CASES.glob("*/*.md")
    if read_name(path.name) is not None
)
VARIANTS = [f"{case}#{relation.name}/0" for case in IDS for relation in RELATIONS]
WIDTHS = st.integers(CASE_MIN, 120)  # the case column of a table in an 80 to 120 column terminal


def _check(ids: list[str], width: int) -> None:
    labels = case_labels(ids, width)
    assert set(labels) == set(ids)
    shown = list(labels.values())
    assert len(set(shown)) == len(shown), sorted(shown)
    for case_id, label in labels.items():
        assert len(label) <= width, label
        base = case_id.partition("#")[0]
        name = read_name(base)
        assert name is not None
        number = base.rsplit("-", 2)[-2]
        assert f"-{number}" in label, (case_id, label)
        assert name.scenario[0] in label.split("/", 1)[-1][:1], (case_id, label)


def test_the_bundled_suite_has_cases_to_label() -> None:
    assert len(IDS) >= 150 and len({read_name(i).scenario for i in IDS if read_name(i)}) > 40


@settings(max_examples=150, deadline=None)
@given(ids=st.lists(st.sampled_from(IDS), min_size=1, max_size=80, unique=True), width=WIDTHS)
def test_any_cases_shown_together_get_labels_that_differ(ids: list[str], width: int) -> None:
    _check(ids, width)


@settings(max_examples=100, deadline=None)
@given(
    ids=st.lists(st.sampled_from(IDS + VARIANTS), min_size=1, max_size=80, unique=True),
    width=WIDTHS,
)
def test_variants_shown_beside_originals_get_labels_that_differ(ids: list[str], width: int) -> None:
    _check(ids, width)


def test_the_whole_suite_and_every_variant_at_the_narrowest_width() -> None:
    _check(IDS, CASE_MIN)
    _check(IDS + VARIANTS, CASE_MIN)
    _check(IDS, 80)


def test_a_label_keeps_what_the_width_allows() -> None:
    ids = [
        "clinic-portal-api/list-appointments-01-good.md",
        "clinic-portal-api/list-invoices-01-good.md",
    ]
    assert case_labels(ids, 60) == {
        ids[0]: "clinic-portal-api/list-appointments-01 good",
        ids[1]: "clinic-portal-api/list-invoices-01 good",
    }
    assert set(case_labels(ids, 32).values()) == {
        "clinic/list-appointments-01 good",
        "clinic/list-invoices-01 good",
    }
    narrow = case_labels(ids, 22)
    assert narrow[ids[0]] != narrow[ids[1]]
    assert case_label("purchase-order/approve-po-02-bad.md#layout/0", 60) == (
        "purchase-order/approve-po-02 bad #layout"
    )


def test_a_scenario_cut_keeps_two_scenarios_apart() -> None:
    """Two scenarios alike at both ends: the cut moves until what is left tells them apart."""
    ids = ["app/check-in-appointment-01-good.md", "app/check-out-appointment-01-good.md"]
    labels = case_labels(ids, 20)
    assert len(set(labels.values())) == 2 and all(len(v) <= 20 for v in labels.values())


def test_ids_that_follow_no_rule_and_hostile_ids_are_cut_inert() -> None:
    ids = ["task1/12345", "evil\x1b]0;x\x07/name-01-good.md", "a" * 90]
    labels = case_labels(ids, 30)
    assert all(len(v) <= 30 and "\x1b" not in v and "\x07" not in v for v in labels.values())
    assert len(set(labels.values())) == 3


def test_scenario_labels_differ() -> None:
    scenarios = sorted({f"{i.split('/')[0]}/{read_name(i).scenario}" for i in IDS if read_name(i)})
    for width in (16, 24, 40):
        labels = scenario_labels(scenarios, width)
        assert len(set(labels.values())) == len(scenarios)
        assert all(len(v) <= width for v in labels.values())


def test_the_bundled_suite_is_where_the_tests_look() -> None:
    assert Path(CASES, IDS[0]).is_file()
