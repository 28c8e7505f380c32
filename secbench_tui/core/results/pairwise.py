"""Minimal pairs scored as pairs (PrimeVul's P-C, P-V, P-B, P-R) and scenarios scored whole.

A scenario is a case file name without `-NN-good.md` / `-NN-bad.md` (any number of digits:
`core.case_names`), within its folder; every (good case, bad case) of one scenario is a pair.
For a pair:

- P-C: the good case answered good and the bad case answered bad (both right);
- P-V: both answered bad; P-B: both answered good; P-R: both wrong (reversed);
- a pair with an unanswered case (unparsed or error) is none of these, so never P-C;
- P-C with the rule: P-C, and the bad case's answer cites its gold rule (or an acceptable one).

A model that answers bad to everything scores P-V 100% and P-C 0, whatever its recall; a coin
flip scores P-C 25%. A scenario is solved when every one of its cases is answered right.

Pairs share cases, so intervals for these figures come from a bootstrap that resamples whole
scenarios; two runs are compared by McNemar's exact test on the scenarios each solved.
Pure functions over `reasons.Answer`, for every front end and for other figures alike.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields

from secbench_tui.core.results.metrics import mcnemar_exact, percentile, proportion_interval
from secbench_tui.core.results.reasons import Answer

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20240501  # fixed: the same results give the same interval every time
BOOTSTRAP_WORK = 400_000  # scenario draws at most; beyond, the clustered normal interval


@dataclass(frozen=True)
class PairTally:
    """Counts over pairs (and scenarios), which add up across scenarios."""

    pairs: int = 0
    p_c: int = 0
    p_v: int = 0
    p_b: int = 0
    p_r: int = 0
    unanswered: int = 0  # pairs with a case that got no verdict
    p_c_rule: int = 0
    scenarios: int = 0
    solved: int = 0

    def __add__(self, other: PairTally) -> PairTally:
        return PairTally(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    def rate(self, name: str) -> float | None:
        """A count over pairs as a fraction (`solved` over scenarios); None with no pairs."""
        if name == "solved":
            return self.solved / self.scenarios if self.scenarios else None
        return getattr(self, name) / self.pairs if self.pairs else None


def pair_kind(good: Answer, bad: Answer) -> str:
    """p_c, p_v, p_b, p_r, or `unanswered` for one (good case, bad case) pair."""
    if good.verdict is None or bad.verdict is None:
        return "unanswered"
    return {
        ("good", "bad"): "p_c",
        ("bad", "bad"): "p_v",
        ("good", "good"): "p_b",
        ("bad", "good"): "p_r",
    }[(good.verdict, bad.verdict)]


def by_scenario(answers: Iterable[Answer]) -> dict[str, list[Answer]]:
    """Answers grouped by scenario, in order of first appearance; unnamed cases left out."""
    groups: dict[str, list[Answer]] = {}
    for answer in answers:
        scenario = answer.scenario
        if scenario is not None:
            groups.setdefault(scenario, []).append(answer)
    return groups


def scenario_tally(members: Sequence[Answer]) -> PairTally:
    """One scenario's pairs by kind, and whether it is solved (every case right)."""
    counts = dict.fromkeys(("p_c", "p_v", "p_b", "p_r", "unanswered"), 0)
    rule = 0
    goods = [a for a in members if a.expected == "good"]
    bads = [a for a in members if a.expected == "bad"]
    for good in goods:
        for bad in bads:
            kind = pair_kind(good, bad)
            counts[kind] += 1
            rule += kind == "p_c" and bad.right_rule
    return PairTally(
        pairs=len(goods) * len(bads),
        p_c_rule=rule,
        scenarios=1,
        solved=int(bool(members) and all(a.correct for a in members)),
        **counts,
    )


def scenario_tallies(answers: Iterable[Answer]) -> dict[str, PairTally]:
    return {name: scenario_tally(members) for name, members in by_scenario(answers).items()}


def pair_figures(answers: Iterable[Answer]) -> PairTally:
    """The pairwise counts and scenarios solved over a run's answers."""
    return sum(scenario_tallies(answers).values(), PairTally())


def bootstrap_interval(
    tallies: Sequence[PairTally],
    name: str,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """95% percentile-bootstrap interval of `rate(name)`, resampling whole scenarios.

    Past `BOOTSTRAP_WORK` draws (thousands of scenarios) the interval is the normal one with the
    cluster-robust (linearised) variance of a ratio, which the bootstrap converges to, so a
    large suite's summary does not take seconds."""
    if not tallies:
        return None
    over = "scenarios" if name == "solved" else "pairs"
    parts = [(getattr(t, name), getattr(t, over)) for t in tallies]
    n = len(parts)
    if n * samples > BOOTSTRAP_WORK:
        return _with_spread(clustered_interval(parts), parts)
    rng = random.Random(seed)
    values = []
    for _ in range(samples):
        hits = total = 0
        for i in rng.choices(range(n), k=n):
            hits += parts[i][0]
            total += parts[i][1]
        if total:
            values.append(hits / total)
    low, high = percentile(values, 2.5), percentile(values, 97.5)
    return _with_spread(None if low is None or high is None else (low, high), parts)


def _with_spread(
    interval: tuple[float, float] | None, parts: Sequence[tuple[int, int]]
) -> tuple[float, float] | None:
    """A resampling interval of zero width (one scenario, or every scenario scored the same
    share, e.g. P-C 0 on each) shows no spread, not certainty: then the Wilson interval of
    the share with the scenarios as the independent units."""
    if interval is not None and interval[1] > interval[0]:
        return interval
    total = sum(t for _, t in parts)
    if not total:
        return interval
    return proportion_interval(sum(h for h, _ in parts) / total, sum(1 for _, t in parts if t))


def clustered_interval(parts: Sequence[tuple[int, int]]) -> tuple[float, float] | None:
    """95% normal interval of sum(hits) / sum(total) over clusters (scenarios), with the
    linearised cluster-robust variance n/(n-1) * sum((h - p t)^2) / (sum t)^2."""
    total = sum(t for _, t in parts)
    n = len(parts)
    if not total or n < 2:
        return None
    p = sum(h for h, _ in parts) / total
    variance = n / (n - 1) * sum((h - p * t) ** 2 for h, t in parts) / total**2
    half = 1.959963984540054 * variance**0.5
    return max(0.0, p - half), min(1.0, p + half)


@dataclass(frozen=True)
class ScenarioComparison:
    """Two runs on the scenarios both were asked: solved by A only, by B only, McNemar's p."""

    scenarios: int
    both: int
    only_a: int
    only_b: int
    p_value: float


def compare_scenarios(a: Mapping[str, PairTally], b: Mapping[str, PairTally]) -> ScenarioComparison:
    """McNemar's exact test on scenarios solved, over the scenarios both runs have."""
    common = [name for name in a if name in b]
    only_a = sum(1 for n in common if a[n].solved and not b[n].solved)
    only_b = sum(1 for n in common if b[n].solved and not a[n].solved)
    both = sum(1 for n in common if a[n].solved and b[n].solved)
    return ScenarioComparison(len(common), both, only_a, only_b, mcnemar_exact(only_a, only_b))


# Chance levels, printed beside the figures: what answering without reading scores.
CHANCE = {
    "coin flip": {"p_c": 0.25, "p_v": 0.25, "p_b": 0.25, "p_r": 0.25},
    "always bad": {"p_c": 0.0, "p_v": 1.0, "p_b": 0.0, "p_r": 0.0},
}
