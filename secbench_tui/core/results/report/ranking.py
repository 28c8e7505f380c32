"""Which model, and how sure: models ranked within each suite, a verdict per suite, the model
x prompt tables, and the cases most models failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from secbench_tui.core.results.metrics import (
    PairComparison,
)
from secbench_tui.core.results.report.data import (
    HARDEST_SHOWN,
    SIGNIFICANCE,
    CaseView,
    Contender,
    Pair,
    PromptMatrix,
    Verdict,
    leaks_by_suite,
)


def _rank_key(c: Contender) -> tuple[Any, ...]:
    """Most accurate first; then balanced accuracy, then the cheaper right answer."""
    s = c.stats
    cost = s.get("cost_per_correct")
    return (
        -(s.get("accuracy") or 0.0),
        -(s.get("balanced_accuracy") or 0.0),
        float("inf") if cost is None else cost,
        c.run.id,
    )


def rank(contenders: Sequence[Contender]) -> list[Contender]:
    """Models in ranking order within each suite, references after them; sets `rank`,
    `index` and `colour`. A model that answered fewer cases than its suite's most
    (a narrowed or stopped run) ranks after the whole ones."""
    by_suite: dict[str, list[Contender]] = {}
    for c in contenders:
        by_suite.setdefault(c.run.suite_path, []).append(c)
    ordered: list[Contender] = []
    colours = 0
    for suite in sorted(by_suite):
        group = by_suite[suite]
        most = max(c.case_count for c in group)
        models = sorted(
            (c for c in group if not c.baseline),
            key=lambda c: (c.case_count < most, *_rank_key(c)),
        )
        for number, c in enumerate(models, 1):
            c.rank, c.colour = number, f"s{colours % 10}"
            colours += 1
        ordered += models + sorted((c for c in group if c.baseline), key=_rank_key)
    for index, c in enumerate(ordered):
        c.index = index
    return ordered


def _comparison(pairs: Sequence[Pair], a: Contender, b: Contender) -> PairComparison | None:
    """A's comparison with B (A's wins in `only_a`), whichever order the pair was built in."""
    for pair in pairs:
        if pair.a is a and pair.b is b:
            return pair.comparison
        if pair.a is b and pair.b is a:
            m = pair.comparison
            return replace(m, only_a=m.only_b, only_b=m.only_a)
    return None


def _standing(comparison: PairComparison | None) -> str:
    if comparison is None or comparison.shared == 0:
        return "n/a"
    if comparison.p_value >= SIGNIFICANCE or comparison.only_a == comparison.only_b:
        return "tied"
    return "behind" if comparison.only_a > comparison.only_b else "ahead"


def verdicts(contenders: Sequence[Contender], pairs: Sequence[Pair]) -> list[Verdict]:
    """One verdict per suite that has a model other than the references; sets `standing`."""
    found = []
    for suite in sorted({c.run.suite_path for c in contenders}):
        group = [c for c in contenders if c.run.suite_path == suite]
        models = [c for c in group if not c.baseline]
        if not models:
            continue
        best, most = models[0], max(c.case_count for c in group)
        best.standing = "best"
        for c in group:
            if c is not best:
                c.vs_best = _comparison(pairs, best, c)
                c.standing = _standing(c.vs_best)
        references = [c for c in group if c.baseline]
        reference = references[0] if references else None
        partial = [c for c in models if c.case_count < most]
        top = [c for c in models if c.standing in ("best", "tied") and c not in partial]
        near_chance = []
        if reference is not None:
            for c in models:
                if _standing(_comparison(pairs, reference, c)) != "ahead":
                    near_chance.append(c)
        priced = [(cost, c) for c in top if (cost := c.stats["cost_per_correct"]) is not None]
        cheapest = min(priced, key=lambda p: p[0])[1] if priced else None
        leaks = dict(leaks_by_suite(group))
        found.append(
            Verdict(
                suite=suite,
                cases=most,
                best=best,
                top=top,
                behind=[c for c in models if c.standing == "behind"],
                ahead=[c for c in models if c.standing == "ahead"],
                partial=partial,
                reference=reference,
                near_chance=near_chance,
                cheapest=cheapest if len(top) > 1 else None,
                withheld=leaks.get(suite),
            )
        )
    return found


def prompt_matrices(contenders: Sequence[Contender], pairs: Sequence[Pair]) -> list[PromptMatrix]:
    """Per suite where some model was asked with more than one prompt: the model x prompt
    table, each model's best prompt, and McNemar's test between prompts of the same model."""
    found = []
    for suite in sorted({c.run.suite_path for c in contenders}):
        group = [c for c in contenders if c.run.suite_path == suite and not c.baseline]
        prompts_of: dict[str, list[str]] = {}
        for c in group:
            prompts_of.setdefault(c.model, []).append(c.prompt)
        if not any(len(set(p)) > 1 for p in prompts_of.values()):
            continue
        most = max(c.case_count for c in group)
        best: dict[str, Contender] = {}
        for c in sorted(group, key=lambda c: (c.case_count < most, *_rank_key(c))):
            best.setdefault(c.model, c)
        same_model = [
            p
            for p in pairs
            if p.a.model == p.b.model and p.a.prompt != p.b.prompt and p.a.run.suite_path == suite
        ]
        found.append(
            PromptMatrix(
                suite=suite,
                models=list(dict.fromkeys(c.model for c in group)),
                prompts=sorted({c.prompt for c in group}),
                cells={(c.model, c.prompt): c for c in group},
                best=best,
                pairs=same_model,
            )
        )
    return found


def hardest_cases(cases: Sequence[CaseView]) -> list[CaseView]:
    failing = [c for c in cases if c.failed_by]
    failing.sort(key=lambda c: (-len(c.failed_by) / c.judged, -len(c.failed_by), c.app, c.case_id))
    return failing[:HARDEST_SHOWN]
