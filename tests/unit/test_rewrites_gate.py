"""The equivalence gate on a real PostgreSQL: for each relation, variants of the bundled
suite are proven equivalent, and a planted non-equivalent rewrite made by the same relation
is rejected with its reason.

A subset of the bundled scenarios keeps it fast: together they give every relation
something to rewrite (aliases, conjuncts, IN and joins, comments, a CTE that writes with
`now()`, FastAPI handlers with `.where(a, b)`, comments and docstrings). Needs the verify extra.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import libcst as cst
import pytest

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.models import Case
from secbench_tui.core.rewrites import sql
from secbench_tui.core.rewrites.relations import (
    RELATIONS,
    Variant,
    language_of,
    make_variants,
    rewrite,
)
from secbench_tui.core.rewrites.sql import NotApplicable
from secbench_tui.core.suites.markdown import load_markdown_suite

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")
pytest.importorskip("fastapi", reason="needs the verify extra (fastapi)")

from secbench_tui.core.rewrites.gate import GateReport, prove_variants  # noqa: E402

SCENARIOS = (
    "purchase-order/approval-queue",  # aliases, conjuncts, IN, a join
    "purchase-order/approve-po",  # a CTE that updates with now(), then inserts
    "purchase-order/get-supplier",  # comments
    "clinic-portal-api/get-patient",  # .where(a, b, c)
    "clinic-portal-api/search-patients",  # comments in a handler
)
PLANTED_SEED = 999

# one worker makes the module's shared fixture once (pyproject: --dist=loadgroup)
pytestmark = [pytest.mark.xdist_group("rewrites-gate"), pytest.mark.long]


def _cases() -> list[Case]:
    suite = load_markdown_suite(bundled_cases_dir(), ["purchase-order", "clinic-portal-api"])
    return [c for c in suite.cases if c.case_id.rsplit("-", 2)[0] in SCENARIOS]


class _Unreturn(cst.CSTTransformer):
    """The first `return x` becomes `return []`: a handler that answers otherwise."""

    def __init__(self) -> None:
        self.done = False

    def leave_Return(self, original_node: cst.Return, updated_node: cst.Return) -> cst.Return:
        if self.done or updated_node.value is None:
            return updated_node
        self.done = True
        return updated_node.with_changes(value=cst.List([]))


def plant(code: str, language: str) -> str:
    """A change of meaning: SQL's first WHERE gets `AND FALSE`; a handler's first
    `return x` answers `[]` instead."""
    if language == "sql":
        statements = sql.parse(code)
        where = next(s.find(sql.exp.Where) for s in statements if s.find(sql.exp.Where))
        assert where is not None
        where.set("this", sql.exp.and_(where.this, sql.exp.false()))
        return sql.render(statements)
    unreturn = _Unreturn()
    planted = cst.parse_module(code).visit(unreturn).code
    assert unreturn.done
    return planted


def _planted(variant: Variant) -> Variant | None:
    """The original's meaning changed, then the same relation applied (when it still can)."""
    language = language_of(variant.original)
    assert language is not None
    try:
        code = rewrite(plant(variant.original.code, language), variant.relation, language, 0)
    except NotApplicable:
        return None
    return Variant(variant.original, variant.relation, PLANTED_SEED, code)


@pytest.fixture(scope="module")
def gated(pg_url: str) -> Iterator[tuple[list[Variant], list[Variant], GateReport]]:
    cases = _cases()
    variants, _ = make_variants(cases, [r.name for r in RELATIONS], 0)
    planted: list[Variant] = []
    for relation in RELATIONS:  # for each relation, the first case it can plant a change in
        made = (_planted(v) for v in variants if v.relation == relation.name)
        planted += [next(p for p in made if p is not None)]
    report = prove_variants(bundled_cases_dir(), cases, [*variants, *planted], pg_url)
    yield variants, planted, report


def test_every_relation_has_variants_and_each_is_proven(
    gated: tuple[list[Variant], list[Variant], GateReport],
) -> None:
    variants, _, report = gated
    assert {v.relation for v in variants} == {r.name for r in RELATIONS}
    proven = {v.case_id for v in report.proven}
    dropped = {d.variant.case_id: d.reason for d in report.dropped}
    for variant in variants:
        assert variant.case_id in proven, f"{variant.case_id}: {dropped.get(variant.case_id)}"
    assert not report.unproven


def test_every_planted_rewrite_is_rejected_with_a_reason(
    gated: tuple[list[Variant], list[Variant], GateReport],
) -> None:
    _, planted, report = gated
    dropped = {d.variant.case_id: d.reason for d in report.dropped}
    assert {v.relation for v in planted} == {r.name for r in RELATIONS}
    for variant in planted:
        assert variant.case_id in dropped, f"{variant.case_id} was let through"
        reason = dropped[variant.case_id]
        assert reason.startswith(("not equivalent on parameter set", "fails on parameter set"))


def test_a_suite_without_verification_data_gets_no_proof(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "SPEC.md").write_text("# Prompt\nJudge it.\n", encoding="utf-8")
    (app / "x-01-good.md").write_text(
        "# Code\n```sql\nSELECT a.id FROM accounts a WHERE a.id = :id;\n```\n# Expected\ngood\n",
        encoding="utf-8",
    )
    cases = load_markdown_suite(tmp_path, None).cases
    variants, _ = make_variants(cases, ["alias-rename"], 0)
    report = prove_variants(tmp_path, cases, variants)
    assert not report.proven and len(report.dropped) == 1
    assert "no verification data" in report.dropped[0].reason
    kept = prove_variants(tmp_path, cases, variants, keep_unproven=True)
    assert kept.unproven == variants and not kept.dropped
