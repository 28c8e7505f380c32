"""Robustness figures: do a model's verdicts survive meaning-preserving rewrites?

Every figure is computed from stored rows: originals are rows without a `variant`, variants
carry theirs (original case, relation, seed). A flip is a pair whose two verdicts differ,
compared on the same repeat; pairs where either side gave no verdict (unparsed, error) are
left out and counted as such. Invariance relations (the code's surface changed) and
sensitivity relations (a false hint added) are reported apart and never blended: the run's
`flip_rate`, `robust_accuracy` and `agreement` cover invariance relations only.

- noise floor: the flip rate of asking the unchanged case again (repeat 0 against repeat 1);
  it needs `--repeats 2` or more, and a run without says so.
- coverage: robust accuracy and agreement cover the cases that have an invariance variant
  (`covered` of `cases`), which every front end shows beside them;
- per relation: flip rate with its Wilson interval; its excess over the noise floor on the
  same cases, with an exact McNemar test (variant flipped, repeat did not vs the reverse);
  robust accuracy (original and variant both right) and agreement (same verdict).
- misleading hints (relations with a claim): the share of flips that went the hint's way.
- P-C: pairs of a good and a bad case of the same scenario, both judged right; on originals
  and on pairs where both halves were rewritten by the same relation. Computed here over
  verdicts, every good x bad pair of a scenario.
- where reasons are scored (`reasons` stored with each row): whether a pair answered `bad` on
  both sides cites the same rules, and the variants' right-rule rate beside the originals'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from secbench_tui.core.case_names import scenario_of
from secbench_tui.core.results.metrics import _verdict, label, mcnemar_exact, wilson_interval
from secbench_tui.core.results.reasons import stored_reason
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.rows import originals_only as originals_only  # its readers' name

Row = ResultRow

INVARIANCE = "invariance"
SENSITIVITY = "sensitivity"
# The verdict a sensitivity relation's hint pushes towards (mirrors rewrites.relations,
# which results may not import: the relation's kind and claim are stored with the run).
CLAIMS = {
    "comment-safe": "good",
    "comment-flaw": "bad",
    "misleading-names": "good",
    "misleading-function-name": "good",
}


class RelationFigures(BaseModel):
    """One relation's figures (see the module's docstring); part of a run's summary."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # --rewrites only: built then

    kind: str = INVARIANCE
    variants: int = 0  # rewritten cases asked
    dropped: int = 0  # variants the equivalence gate rejected (never asked)
    unproven: int = 0  # variants asked without a proof (--unproven-rewrites)
    pairs: int = 0  # (original, variant) pairs with a verdict on both sides
    no_verdict: int = 0  # pairs left out: unparsed or error on either side
    flips: int = 0
    flip_rate: float | None = None
    flip_rate_ci: tuple[float, float] | None = None
    noise_on_same: float | None = None  # the noise floor on the same cases
    excess: float | None = None  # flip_rate - noise_on_same
    excess_p: float | None = None  # exact McNemar p-value
    robust_accuracy: float | None = None
    agreement: float | None = None
    claim: str | None = None
    towards_claim: float | None = None  # share of flips towards the hint's claim
    pc: float | None = None  # P-C on pairs rewritten by this relation
    pc_original: float | None = None  # P-C on the same pairs' originals
    pc_pairs: int = 0
    # where reasons are scored: pairs answered `bad` on both sides with cited rules, and the
    # share citing the same rules; the right-rule rate of the variants beside their originals'
    rule_pairs: int = 0
    rule_kept: float | None = None
    right_rule: float | None = None
    right_rule_original: float | None = None


class Robustness(BaseModel):
    """A run's robustness figures, over every relation asked (`--rewrites`)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    variants: int = 0
    dropped: int = 0
    unproven: int = 0
    noise_flip_rate: float | None = None
    noise_pairs: int = 0
    flip_rate: float | None = None  # invariance relations only
    flip_rate_ci: tuple[float, float] | None = None
    sensitivity_flip_rate: float | None = None
    robust_accuracy: float | None = None  # right on the original and every invariance variant
    agreement: float | None = None  # one verdict on the original and every invariance variant
    # what robust accuracy and agreement cover: cases with an invariance variant, of the cases
    covered: int = 0
    cases: int = 0
    pc_original: float | None = None
    by_relation: dict[str, RelationFigures] = {}
    notes: list[str] = []


def _key(row: Row) -> tuple[str, int]:
    return str(row["case_id"]), int(row.get("repeat") or 0)


def _pc(
    by_case: Mapping[str, Row], expected: Mapping[str, str], cases: Iterable[str]
) -> tuple[int, int]:
    """(pairs both right, pairs) over good x bad pairs of the same scenario."""
    scenarios: dict[str, dict[str, list[str]]] = {}
    for case in cases:
        scenario = scenario_of(case)
        if scenario is not None:  # a case named otherwise belongs to no pair
            scenarios.setdefault(scenario, {"good": [], "bad": []}).setdefault(
                expected[case], []
            ).append(case)
    right = total = 0
    for halves in scenarios.values():
        for good in halves.get("good", []):
            for bad in halves.get("bad", []):
                total += 1
                g, b = by_case.get(good), by_case.get(bad)
                if g and b and g["outcome"] == "correct" and b["outcome"] == "correct":
                    right += 1
    return right, total


def _share(a: int, b: int) -> float | None:
    return a / b if b else None


def robustness(
    rows: Sequence[Row],
    dropped: Mapping[str, int] | None = None,
    kinds: Mapping[str, str] | None = None,
    repeats: int | None = None,
) -> Robustness | None:
    """The figures of one run's rows; None when the run has no variant and dropped none."""
    dropped = dict(dropped or {})
    kinds = dict(kinds or {})
    originals: dict[tuple[str, int], Row] = {}
    variants: dict[str, dict[tuple[str, int], Row]] = {}  # relation -> (original, repeat)
    variant_cases: dict[str, set[str]] = {}
    unproven: dict[str, set[str]] = {}
    for row in rows:
        info = row.get("variant")
        if not isinstance(info, dict):
            originals[_key(row)] = row
            continue
        relation = str(info["relation"])
        original = str(info["original"])
        variants.setdefault(relation, {})[(original, int(row.get("repeat") or 0))] = row
        variant_cases.setdefault(relation, set()).add(original)
        if not info.get("proven", False):
            unproven.setdefault(relation, set()).add(original)
    if not variants and not dropped:
        return None
    figures = Robustness(
        variants=sum(len(v) for v in variant_cases.values()),
        dropped=sum(dropped.values()),
        unproven=sum(len(v) for v in unproven.values()),
    )
    verdict = {k: _verdict(r) for k, r in originals.items()}
    expected = {k[0]: label(r["expected_result"]) for k, r in originals.items()}

    # the noise floor: the unchanged case asked again, repeat 0 against repeat 1
    noise: dict[str, bool] = {}
    for (case, rep), said in verdict.items():
        again = verdict.get((case, 1))
        if rep == 0 and again is not None and "none" not in (said, again):
            noise[case] = said != again
    figures.noise_pairs = len(noise)
    figures.noise_flip_rate = _share(sum(noise.values()), len(noise))
    if not noise:
        figures.notes.append(
            "no noise floor: it needs --repeats 2 or more (each case asked again unchanged)"
            if (repeats or 1) < 2
            else "no noise floor: no case has a verdict on both repeat 0 and repeat 1"
        )

    first_orig = {case: r for (case, rep), r in originals.items() if rep == 0}
    figures.pc_original = _share(*_pc(first_orig, expected, first_orig))
    all_inv_flips = all_inv_pairs = all_sens_flips = all_sens_pairs = 0
    robust: dict[str, bool] = {}
    agree: dict[str, bool] = {}
    for relation in sorted(set(variants) | set(dropped)):
        pairs = variants.get(relation, {})
        kind = kinds.get(relation, SENSITIVITY if relation in CLAIMS else INVARIANCE)
        fig = RelationFigures(
            kind=kind,
            variants=len(variant_cases.get(relation, set())),
            dropped=dropped.get(relation, 0),
            unproven=len(unproven.get(relation, set())),
            claim=CLAIMS.get(relation) if kind == SENSITIVITY else None,
        )
        flipped: dict[str, bool] = {}
        toward = 0
        for (case, rep), row in sorted(pairs.items()):
            base = verdict.get((case, rep))
            said = _verdict(row)
            if base is None:
                continue
            if "none" in (base, said):
                fig.no_verdict += 1
                continue
            fig.pairs += 1
            if base != said:
                fig.flips += 1
                toward += said == fig.claim
            if rep == 0:
                flipped[case] = base != said
        _rule_figures(fig, pairs, originals)
        fig.flip_rate = _share(fig.flips, fig.pairs)
        fig.flip_rate_ci = wilson_interval(fig.flips, fig.pairs) if fig.pairs else None
        if fig.claim is not None:
            fig.towards_claim = _share(toward, fig.flips)
        same = [c for c in flipped if c in noise]
        if same:
            fig.noise_on_same = sum(noise[c] for c in same) / len(same)
            only_variant = sum(1 for c in same if flipped[c] and not noise[c])
            only_repeat = sum(1 for c in same if noise[c] and not flipped[c])
            fig.excess = sum(flipped[c] for c in same) / len(same) - fig.noise_on_same
            fig.excess_p = mcnemar_exact(only_variant, only_repeat)
        firsts = {case: row for (case, rep), row in pairs.items() if rep == 0}
        both_right = same_verdict = counted = 0
        for case, row in firsts.items():
            base_row = originals.get((case, 0))
            if base_row is None:
                continue
            counted += 1
            right = base_row["outcome"] == "correct" and row["outcome"] == "correct"
            alike = _verdict(base_row) == _verdict(row)
            both_right += right
            same_verdict += alike
            if kind == INVARIANCE:
                robust[case] = robust.get(case, True) and right
                agree[case] = agree.get(case, True) and alike
        fig.robust_accuracy = _share(both_right, counted)
        fig.agreement = _share(same_verdict, counted)
        rewritten = [c for c in firsts if c in expected]
        right_pairs, total_pairs = _pc(firsts, expected, rewritten)
        fig.pc_pairs = total_pairs
        fig.pc = _share(right_pairs, total_pairs)
        fig.pc_original = _share(*_pc(first_orig, expected, rewritten))
        if kind == INVARIANCE:
            all_inv_flips += fig.flips
            all_inv_pairs += fig.pairs
        else:
            all_sens_flips += fig.flips
            all_sens_pairs += fig.pairs
        figures.by_relation[relation] = fig
    figures.flip_rate = _share(all_inv_flips, all_inv_pairs)
    figures.flip_rate_ci = wilson_interval(all_inv_flips, all_inv_pairs) if all_inv_pairs else None
    figures.sensitivity_flip_rate = _share(all_sens_flips, all_sens_pairs)
    figures.robust_accuracy = _share(sum(robust.values()), len(robust))
    figures.agreement = _share(sum(agree.values()), len(agree))
    figures.covered, figures.cases = len(robust), len(first_orig)
    return figures


def coverage_text(r: Robustness) -> str:
    """`178 of 196 cases`: what robust accuracy covers (the cases with an invariance
    variant); one renderer for the summary, the report and the app."""
    return f"{r.covered} of {r.cases} cases"


def _rule_figures(
    fig: RelationFigures,
    pairs: Mapping[tuple[str, int], Row],
    originals: Mapping[tuple[str, int], Row],
) -> None:
    """Is the rule cited kept when only the surface changed? (Reasons scored, verdict 2.)"""
    kept = compared = right = right_base = scored = 0
    for key, row in pairs.items():
        base_row = originals.get(key)
        if base_row is None:
            continue
        ours, base = stored_reason(row.get("reasons")), stored_reason(base_row.get("reasons"))
        if ours is None or base is None:
            continue
        if ours.right_rule is not None and base.right_rule is not None:
            scored += 1
            right += ours.right_rule
            right_base += base.right_rule
        if _verdict(row) == _verdict(base_row) == "bad" and ours.rules and base.rules:
            compared += 1
            kept += set(ours.rules) == set(base.rules)
    fig.rule_pairs = compared
    fig.rule_kept = _share(kept, compared)
    fig.right_rule = _share(right, scored)
    fig.right_rule_original = _share(right_base, scored)
