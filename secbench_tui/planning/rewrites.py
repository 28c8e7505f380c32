"""`--rewrites`: variants of each case made by a semantics-preserving rewrite, each proven
equivalent to its original on PostgreSQL before it may be sent (or sent unproven, when asked),
then asked beside the originals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from secbench_tui.config import Settings
from secbench_tui.core.models import Case, RewritesRecord
from secbench_tui.core.verify.stopping import Stop
from secbench_tui.errors import UsageError

if TYPE_CHECKING:
    from secbench_tui.core.rewrites.gate import GateReport
    from secbench_tui.core.rewrites.progress import Proving
    from secbench_tui.core.rewrites.relations import Variant

PROOFS_DIR = "proofs"  # below the cache folder ($XDG_CACHE_HOME/secbench-tui)


@dataclass
class Rewrites:
    """What `--rewrites` made of the suite: variants proven (or sent unproven) by original
    case, and what the equivalence gate dropped, with why."""

    relations: tuple[str, ...]
    seed: int
    made: int = 0
    not_applicable: int = 0
    proven: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # id -> (rel, code)
    unproven: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)  # by relation
    reasons: list[tuple[str, str]] = field(default_factory=list)  # (variant id, why)
    engine: str = ""
    seconds: float = 0.0
    kept: int = 0  # decisions read back from earlier proofs
    weak: dict[str, str] = field(default_factory=dict)  # app/scenario -> the gate's strength

    def recorded(self) -> RewritesRecord:
        """What a run records of them (its settings' `rewrites`), for the figures."""
        from secbench_tui.core.rewrites.relations import BY_NAME

        return RewritesRecord(
            relations=list(self.relations),
            kinds={name: BY_NAME[name].kind for name in self.relations},
            seed=self.seed,
            made=self.made,
            dropped=dict(sorted(self.dropped.items())),
            unproven=sum(len(v) for v in self.unproven.values()),
            reasons=[list(r) for r in self.reasons[:50]],
            engine=self.engine,
        )

    def lines(self) -> list[str]:
        """What a front end says about them before the run starts."""
        proven = sum(len(v) for v in self.proven.values())
        unproven = sum(len(v) for v in self.unproven.values())
        dropped = sum(self.dropped.values())
        head = (
            f"rewrites: {self.made} variant(s) made ({', '.join(self.relations)}; seed "
            f"{self.seed}), {proven} proven equivalent"
            + (f" on {self.engine} in {self.seconds:.0f}s" if self.engine else "")
            + (f" ({self.kept} decided by kept proofs)" if self.kept else "")
            + f", {dropped} dropped"
            + (f", {unproven} sent unproven" if unproven else "")
        )
        out = [head]
        if self.weak:
            out.append(
                f"  sent unproven: variants of {len(self.weak)} scenario(s) where the gate "
                "refuses under 95% of guard deletions: "
                + ", ".join(f"{name} ({share})" for name, share in sorted(self.weak.items()))
            )
        for relation, count in sorted(self.dropped.items()):
            why = next((r for v, r in self.reasons if f"#{relation}/" in v), "")
            out.append(f"  dropped {count} {relation}: e.g. {why}")
        return out


def prepare_rewrites(
    settings: Settings,
    cases: list[Case],
    root: Path,
    stop: Stop | None = None,
    progress: Callable[[Proving], None] | None = None,
) -> Rewrites:
    """Make the variants of `--rewrites` and prove each before it may be sent (reading back
    the decisions kept from earlier proofs); Stopped when `stop` is set while they are
    proved. `progress` hears how far the proving is, from the proving's thread."""
    from secbench_tui.core.rewrites.relations import make_variants
    from secbench_tui.core.run.catalog import cache_dir

    seed = settings.seed or 0
    variants, skipped = make_variants(cases, settings.rewrites, seed)
    outcome = Rewrites(tuple(settings.rewrites), seed, len(variants), len(skipped))
    try:
        from secbench_tui.core.rewrites.gate import prove_variants, unproven_report
        from secbench_tui.core.rewrites.proofs import ProofStore
        from secbench_tui.core.rewrites.strength import deletion_variants
        from secbench_tui.core.verify.server import ServerError
    except ImportError as exc:
        if not settings.unproven_rewrites:
            raise UsageError(
                "--rewrites proves every variant on PostgreSQL: install the verify extra "
                f"(pip install 'secbench-tui[verify]'; {exc}), or add --unproven-rewrites "
                "to send variants without proof"
            ) from exc
        report = unproven_report(variants, f"the verify extra is not installed ({exc})", True)
    else:
        try:
            fed = _gauges(root, cases, variants, deletion_variants)
            report = prove_variants(
                root,
                cases,
                [*variants, *fed],
                settings.pg_url,
                settings.unproven_rewrites,
                progress=progress,
                stop=stop,
                proofs=ProofStore(cache_dir() / PROOFS_DIR),
            )
        except ServerError as exc:
            if not settings.unproven_rewrites:
                raise UsageError(
                    f"--rewrites proves every variant on PostgreSQL: {exc}; or add "
                    "--unproven-rewrites to send variants without proof"
                ) from exc
            report = unproven_report(variants, str(exc), True)
        else:
            _gauged(report, fed, outcome)
    outcome.engine, outcome.seconds, outcome.kept = report.engine, report.seconds, report.kept
    for variant in report.proven:
        outcome.proven.setdefault(variant.original.case_id, []).append(
            (variant.relation, variant.code)
        )
    for variant in report.unproven:
        outcome.unproven.setdefault(variant.original.case_id, []).append(
            (variant.relation, variant.code)
        )
    for dropped in report.dropped:
        relation = dropped.variant.relation
        outcome.dropped[relation] = outcome.dropped.get(relation, 0) + 1
        outcome.reasons.append((dropped.variant.case_id, dropped.reason))
    return outcome


def _gauges(
    root: Path,
    cases: list[Case],
    variants: list[Variant],
    deletions: Callable[[Path, list[Case]], list[Variant]],
) -> list[Variant]:
    """The guard deletions that measure the gate on each scenario the variants come from."""
    from secbench_tui.core.verify.data import scenario_of

    wanted = {(v.original.app, scenario_of(v.original.case_id)) for v in variants}
    return deletions(root, [c for c in cases if (c.app, scenario_of(c.case_id)) in wanted])


def _gauged(report: GateReport, fed: list[Variant], outcome: Rewrites) -> None:
    """Take the guard deletions out of `report`, and send unproven the variants of every
    scenario where the gate refused under `STRENGTH_FLOOR` of them."""
    from secbench_tui.core.rewrites.strength import strengths
    from secbench_tui.core.verify.data import scenario_of

    measured = strengths(fed, report)
    strong = {(s.app, s.scenario) for s in measured if s.strong}
    for s in measured:
        if not s.strong:
            outcome.weak[f"{s.app}/{s.scenario}"] = s.text()
    ours = {id(v) for v in fed}
    report.dropped = [d for d in report.dropped if id(d.variant) not in ours]
    proven, report.proven = report.proven, []
    for variant in proven:
        if id(variant) in ours:
            continue
        where = (variant.original.app, scenario_of(variant.original.case_id) or "")
        if where in strong:
            report.proven.append(variant)
        else:
            if f"{where[0]}/{where[1]}" not in outcome.weak:
                outcome.weak[f"{where[0]}/{where[1]}"] = "no guard deletion to measure it"
            report.unproven.append(variant)


def with_variants(cases: list[Case], rewrites: Rewrites) -> list[Case]:
    """The originals, then each one's variants (the original's prompt around new code)."""
    from secbench_tui.core.rewrites.relations import Variant

    added: list[Case] = []
    for case in cases:
        for proven, table in ((True, rewrites.proven), (False, rewrites.unproven)):
            for relation, code in table.get(case.case_id, []):
                added.append(Variant(case, relation, rewrites.seed, code).as_case(proven))
    return [*cases, *added]
