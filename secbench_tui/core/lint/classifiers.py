"""The two trivial classifiers a suite must defeat, scored on held-out cases only.

Multinomial naive Bayes over the words of a case's comments, and a single threshold on the
length of its code: if either predicts the label of cases it was not fitted on, the suite's
labels can be read from the surface, and a model's score measures pattern matching rather
than security review. Each held-out case is predicted by a classifier fitted on the others
(leave-one-out), or on the other scenarios (leave-one-scenario-out). When a classifier cannot
decide (tied scores, tied best rules), the held-out case counts as half right: the expected
score of breaking the tie with a coin.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence

from secbench_tui.core.lint.report import LABELS

NO_COMMENT = "<no comment>"


def _nb_score(held_out: Counter[str], train: Sequence[tuple[Counter[str], str]]) -> float:
    """1, 0 or 0.5 (a tie): multinomial naive Bayes with equal priors, Laplace smoothing.

    Equal priors keep the leave-one-out fold's one-case imbalance from deciding; words the
    training cases never used are ignored.
    """
    per_class: dict[str, Counter[str]] = {label: Counter() for label in LABELS}
    for words, label in train:
        per_class[label].update(words)
    vocab = set(per_class["good"]) | set(per_class["bad"])
    log_like = {}
    for label, counts in per_class.items():
        total = sum(counts.values()) + len(vocab)
        log_like[label] = sum(
            k * math.log((counts[w] + 1) / total) for w, k in held_out.items() if w in vocab
        )
    diff = log_like["bad"] - log_like["good"]
    if abs(diff) < 1e-9:
        return 0.5
    return 1.0 if diff > 0 else 0.0  # probability of predicting "bad"


def _balanced(scores: Sequence[float], labels: Sequence[str]) -> float:
    """Balanced accuracy from per-case chances of a right answer."""
    recalls = []
    for label in LABELS:
        mine = [s for s, y in zip(scores, labels, strict=True) if y == label]
        recalls.append(sum(mine) / len(mine))
    return sum(recalls) / len(recalls)


def classifiable(labels: Sequence[str]) -> bool:
    """Enough cases to hold one out and still fit both classes: 2 of each."""
    return all(labels.count(label) >= 2 for label in LABELS)


def _folds(n: int, groups: Sequence[str] | None) -> list[list[int]]:
    """For each case, the indices to train on: all but itself, or all but its group."""
    if groups is None:
        return [[j for j in range(n) if j != i] for i in range(n)]
    return [[j for j in range(n) if groups[j] != groups[i]] for i in range(n)]


def held_out_accuracy(guesses: Sequence[float], labels: Sequence[str]) -> float:
    """Balanced accuracy of held-out guesses (each case's chance of being called bad)."""
    scores = [p if label == "bad" else 1 - p for p, label in zip(guesses, labels, strict=True)]
    return _balanced(scores, labels)


def comment_classifier_guesses(
    words: Sequence[Sequence[str]], labels: Sequence[str], groups: Sequence[str] | None = None
) -> list[float]:
    """Each case's held-out chance of being called bad by naive Bayes over comment words.

    Leave-one-out by default; with `groups` (scenarios), each case is predicted by a model
    fitted without any case of its group. A case without comments has the single word
    NO_COMMENT, so "only the good cases have comments" is learnt as readily as any word.
    """
    bags = [Counter(w) if w else Counter([NO_COMMENT]) for w in words]
    guesses = []
    for i, train_ids in enumerate(_folds(len(bags), groups)):
        train = [(bags[j], labels[j]) for j in train_ids]
        guesses.append(_nb_score(bags[i], train) if _has_both(train) else 0.5)
    return guesses


def comment_classifier_accuracy(
    words: Sequence[Sequence[str]], labels: Sequence[str], groups: Sequence[str] | None = None
) -> float:
    """Held-out balanced accuracy of naive Bayes over each case's comment words."""
    return held_out_accuracy(comment_classifier_guesses(words, labels, groups), labels)


def _length_rules(train: Sequence[tuple[int, str]]) -> list[tuple[float, bool]]:
    """The best rules (threshold t, bad_if_shorter) on the training cases, ties kept.

    Thresholds lie halfway between neighbouring training lengths, so a held-out case just
    past the longest training case of its class is still on its class's side.

    bad_if_shorter: bad when length <= t; otherwise bad when length > t.
    """
    bad = sorted(n for n, y in train if y == "bad")
    good = sorted(n for n, y in train if y == "good")
    values = sorted({n for n, _ in train})
    cuts = [values[0] - 0.5] + [(x + y) / 2 for x, y in zip(values, values[1:], strict=False)]
    best, rules = -1.0, []
    for t in cuts + [values[-1] + 0.5]:
        bad_le = _count_le(bad, t) / len(bad)
        good_le = _count_le(good, t) / len(good)
        shorter = (bad_le + (1 - good_le)) / 2
        for rule, score in (((t, True), shorter), ((t, False), 1 - shorter)):
            if score > best + 1e-12:
                best, rules = score, [rule]
            elif abs(score - best) <= 1e-12:
                rules.append(rule)
    return rules


def _count_le(sorted_values: Sequence[int], t: float) -> int:
    return bisect.bisect_right(sorted_values, t)


def _has_both(train: Sequence[tuple[object, str]]) -> bool:
    return {y for _, y in train} == set(LABELS)


def length_classifier_guesses(
    lengths: Sequence[int], labels: Sequence[str], groups: Sequence[str] | None = None
) -> list[float]:
    """Each case's held-out chance of being called bad by one threshold on code length
    (direction learnt). Leave-one-out by default, leave-one-group-out with `groups`."""
    pairs = list(zip(lengths, labels, strict=True))
    guesses = []
    for i, train_ids in enumerate(_folds(len(pairs), groups)):
        length = pairs[i][0]
        train = [pairs[j] for j in train_ids]
        if not _has_both(train):
            guesses.append(0.5)
            continue
        rules = _length_rules(train)
        says_bad = [(length <= t) == shorter for t, shorter in rules]
        guesses.append(sum(says_bad) / len(says_bad))
    return guesses


def length_classifier_accuracy(
    lengths: Sequence[int], labels: Sequence[str], groups: Sequence[str] | None = None
) -> float:
    """Held-out balanced accuracy of one threshold on code length (direction learnt)."""
    return held_out_accuracy(length_classifier_guesses(lengths, labels, groups), labels)
