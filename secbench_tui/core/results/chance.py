"""Chance levels: what answering without reading the code scores, on the cases actually run.

Every lead figure gets the score of the strategies that need no skill, computed from the run's
own cases (their labels, scenarios and gold rules), never written down as a constant: an
unbalanced suite moves accuracy's, a suite whose bad cases mostly break one rule moves the
right reason's. Each is an expected value, by the same definitions as the figure itself:

- accuracy: always `bad`, always `good`, the majority label;
- balanced accuracy: any constant answer (and a coin flip);
- P-C: a coin flip (each answer `bad` with probability 1/2), always `bad`;
- right reason: always `bad`, citing the rule most often acceptable on the app's bad cases,
  the best set of rules the allowance of extra rules lets a reply cite (`ALLOWED_EXTRA_RULES`
  + 1 of them), or every rule of the SPEC;
- scenarios solved: a coin flip, always `bad`, always `good`;
- a surface cue, when the suite has one (`core.lint.leaks`): the trivial classifier's own
  held-out answers, on every figure but the right reason.

A level that cannot be computed (no pair, no bad case naming a rule, one label only) is None,
never 0.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from secbench_tui.core.results.pairwise import by_scenario
from secbench_tui.core.results.reasons import ALLOWED_EXTRA_RULES, Answer, precise

# the strategies, by name as `--summary-json` writes them
ALWAYS_BAD = "always_bad"
ALWAYS_GOOD = "always_good"
MAJORITY = "majority"
CONSTANT = "constant"
COIN_FLIP = "coin_flip"
SURFACE_CUE = "surface_cue"
MOST_FREQUENT_RULE = "most_frequent_rule"
BEST_ALLOWED_RULES = "best_allowed_rules"
EVERY_RULE = "every_rule"

STRATEGY_NAMES = {
    ALWAYS_BAD: "always bad",
    ALWAYS_GOOD: "always good",
    MAJORITY: "majority label",
    CONSTANT: "any constant answer",
    COIN_FLIP: "coin flip",
    SURFACE_CUE: "surface cue",
    MOST_FREQUENT_RULE: "most frequent rule",
    BEST_ALLOWED_RULES: f"best {ALLOWED_EXTRA_RULES + 1} rules",
    EVERY_RULE: "every rule",
}
"""How the summary, the report and the app name each strategy."""

Level = dict[str, float | None]


class ChanceLevels(BaseModel):
    """Each lead figure's chance levels, by strategy (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    accuracy: Level = {}
    balanced_accuracy: Level = {}
    p_c: Level = {}
    right_reason: Level = {}
    scenarios_solved: Level = {}


Guess = Callable[[Answer], float]  # the probability a strategy answers `bad` to a case


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _right(answer: Answer, p_bad: float) -> float:
    return p_bad if answer.expected == "bad" else 1.0 - p_bad


def _accuracy(answers: Sequence[Answer], guess: Guess) -> float | None:
    return _mean([_right(a, guess(a)) for a in answers])


def _balanced(answers: Sequence[Answer], guess: Guess) -> float | None:
    recalls = [
        _mean([_right(a, guess(a)) for a in answers if a.expected == label])
        for label in ("good", "bad")
    ]
    if any(r is None for r in recalls):
        return None
    return sum(r for r in recalls if r is not None) / 2


def _p_c(scenarios: Iterable[Sequence[Answer]], guess: Guess) -> float | None:
    shares = [
        (1.0 - guess(good)) * guess(bad)
        for members in scenarios
        for good in members
        if good.expected == "good"
        for bad in members
        if bad.expected == "bad"
    ]
    return _mean(shares)


def _solved(scenarios: Iterable[Sequence[Answer]], guess: Guess) -> float | None:
    chances = []
    for members in scenarios:
        chance = 1.0
        for answer in members:
            chance *= _right(answer, guess(answer))
        chances.append(chance)
    return _mean(chances)


def _rule_levels(answers: Sequence[Answer]) -> Level:
    """The right-reason rate of always answering `bad` with a fixed citation per app."""
    bad = [a for a in answers if a.expected == "bad" and a.gold]
    if not bad:
        return dict.fromkeys((MOST_FREQUENT_RULE, BEST_ALLOWED_RULES, EVERY_RULE))
    by_app: dict[str, list[Answer]] = {}
    for answer in bad:
        by_app.setdefault(answer.app, []).append(answer)
    credited = {MOST_FREQUENT_RULE: 0, BEST_ALLOWED_RULES: 0, EVERY_RULE: 0}
    for members in by_app.values():
        every = sorted({r for a in members for r in (*a.spec, *a.gold)})
        for name, size in ((MOST_FREQUENT_RULE, 1), (BEST_ALLOWED_RULES, ALLOWED_EXTRA_RULES + 1)):
            credited[name] += _best_citation(members, every, size)
        credited[EVERY_RULE] += sum(precise(every, a.gold) for a in members)
    return {name: count / len(bad) for name, count in credited.items()}


def _best_citation(members: Sequence[Answer], rules: Sequence[int], size: int) -> int:
    """The most bad cases one fixed citation of `size` rules (or fewer) gets credited on."""
    best = 0
    for n in range(1, min(size, len(rules)) + 1):
        for cited in itertools.combinations(rules, n):
            best = max(best, sum(precise(cited, a.gold) for a in members))
    return best


def chance_levels(
    answers: Sequence[Answer], surface_cue: Mapping[str, float] | None = None
) -> ChanceLevels:
    """The chance levels of a run's answers (first answers to markdown cases). With
    `surface_cue` (case id -> the cue's held-out chance of answering `bad`), the cue's level
    too, on the cases it scored (a case it did not score counts as a coin flip)."""
    labelled = [a for a in answers if a.expected in ("good", "bad")]
    scenarios = list(by_scenario(labelled).values())
    strategies: dict[str, Guess] = {
        ALWAYS_BAD: lambda a: 1.0,
        ALWAYS_GOOD: lambda a: 0.0,
        COIN_FLIP: lambda a: 0.5,
    }
    if surface_cue is not None:
        cue = dict(surface_cue)
        strategies[SURFACE_CUE] = lambda a: cue.get(a.case_id, 0.5)
    accuracy = {name: _accuracy(labelled, strategies[name]) for name in (ALWAYS_BAD, ALWAYS_GOOD)}
    known = [v for v in accuracy.values() if v is not None]
    accuracy[MAJORITY] = max(known) if known else None
    balanced: Level = {CONSTANT: _balanced(labelled, strategies[ALWAYS_BAD])}
    p_c: Level = {name: _p_c(scenarios, strategies[name]) for name in (COIN_FLIP, ALWAYS_BAD)}
    solved: Level = {
        name: _solved(scenarios, strategies[name]) for name in (COIN_FLIP, ALWAYS_BAD, ALWAYS_GOOD)
    }
    if SURFACE_CUE in strategies:
        guess = strategies[SURFACE_CUE]
        accuracy[SURFACE_CUE] = _accuracy(labelled, guess)
        balanced[SURFACE_CUE] = _balanced(labelled, guess)
        p_c[SURFACE_CUE] = _p_c(scenarios, guess)
        solved[SURFACE_CUE] = _solved(scenarios, guess)
    return ChanceLevels(
        accuracy=accuracy,
        balanced_accuracy=balanced,
        p_c=p_c,
        right_reason=_rule_levels(labelled),
        scenarios_solved=solved,
    )


def highest(level: Level) -> tuple[str, float] | None:
    """The strategy that scores most on a figure, and its score (None: none computable)."""
    known = [(name, value) for name, value in level.items() if value is not None]
    return max(known, key=lambda item: item[1]) if known else None
