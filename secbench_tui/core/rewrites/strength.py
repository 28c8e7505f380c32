"""The gate measured: how many deliberately non-equivalent variants it rejects.

For each scenario, every guard-deletion mutant of its good cases (`mutants.DELETIONS`: a
conjunct, a `RAISE` block, a filter argument, an HTTP guard, a role dependency deleted) is
fed to the equivalence gate as if a relation had made it. Each one that breaks a rule changes
what the case means, so the gate should refuse it; the share it refuses is its strength on
that scenario. Mutants the scenario declares equivalent (no rule broken) are left out: the gate
may rightly accept a guard that was redundant. A relation's variants are only sent as proven
where the strength is at least `STRENGTH_FLOOR`; elsewhere they go unproven, counted so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from secbench_tui.core.models import Case
from secbench_tui.core.rewrites.relations import Variant
from secbench_tui.core.verify.data import AppData, load_app_data, scenario_of
from secbench_tui.core.verify.mutants import DELETIONS, code_language, declarations, mutants_of

if TYPE_CHECKING:
    from secbench_tui.core.rewrites.gate import GateReport

GUARD_DELETED = "guard-deleted"  # the relation name a deletion mutant is fed to the gate under
STRENGTH_FLOOR = 0.95


@dataclass(frozen=True)
class Strength:
    """The gate on one scenario: guard deletions it refused, of those fed to it."""

    app: str
    scenario: str
    rejected: int
    fed: int

    @property
    def share(self) -> float | None:
        return self.rejected / self.fed if self.fed else None

    def text(self) -> str:
        """`118 of 125 guard deletions refused, 94.4%`."""
        share = self.share
        shown = "n/a" if share is None else f"{100 * share:.1f}".removesuffix(".0") + "%"
        return f"{self.rejected} of {self.fed} guard deletions refused, {shown}"

    @property
    def strong(self) -> bool:
        """Strong enough to prove a relation's variants (no deletion to measure: not)."""
        share = self.share
        return share is not None and share >= STRENGTH_FLOOR


def deletion_variants(root: Path, cases: Sequence[Case]) -> list[Variant]:
    """Every guard-deletion mutant of the good cases that have verification data, as a
    variant (seed: its place among its case's mutants), declared equivalents left out."""
    found: list[Variant] = []
    apps: dict[str, AppData] = {}
    for case in cases:
        if case.expected != "good":
            continue
        if case.app not in apps:
            apps[case.app] = load_app_data(case.app, root / case.app)[0]
        scenario = apps[case.app].scenarios.get(scenario_of(case.case_id) or "")
        if scenario is None or apps[case.app].fixtures is None:
            continue
        try:
            mutants = mutants_of(case.code, code_language(case))
        except RecursionError:
            continue
        declared = declarations(scenario.equivalents_of(case.case_id), mutants).named
        for place, mutant in enumerate(mutants):
            if mutant.kind in DELETIONS and mutant.code not in declared:
                found.append(Variant(case, GUARD_DELETED, place, mutant.code))
    return found


def strengths(fed: Sequence[Variant], report: GateReport) -> list[Strength]:
    """The gate's strength per scenario, from its report on the deletion variants `fed`
    (left out: those it could not decide, unproven for want of data or a server)."""
    refused = {id(d.variant) for d in report.dropped if not d.reason.startswith("not proven")}
    proven = {id(v) for v in report.proven}
    tally: dict[tuple[str, str], list[int]] = {}
    for variant in fed:
        if id(variant) not in refused and id(variant) not in proven:
            continue
        key = (variant.original.app, scenario_of(variant.original.case_id) or "")
        counts = tally.setdefault(key, [0, 0])
        counts[0] += id(variant) in refused
        counts[1] += 1
    return [Strength(app, name, r, n) for (app, name), (r, n) in sorted(tally.items())]
