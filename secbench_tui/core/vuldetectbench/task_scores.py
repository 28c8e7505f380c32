"""VulDetectBench scores: per reply, and per task over a run.

Two scorings. "correct" (the default) follows the benchmark's documented definitions:

- Task 1: the reply's YES/NO against the gold; accuracy, and F1 with YES as positive. A
  plain statement reads as a human grader reads it ("it is not vulnerable" is NO, "the
  code is vulnerable" YES); a reply that says neither, or both, is unparsed. An unparsed
  reply (or an error) is wrong for accuracy and a false negative on a gold YES; on a gold
  NO it is no positive prediction, so not a false positive.
- Task 2: SE is 1 for the optimal option, 0.5 for the sub-optimal one, 0 otherwise or
  when the reply names several options; ME is 1 when every option named is one of the
  two (so naming both still gets ME 1, but naming a wrong option too gets 0).
- Task 3: token recall of the gold tokens in the reply, tokenised as the library does
  (`nltk.word_tokenize`, reproduced offline in `vdb_tokenize`); a gold token is found
  at most as often as the reply holds it. MAR averages the recalls, MIR pools the counts.
- Tasks 4 and 5: the lines of every backtick snippet of the reply (whitespace removed,
  blank lines and a fence's language tag dropped) against the gold snippet's lines;
  URS is intersection over union, ORS intersection over gold.
- Task 3 samples whose gold lists no token have nothing to recall: whatever the reply
  (even an empty one) they are `correct`, carry no recall, and are left out of MAR
  (`no_gold` counts them). Only a request that failed (`error`) differs.

"library" reproduces the numbers `vuldetectbench` 0.0.5 reports for the same replies,
bugs included: task 1 counts any "yes" substring as YES; task 2 accepts a CWE number
that matches an option and reports mean(SE and ME pooled) for both; task 3 counts every
reply token that appears in the gold, repeats included (recall can pass 1); tasks 4 and
5 read only the first snippet and compare it with its own first character, never with
the gold, and report mean(URS and ORS pooled) for both. Replies on which the library
crashes (no backtick snippet, a snippet starting with whitespace...) score 0 and are
counted in `crashes`, since the library itself would stop the whole run there. A sample
with no reply at all (an error) is counted in `errors`, never in `crashes`: it never
reached the scorer.

`summary_metrics` and `summary_counts` split `aggregate_vuldetectbench`'s result into the
metrics a run summary reports (exactly `METRIC_KEYS`, fractions) and the sample counts.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from secbench_tui.core.models import Case, Outcome, Scored
from secbench_tui.core.vuldetectbench import DEFAULT_SCORING
from secbench_tui.core.vuldetectbench.loader import NO_VULNERABILITIES, options
from secbench_tui.core.vuldetectbench.tokenize import word_tokenize

SCORINGS: tuple[str, ...] = (DEFAULT_SCORING, "library")
METRIC_KEYS: dict[str, tuple[str, str]] = {
    "task1": ("accuracy", "f1"),
    "task2": ("se", "me"),
    "task3": ("mar", "mir"),
    "task4": ("urs", "ors"),
    "task5": ("urs", "ors"),
}


def check_scoring(scoring: str) -> str:
    if scoring not in SCORINGS:
        raise ValueError(
            f"unknown --vdb-scoring {scoring!r}: use 'correct' (the benchmark's definitions, "
            "the default) or 'library' (the numbers vuldetectbench 0.0.5 reports)"
        )
    return scoring


def score_vuldetectbench(case: Case, reply: str | None, scoring: str = DEFAULT_SCORING) -> Scored:
    """Score one reply; `reply=None` (no reply at all) gives an ERROR scored 0.

    Pass None rather than building the error yourself: task 1's F1 needs the gold
    class of a missed sample (a missed YES is a false negative, a missed NO a false
    positive), which this records in `scores`.
    """
    check_scoring(scoring)
    task = int(case.meta["task"])
    if reply is None:
        return _error(case, task, scoring)
    if scoring == "library":
        return _LIBRARY[task](case, reply)
    return _CORRECT[task](case, reply)


def _error(case: Case, task: int, scoring: str) -> Scored:
    scores: dict[str, float] = {}
    library = scoring == "library"
    if task == 1:
        gold_yes = _lib_yes(case.expected) if library else _gold_yes(case.expected)
        scores = _confusion(None, gold_yes, missing_is_wrong_answer=library)
    elif task == 3:
        gold = float(len(case.expected.split()))
        scores = {"tp": 0.0, "gold": gold} | ({"recall": 0.0} if gold or library else {})
    if scoring == "library":
        scores["crashed"] = 0.0  # no reply reached the library's scorer
    return Scored(actual=None, outcome=Outcome.ERROR, explanation="no reply", scores=scores)


def _confusion(
    said_yes: bool | None, gold_yes: bool, missing_is_wrong_answer: bool = False
) -> dict[str, float]:
    """Task 1 counts. A missing answer is a miss: a false negative on a gold YES and, on a
    gold NO, no prediction at all (no count), as the benchmark's definitions read. The
    library's reading counts it as the wrong answer (a false positive on a gold NO)."""
    if said_yes is None:
        if not missing_is_wrong_answer:
            no_answer = dict.fromkeys(("hit", "tp", "fp", "tn"), 0.0)
            return no_answer | {"gold_yes": float(gold_yes), "fn": float(gold_yes)}
        said_yes = not gold_yes
    hit = said_yes == gold_yes
    return {
        "hit": float(hit),
        "gold_yes": float(gold_yes),
        "tp": float(said_yes and gold_yes),
        "fp": float(said_yes and not gold_yes),
        "tn": float(not said_yes and not gold_yes),
        "fn": float(not said_yes and gold_yes),
    }


# ---------------------------------------------------------------------------
# Correct scoring
# ---------------------------------------------------------------------------

_T1_ANSWER = re.compile(r"(?i:\banswer\b)\s*(?i:is\b)?\s*[:\-]?\s*[*_`'\"]*\s*(?i:\b(yes|no)\b)")
_T1_LEAD = re.compile(r"^[\s*_`'\"#>(\[]*(yes|no)\b(?!\s*(?:or|/)\s*(?:yes|no)\b)", re.IGNORECASE)
_T1_UPPER = re.compile(r"\b(YES|NO)\b")
_T1_ADVERB = r"(?:(?:be|been|currently|actually|really|inherently|directly|likely)\s+)?"
_T1_SAYS_NO = re.compile(
    rf"(?:\bnot|n't)\s+{_T1_ADVERB}vulnerable\b"
    r"|\bno\s+(?:\w+\s+)?vulnerabilit(?:y|ies)\b"
    r"|(?:\bnot|n't)\s+(?:contain|have|include)\s+(?:a|an|any)\s+(?:\w+\s+)?vulnerabilit",
    re.IGNORECASE,
)
_T1_SAYS_YES = re.compile(
    rf"\b(?:is|are)\s+{_T1_ADVERB}vulnerable\b"
    r"|\b(?:contains?|has|have|there\s+is|there\s+are)\s+(?:a|an)\s+(?:\w+\s+){0,2}"
    r"vulnerabilit(?:y|ies)\b",
    re.IGNORECASE,
)


def _gold_yes(gold: str) -> bool:
    return gold.strip().upper() == "YES"


def extract_yes_no(reply: str) -> str | None:
    """YES or NO, or None when the reply does not say which.

    In order: an "answer: X" phrase (all of them agreeing), a reply that starts with
    yes/no, upper-case YES/NO of one kind only, or else a plain statement ("it is not
    vulnerable", "there are no vulnerabilities": NO; "the code is vulnerable": YES) that
    is not contradicted. A lower-case "no" inside prose ("there is no bounds check") is
    never taken as the answer.
    """
    said = {str(m).lower() for m in _T1_ANSWER.findall(reply)}
    if len(said) == 1:
        return said.pop().upper()
    lead = _T1_LEAD.match(reply)
    if lead:
        return lead.group(1).upper()
    upper = {str(m) for m in _T1_UPPER.findall(reply)}
    if len(upper) == 1:
        return upper.pop()
    if upper:
        return None
    return _plain_statement(reply)


def _plain_statement(reply: str) -> str | None:
    """NO for "it is not vulnerable" / "no vulnerabilities", YES for "the code is vulnerable";
    None when the reply says neither, or both."""
    says_no = bool(_T1_SAYS_NO.search(reply))
    says_yes = bool(_T1_SAYS_YES.search(_T1_SAYS_NO.sub(" ", reply)))
    if says_no == says_yes:
        return None
    return "NO" if says_no else "YES"


def _task1(case: Case, reply: str) -> Scored:
    said = extract_yes_no(reply)
    gold_yes = _gold_yes(case.expected)
    scores = _confusion(None if said is None else said == "YES", gold_yes)
    if said is None:
        return Scored(actual=None, outcome=Outcome.UNPARSED, scores=scores)
    outcome = Outcome.CORRECT if scores["hit"] else Outcome.WRONG
    return Scored(actual=said, outcome=outcome, scores=scores)


_T2_LETTER = re.compile(r"(?<![A-Za-z0-9_.])([A-E])\.(?![a-z0-9])")
_T2_KEYWORD = re.compile(
    r"(?i:\b(?:option|answer|choice)\b)\s*(?i:is\b)?\s*[:\-]?\s*[*_`'\"(\[]*([A-E])\b(?![\w.])"
)
_T2_MARKED = re.compile(r"\*\*([A-E])\*\*|\(([A-E])\)")
_T2_ALONE = re.compile(r"^\W*([A-E])\W*$")
_CWE = re.compile(r"CWE[-: ]?\s?(\d+)", re.IGNORECASE)


def _gold_letters(gold: str) -> tuple[str, str]:
    parts = gold.split("|")
    return parts[0].strip()[:1], parts[1].strip()[:1]


def extract_options(reply: str, choices: dict[str, str]) -> set[str]:
    """The option letters a reply names.

    Letters first ("B.", "option B", "**B**", "(B)", a lone "B"); only when there are
    none, CWE numbers matching an option's, then a plain "no vulnerabilities".
    """
    letters = set(_T2_LETTER.findall(reply)) | set(_T2_KEYWORD.findall(reply))
    letters |= {a or b for a, b in _T2_MARKED.findall(reply)}
    alone = _T2_ALONE.match(reply)
    if alone:
        letters.add(alone.group(1))
    if choices:
        letters &= set(choices)
    if letters:
        return letters
    numbers = set(_CWE.findall(reply))
    by_cwe = {k for k, text in choices.items() if set(_CWE.findall(text)) & numbers}
    if by_cwe:
        return by_cwe
    if "no vulnerabilit" in reply.lower():
        return {k for k, text in choices.items() if text.lower() == NO_VULNERABILITIES.lower()}
    return set()


def _task2(case: Case, reply: str) -> Scored:
    best, second = _gold_letters(case.expected)
    choices = options(str(case.meta.get("selection", "")))
    named = extract_options(reply, choices)
    if not named:
        scores = {"se": 0.0, "me": 0.0}
        return Scored(actual=None, outcome=Outcome.UNPARSED, scores=scores)
    se = 1.0 if named == {best} else 0.5 if named == {second} else 0.0
    me = 1.0 if named <= {best, second} else 0.0
    explanation = "names several options" if len(named) > 1 else None
    outcome = Outcome.CORRECT if se == 1.0 else Outcome.WRONG
    return Scored(
        actual=",".join(sorted(named)),
        outcome=outcome,
        explanation=explanation,
        scores={"se": se, "me": me},
    )


def _task3(case: Case, reply: str) -> Scored:
    gold = case.expected.split()
    if not gold:
        note = "the gold answer lists no tokens: nothing to recall, left out of MAR"
        return Scored(
            actual="", outcome=Outcome.CORRECT, explanation=note, scores={"tp": 0.0, "gold": 0.0}
        )
    if not reply.strip():
        scores = {"tp": 0.0, "gold": float(len(gold)), "recall": 0.0}
        return Scored(actual=None, outcome=Outcome.UNPARSED, scores=scores)
    found = Counter(word_tokenize(reply))
    matched: list[str] = []
    for token in gold:
        if found[token] > 0:
            found[token] -= 1
            matched.append(token)
    scores = {"tp": float(len(matched)), "gold": float(len(gold))}
    scores["recall"] = len(matched) / len(gold)
    outcome = Outcome.CORRECT if len(matched) == len(gold) else Outcome.WRONG
    return Scored(actual=" ".join(matched), outcome=outcome, scores=scores)


_SNIPPET = re.compile(r"```(.*?)(?:```|\Z)|`([^`]+)`", re.DOTALL)
_LANG_TAG = re.compile(r"^[\w+#.-]*$")
_WHITESPACE = re.compile(r"\s+")


def snippet_lines(text: str) -> tuple[list[str], set[str]]:
    """The backtick snippets of a text and their lines, whitespace removed."""
    snippets: list[str] = []
    lines: set[str] = set()
    for fenced, inline in _SNIPPET.findall(text):
        body = inline
        if fenced:
            head, newline, rest = fenced.partition("\n")
            body = rest if newline and _LANG_TAG.match(head.strip()) else fenced
        if not body.strip():
            continue
        snippets.append(body)
        lines |= {_WHITESPACE.sub("", ln) for ln in body.split("\n")} - {""}
    return snippets, lines


def _task45(case: Case, reply: str) -> Scored:
    snippets, said = snippet_lines(reply)
    _, gold = snippet_lines(case.expected)
    if not gold:
        gold = {_WHITESPACE.sub("", ln) for ln in case.expected.split("\n")} - {""}
    if not said:
        scores = {"urs": 0.0, "ors": 0.0, "inter": 0.0, "union": 0.0, "gold": float(len(gold))}
        return Scored(actual=None, outcome=Outcome.UNPARSED, scores=scores)
    inter, union = len(said & gold), len(said | gold)
    scores = {
        "urs": inter / union,
        "ors": inter / len(gold) if gold else 0.0,
        "inter": float(inter),
        "union": float(union),
        "gold": float(len(gold)),
    }
    outcome = Outcome.CORRECT if scores["urs"] == 1.0 else Outcome.WRONG
    return Scored(actual="\n".join(snippets), outcome=outcome, scores=scores)


_CORRECT = {1: _task1, 2: _task2, 3: _task3, 4: _task45, 5: _task45}


# ---------------------------------------------------------------------------
# Library scoring: what vuldetectbench 0.0.5 computes, bugs included
# ---------------------------------------------------------------------------


def _lib_yes(text: str) -> bool:
    low = text.lower()
    return "yes" in low or "is vulnerable" in low


def _lib_task1(case: Case, reply: str) -> Scored:
    said_yes = _lib_yes(reply)
    scores = _confusion(said_yes, _lib_yes(case.expected)) | {"crashed": 0.0}
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


_LIBRARY = {1: _lib_task1, 2: _lib_task2, 3: _lib_task3, 4: _lib_task45, 5: _lib_task45}


# ---------------------------------------------------------------------------
# Aggregates
# ---------------------------------------------------------------------------


# Per task ("task1".."task5"): its metrics (fractions) and sample counts, all numbers.
TaskMetrics = dict[str, dict[str, float]]


def aggregate_vuldetectbench(
    samples: Iterable[tuple[int, Scored]], scoring: str = DEFAULT_SCORING
) -> TaskMetrics:
    """Per-task metrics, as fractions in [0, 1], for the tasks present.

    `{"task1": {"accuracy", "f1"}, "task2": {"se", "me"}, "task3": {"mar", "mir"},
    "task4": {"urs", "ors"}, "task5": {"urs", "ors"}}`, each with counts: `n` samples,
    `errors` (no reply), `unparsed`, and `crashes` under library scoring.

    Errors and unparsed replies stay in every denominator with a score of 0: they
    lower accuracy, SE/ME, MAR, URS/ORS; in task 1's F1 a missed YES is a false
    negative and a missed NO no prediction (an error scored without its gold class
    counts as a false negative; the library's reading counts a missed NO as a false
    positive). In task 3, the correct scoring leaves samples whose
    gold lists no token out of MAR (`no_gold` counts them); the library scores them 0.
    Library scoring can report values above 1 for task 3, as the library does.
    """
    check_scoring(scoring)
    by_task: dict[int, list[Scored]] = {}
    for task, scored in samples:
        by_task.setdefault(int(task), []).append(scored)
    out: TaskMetrics = {}
    for task in sorted(by_task):
        rows = by_task[task]
        if scoring == "library":
            metrics = _LIB_AGGREGATE[task](rows)
        else:
            metrics = _AGGREGATE[task](rows)
        metrics |= _counts(rows, scoring)
        out[f"task{task}"] = metrics
    return out


def _counts(rows: list[Scored], scoring: str) -> dict[str, int]:
    counts = {
        "n": len(rows),
        "errors": sum(r.outcome is Outcome.ERROR for r in rows),
        "unparsed": sum(r.outcome is Outcome.UNPARSED for r in rows),
    }
    if scoring == "library":
        counts["crashes"] = sum(r.scores.get("crashed", 0.0) > 0 for r in rows)
    return counts


def _get(row: Scored, key: str) -> float:
    return float(row.scores.get(key, 0.0))


def _task1_counts(rows: list[Scored]) -> tuple[int, int, int, int]:
    totals = Counter[str]()
    for row in rows:
        if {"tp", "fp", "tn", "fn"} & row.scores.keys():
            totals.update({key: int(_get(row, key)) for key in ("tp", "fp", "tn", "fn")})
        else:
            totals["fn"] += 1  # an error scored without its gold class
    return totals["tp"], totals["fp"], totals["tn"], totals["fn"]


def _agg_task1(rows: list[Scored]) -> dict[str, float]:
    answered = [r for r in rows if r.outcome in (Outcome.CORRECT, Outcome.WRONG)]
    tp, fp, tn, fn = _task1_counts(answered)
    # A missing answer (unparsed, error) is a miss: a false negative on a gold YES, no
    # prediction on a gold NO. Read from the outcome, so results recorded before this
    # convention (which counted a false positive there) read the same way.
    fn += sum(
        _get(r, "gold_yes") > 0 or "gold_yes" not in r.scores
        for r in rows
        if r.outcome not in (Outcome.CORRECT, Outcome.WRONG)
    )
    f1_den = 2 * tp + fp + fn
    return {
        "accuracy": (tp + tn) / len(rows) if rows else 0.0,
        "f1": 2 * tp / f1_den if f1_den else 0.0,
    }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _agg_task2(rows: list[Scored]) -> dict[str, float]:
    return {"se": _mean([_get(r, "se") for r in rows]), "me": _mean([_get(r, "me") for r in rows])}


def _agg_task3(rows: list[Scored]) -> dict[str, float]:
    with_gold = [r for r in rows if _get(r, "gold") > 0 or "gold" not in r.scores]
    gold = sum(_get(r, "gold") for r in rows)
    return {
        "mar": _mean([_get(r, "recall") for r in with_gold]),
        "mir": sum(_get(r, "tp") for r in rows) / gold if gold else 0.0,
        "no_gold": len(rows) - len(with_gold),
    }


def _agg_task45(rows: list[Scored]) -> dict[str, float]:
    return {
        "urs": _mean([_get(r, "urs") for r in rows]),
        "ors": _mean([_get(r, "ors") for r in rows]),
    }


_AGGREGATE = {1: _agg_task1, 2: _agg_task2, 3: _agg_task3, 4: _agg_task45, 5: _agg_task45}


def _lib_agg_task1(rows: list[Scored]) -> dict[str, float]:
    tp, fp, tn, fn = (2 * v for v in _task1_counts(rows))  # each sample is listed twice
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
    values = [_get(r, key) for r in rows for key in (first, second)]
    return sum(values) / len(values) if values else 0.0


def _lib_agg_task2(rows: list[Scored]) -> dict[str, float]:
    pooled = _pooled(rows, "me", "se")
    return {"se": pooled, "me": pooled}


def _lib_agg_task3(rows: list[Scored]) -> dict[str, float]:
    recalls = [_get(r, "recall") for r in rows for _ in (0, 1)]
    hits = sum(_get(r, "tp") for r in rows for _ in (0, 1))
    gold = sum(_get(r, "gold") for r in rows for _ in (0, 1))
    return {
        "mar": sum(recalls) / len(recalls) if recalls else 0.0,
        "mir": hits / gold if gold else 0.0,
    }


def _lib_agg_task45(rows: list[Scored]) -> dict[str, float]:
    pooled = _pooled(rows, "urs", "ors")
    return {"urs": pooled, "ors": pooled}


_LIB_AGGREGATE = {
    1: _lib_agg_task1,
    2: _lib_agg_task2,
    3: _lib_agg_task3,
    4: _lib_agg_task45,
    5: _lib_agg_task45,
}


# ---------------------------------------------------------------------------
# What a run summary shows
# ---------------------------------------------------------------------------


def summary_metrics(aggregate: TaskMetrics) -> dict[str, dict[str, float]]:
    """Only the documented metrics of each task, e.g. `{"task1": {"accuracy", "f1"}}`.

    What `--summary-json` promises under "vuldetectbench": these keys and nothing else,
    as fractions (library scoring can pass 1 in task 3, as the library does).
    """
    return {
        task: {key: float(metrics.get(key, 0.0)) for key in METRIC_KEYS[task]}
        for task, metrics in aggregate.items()
        if task in METRIC_KEYS
    }


def summary_counts(aggregate: TaskMetrics) -> dict[str, dict[str, int]]:
    """The sample counts of each task: `n`, `errors`, `unparsed`, `no_gold`, `crashes`."""
    return {
        task: {key: int(value) for key, value in metrics.items() if key not in METRIC_KEYS[task]}
        for task, metrics in aggregate.items()
        if task in METRIC_KEYS
    }


def crash_note(counts: Mapping[str, float]) -> str:
    """The crashes in words: "vuldetectbench 0.0.5 crashes on 3 of 100 samples (scored 0)".

    Empty when there were none, as always under the correct scoring.
    """
    crashes = int(counts.get("crashes") or 0)
    if not crashes:
        return ""
    return (
        f"vuldetectbench 0.0.5 crashes on {crashes} of {int(counts.get('n') or 0)} "
        "samples (scored 0)"
    )


def aggregate_rows(
    rows: Iterable[Mapping[str, Any]], scoring: str = DEFAULT_SCORING
) -> TaskMetrics:
    """`aggregate_vuldetectbench` over results as the store returns them (app = "taskN").

    A row that is not a VulDetectBench result (another app, an unknown outcome: a database
    edited by hand) is left out rather than failing the whole summary.
    """
    samples = [
        (
            int(str(row["app"]).removeprefix("task")),
            Scored(
                actual=row["actual_result"],
                outcome=Outcome(row["outcome"]),
                explanation=row["explanation"],
                scores=json.loads(row["scores"] or "{}"),
            ),
        )
        for row in rows
        if str(row["app"]) in _TASK_APPS and row["outcome"] in _OUTCOMES
    ]
    return aggregate_vuldetectbench(samples, scoring)


_TASK_APPS = frozenset(f"task{task}" for task in range(1, 6))
_OUTCOMES = frozenset(outcome.value for outcome in Outcome)
