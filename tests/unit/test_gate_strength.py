"""The gate's strength is counted from what it did with the guard deletions fed to it: those
it refused, of those it decided (a deletion it could not decide is not counted), per scenario;
a scenario is strong from 95% up, and one with nothing to measure is not."""

from __future__ import annotations

import pytest

from secbench_tui.core.models import Case, SuiteKind
from secbench_tui.core.rewrites.gate import Dropped, GateReport
from secbench_tui.core.rewrites.relations import Variant
from secbench_tui.core.rewrites.strength import GUARD_DELETED, Strength, strengths

pytest.importorskip("pglast", reason="needs the verify extra (pglast)")


def _case(case_id: str) -> Case:
    return Case(
        kind=SuiteKind.MARKDOWN,
        app=case_id.split("/")[0],
        case_id=case_id,
        test_file=f"/nowhere/{case_id}",
        expected="good",
        code="SELECT 1",
    )


def _fed(case_id: str, n: int) -> list[Variant]:
    return [Variant(_case(case_id), GUARD_DELETED, i, f"SELECT {i}") for i in range(n)]


def test_strength_counts_refusals_of_decided_deletions_per_scenario() -> None:
    a, b = _fed("shop/list-orders-01-good.md", 20), _fed("shop/get-order-02-good.md", 3)
    report = GateReport()
    report.dropped = [Dropped(v, "not equivalent on parameter set 1: rows differ") for v in a[:19]]
    report.proven = [a[19], b[0]]
    report.dropped += [Dropped(b[1], "not equivalent on parameter set 2: status differs")]
    report.dropped += [Dropped(b[2], "not proven: no server (--unproven-rewrites sends it)")]

    measured = {s.scenario: s for s in strengths([*a, *b], report)}

    assert measured["list-orders"] == Strength("shop", "list-orders", 19, 20)
    assert measured["list-orders"].strong and measured["list-orders"].text().endswith("95%")
    assert measured["get-order"] == Strength("shop", "get-order", 1, 2)
    assert not measured["get-order"].strong
    assert not Strength("shop", "empty", 0, 0).strong
    assert Strength("shop", "empty", 0, 0).text().endswith("n/a")
