"""Each task's reply read under the benchmark's documented definitions (the "correct" scoring).

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

Each reply's scores are per-sample numbers (`Scored.scores`) that `aggregation` turns into
the task's metrics.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from secbench_tui.core.models import Case, Outcome, Scored
from secbench_tui.core.vuldetectbench.loader import NO_VULNERABILITIES, options
from secbench_tui.core.vuldetectbench.tokenize import word_tokenize


def confusion(
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


def gold_says_yes(gold: str) -> bool:
    """A task 1 gold answer of YES (the code is vulnerable)."""
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
    gold_yes = gold_says_yes(case.expected)
    scores = confusion(None if said is None else said == "YES", gold_yes)
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


CORRECT_SCORING: dict[int, Callable[[Case, str], Scored]] = {
    1: _task1,
    2: _task2,
    3: _task3,
    4: _task45,
    5: _task45,
}
