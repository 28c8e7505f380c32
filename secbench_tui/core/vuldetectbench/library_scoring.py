"""What `vuldetectbench` 0.0.5 computes for the same replies, bugs included (`--vdb-scoring
library`), per reply and per task.

Task 1 counts any "yes" substring as YES; task 2 accepts a CWE number that matches an
option and reports mean(SE and ME pooled) for both; task 3 counts every reply token that
appears in the gold, repeats included (recall can pass 1); tasks 4 and 5 read only the
first snippet and compare it with its own first character, never with the gold, and report
mean(URS and ORS pooled) for both. Replies on which the library crashes (no backtick
snippet, a snippet starting with whitespace...) score 0 and are counted in `crashes`, since
the library itself would stop the whole run there. A sample with no reply at all (an error)
is counted in `errors`, never in `crashes`: it never reached the scorer.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from secbench_tui.core.models import Case, Outcome, Scored
from secbench_tui.core.vuldetectbench.aggregation import score_of, task1_counts
from secbench_tui.core.vuldetectbench.loader import options
from secbench_tui.core.vuldetectbench.replies import confusion, extract_options
from secbench_tui.core.vuldetectbench.tokenize import word_tokenize


def library_yes(text: str) -> bool:
    """YES as the library reads a reply or a gold answer: any "yes" in it, or "is vulnerable"."""
    low = text.lower()
    return "yes" in low or "is vulnerable" in low


def _lib_task1(case: Case, reply: str) -> Scored:
    said_yes = library_yes(reply)
    scores = confusion(said_yes, library_yes(case.expected)) | {"crashed": 0.0}
    outcome = Outcome.CORRECT if scores["hit"] else Outcome.WRONG
    return Scored(actual="YES" if said_yes else "NO", outcome=outcome, scores=scores)


_LIB_CWE = re.compile(r"CWE[-|:| ]?\s?(\d{1,3})")


def _lib_cwe_hit(reply: str, option: str) -> bool:
    return bool(set(_LIB_CWE.findall(reply)) & set(_LIB_CWE.findall(option)))


def _lib_se(reply: str, best: str, second: str, parts: list[str]) -> tuple[float, str]:
    by_letter, code = 0.0, ""
    if second + "." in reply:
        by_letter, code = by_letter + 0.5, second
    if best + "." in reply:
        by_letter, code = by_letter + 1, best
    if by_letter == 1.5:
        by_letter, code = 0.0, ""
    by_cwe = 0.0
    if _lib_cwe_hit(reply, parts[0]):
        by_cwe, code = by_cwe + 1, best
    if _lib_cwe_hit(reply, parts[1]):
        by_cwe, code = by_cwe + 0.5, second
    if by_cwe == 1.5:
        by_cwe, code = 0.0, ""
    return max(by_letter, by_cwe), code


def _lib_me(reply: str, best: str, second: str, parts: list[str]) -> tuple[float, str]:
    by_letter, code = 0.0, ""
    if best + "." in reply:
        by_letter, code = 1.0, best
    elif second + "." in reply:
        by_letter, code = 1.0, second
    by_cwe = 0.0
    if _lib_cwe_hit(reply, parts[0]):
        by_cwe, code = 1.0, best
    elif _lib_cwe_hit(reply, parts[1]):
        by_cwe, code = 1.0, second
    return max(by_letter, by_cwe), code


def _lib_task2(case: Case, reply: str) -> Scored:
    parts = case.expected.split("|")
    best, second = parts[0][0], parts[1][0]
    se, se_code = _lib_se(reply, best, second, parts)
    me, me_code = _lib_me(reply, best, second, parts)
    scores = {"se": se, "me": me, "crashed": 0.0}
    code = se_code or me_code
    if se == 1:
        outcome = Outcome.CORRECT
    elif code or extract_options(reply, options(str(case.meta.get("selection", "")))):
        outcome = Outcome.WRONG  # the library reads only the gold letters; it named another
    else:
        outcome = Outcome.UNPARSED
    return Scored(actual=code or None, outcome=outcome, scores=scores)


def _lib_task3(case: Case, reply: str) -> Scored:
    gold = case.expected.split()
    hits = [token for token in word_tokenize(reply) if token in gold]
    recall = len(hits) / len(gold) if gold else 0.0
    scores = {"tp": float(len(hits)), "gold": float(len(gold)), "recall": recall, "crashed": 0.0}
    if not reply.strip():
        return Scored(actual=None, outcome=Outcome.UNPARSED, scores=scores)
    outcome = Outcome.CORRECT if recall >= 1 else Outcome.WRONG
    return Scored(actual=" ".join(hits), outcome=outcome, scores=scores)


_LIB_SNIPPET = re.compile(r"`{3}(.+?)`{3}|`(.+?)`", re.DOTALL)
_NO_SNIPPET = "vuldetectbench 0.0.5 crashes on a reply without a backtick snippet; scored 0"


def _lib_task45(case: Case, reply: str) -> Scored:
    snippets = [a or b for a, b in _LIB_SNIPPET.findall(reply)]
    snippets = [s for s in snippets if s]
    if not snippets:
        scores = {"urs": 0.0, "ors": 0.0, "crashed": 1.0}
        return Scored(actual=None, outcome=Outcome.UNPARSED, explanation=_NO_SNIPPET, scores=scores)
    first = snippets[0]
    said = {ln.strip().replace(" ", "") for ln in first.split("\n")}
    said -= {"c", "cpp", "python", ""}
    # The library's "gold" is the first character of the reply's own first snippet.
    pseudo_gold = {first[0].strip()} - {""}
    inter, union = len(said & pseudo_gold), len(said | pseudo_gold)
    crashed: list[str] = []
    urs = inter / union if union else 0.0
    if not union:
        crashed.append("URS")
    ors = inter / len(pseudo_gold) if pseudo_gold else 0.0
    if not pseudo_gold:
        crashed.append("ORS")
    scores = {"urs": urs, "ors": ors, "crashed": float(bool(crashed))}
    note: str | None = None
    if crashed:
        note = (
            f"vuldetectbench 0.0.5 crashes computing {' and '.join(crashed)} "
            "(division by zero) on this reply; scored 0"
        )
    outcome = Outcome.CORRECT if urs == 1 else Outcome.WRONG
    return Scored(actual="\n".join(snippets), outcome=outcome, explanation=note, scores=scores)


LIBRARY_SCORING: dict[int, Callable[[Case, str], Scored]] = {
    1: _lib_task1,
    2: _lib_task2,
    3: _lib_task3,
    4: _lib_task45,
    5: _lib_task45,
}


# Per task over a run, as the library aggregates its per-sample lists.


def _lib_agg_task1(rows: list[Scored]) -> dict[str, float]:
    tp, fp, tn, fn = (2 * v for v in task1_counts(rows))  # each sample is listed twice
    try:
        p = tp / (tp + fn)
        r = tp / (tp + fp)
        f1 = 2 * (p * r) / (p + r)
    except ZeroDivisionError:
        f1 = 0.0
    total = tp + fp + tn + fn
    return {"accuracy": (tp + tn) / total if total else 0.0, "f1": f1}


def _pooled(rows: list[Scored], first: str, second: str) -> float:
    """The library's one shared list: both per-sample metrics of every sample."""
    values = [score_of(r, key) for r in rows for key in (first, second)]
    return sum(values) / len(values) if values else 0.0


def _lib_agg_task2(rows: list[Scored]) -> dict[str, float]:
    pooled = _pooled(rows, "me", "se")
    return {"se": pooled, "me": pooled}


def _lib_agg_task3(rows: list[Scored]) -> dict[str, float]:
    recalls = [score_of(r, "recall") for r in rows for _ in (0, 1)]
    hits = sum(score_of(r, "tp") for r in rows for _ in (0, 1))
    gold = sum(score_of(r, "gold") for r in rows for _ in (0, 1))
    return {
        "mar": sum(recalls) / len(recalls) if recalls else 0.0,
        "mir": hits / gold if gold else 0.0,
    }


def _lib_agg_task45(rows: list[Scored]) -> dict[str, float]:
    pooled = _pooled(rows, "urs", "ors")
    return {"urs": pooled, "ors": pooled}


LIBRARY_AGGREGATES: dict[int, Callable[[list[Scored]], dict[str, float]]] = {
    1: _lib_agg_task1,
    2: _lib_agg_task2,
    3: _lib_agg_task3,
    4: _lib_agg_task45,
    5: _lib_agg_task45,
}
