"""The tokens nltk's `word_tokenize` gives, without nltk and without a download.

VulDetectBench scores task 3 by tokenising the model's reply with `nltk.word_tokenize`:
English Punkt splits the reply into sentences, then NLTK's improved Treebank tokenizer
splits each sentence into words. Punkt needs its trained English model (`punkt_tab`), a
download we cannot make at run time, and the sentence split matters here: a period that
ends a sentence is split off (`strcpy.` gives `strcpy` and `.`), one that does not is
kept (`d.` after an abbreviation-like letter), and the gold answers hold single letters
and numbers that Punkt treats specially.

This module re-implements the run-time half of both algorithms (nltk 3.10.4, Apache-2.0;
Kiss & Strunk 2006) with the standard library, and ships the English Punkt parameters
(abbreviations, collocations, sentence starters, orthographic contexts) converted from
NLTK's `punkt_tab/english` in `vuldetectbench_punkt_english.json`.
`tests/unit/test_vdb_tokenize.py` checks it against tokens recorded from the real `word_tokenize`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

__all__ = ["sentences", "treebank_words", "word_tokenize"]

# Whitespace as the `regex` engine (which nltk compiles its patterns with) defines `\s`:
# Unicode White_Space. Python's `re` also counts U+001C..U+001F, which would move sentence
# boundaries on text holding those control characters.
_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_S = f"[{_WS}]"
_NS = f"[^{_WS}]"

# ---------------------------------------------------------------------------
# Punkt, English, run time only
# ---------------------------------------------------------------------------

_NON_WORD = "(?:[)\";}\\]\\*:@'\\({\\[\u2018\u2019\u201c\u201d\xab\xbb?!])"
_MULTI_CHAR = f"(?:\\-{{2,}}|\\.{{2,}}|(?:\\.{_S}){{2,}}\\.)"
_WORD_START = '[^\\("`{\\[:;&\\#\\*@\\)}\\]\\-,]'
_PUNKT_WORD = re.compile(
    f"({_MULTI_CHAR}"
    f"|(?={_WORD_START}){_NS}+?(?={_S}|$|{_NON_WORD}|{_MULTI_CHAR}"
    f"|,(?=$|{_S}|{_NON_WORD}|{_MULTI_CHAR}))"
    f"|{_NS})"
)
_PERIOD_CONTEXT = re.compile(f"[.?!](?=(?P<after_tok>{_NON_WORD}|{_S}+(?P<next_tok>{_NS}+)))")
_REALIGN = re.compile(
    f"[\"')\\]}}\u2018\u2019\u201c\u201d\xab\xbb]+?(?:{_S}+|(?=--)|$)", re.MULTILINE
)
_NUMERIC = re.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")
_ELLIPSIS = re.compile(r"\.\.+$")
_INITIAL = re.compile(r"[^\W\d]\.$")
_LAST_WS = " \t\n\r\x0b\x0c"  # string.whitespace, as nltk's backwards scan uses
_PARAMS_FILE = "vuldetectbench_punkt_english.json"

_BEG_UC, _MID_UC, _UNK_UC = 1 << 1, 1 << 2, 1 << 3
_BEG_LC, _MID_LC, _UNK_LC = 1 << 4, 1 << 5, 1 << 6
_UC = _BEG_UC | _MID_UC | _UNK_UC
_LC = _BEG_LC | _MID_LC | _UNK_LC
_SENT_END = (".", "?", "!")
_PUNCT = (";", ":", ",", ".", "!", "?")


@dataclass(frozen=True)
class _Params:
    abbrev_types: frozenset[str]
    collocations: frozenset[tuple[str, str]]
    sent_starters: frozenset[str]
    ortho_context: dict[str, int]


@cache
def _params() -> _Params:
    path = resources.files("secbench_tui.core.vuldetectbench").joinpath(_PARAMS_FILE)
    data = json.loads(path.read_text(encoding="utf-8"))
    return _Params(
        abbrev_types=frozenset(data["abbrev_types"]),
        collocations=frozenset((a, b) for a, b in data["collocations"]),
        sent_starters=frozenset(data["sent_starters"]),
        ortho_context={k: int(v) for k, v in data["ortho_context"].items()},
    )


@dataclass
class _Token:
    tok: str
    type: str = field(init=False)
    sentbreak: bool = False
    abbr: bool = False
    ellipsis: bool = False

    def __post_init__(self) -> None:
        self.type = _NUMERIC.sub("##number##", self.tok.lower())

    @property
    def period_final(self) -> bool:
        return self.tok.endswith(".")

    @property
    def type_no_period(self) -> str:
        return self.type[:-1] if len(self.type) > 1 and self.type[-1] == "." else self.type

    @property
    def type_no_sentperiod(self) -> str:
        return self.type_no_period if self.sentbreak else self.type

    @property
    def is_initial(self) -> bool:
        return _INITIAL.match(self.tok) is not None


def _punkt_words(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    for line in text.split("\n"):
        if line.strip():
            tokens.extend(_Token(t) for t in _PUNKT_WORD.findall(line))
    return tokens


def _first_pass(tok: _Token, params: _Params) -> None:
    text = tok.tok
    if text in _SENT_END:
        tok.sentbreak = True
    elif _ELLIPSIS.match(text):
        tok.ellipsis = True
    elif tok.period_final and not text.endswith(".."):
        stem = text[:-1].lower()
        if stem in params.abbrev_types or stem.split("-")[-1] in params.abbrev_types:
            tok.abbr = True
        else:
            tok.sentbreak = True


def _ortho_heuristic(tok: _Token, params: _Params) -> bool | None:
    """True: starts a sentence; False: does not; None: cannot tell."""
    if tok.tok in _PUNCT:
        return False
    context = params.ortho_context.get(tok.type_no_sentperiod, 0)
    if tok.tok[0].isupper() and context & _LC and not context & _MID_UC:
        return True
    if tok.tok[0].islower() and (context & _UC or not context & _BEG_LC):
        return False
    return None


def _second_pass(tok: _Token, nxt: _Token, params: _Params) -> None:
    if not tok.period_final:
        return
    typ, next_typ, initial = tok.type_no_period, nxt.type_no_sentperiod, tok.is_initial
    if (typ, next_typ) in params.collocations:
        tok.sentbreak, tok.abbr = False, True
        return
    if (tok.abbr or tok.ellipsis) and not initial:
        if _ortho_heuristic(nxt, params) is True:
            tok.sentbreak = True
            return
        if nxt.tok[0].isupper() and next_typ in params.sent_starters:
            tok.sentbreak = True
            return
    if initial or typ == "##number##":
        starter = _ortho_heuristic(nxt, params)
        if starter is False:
            tok.sentbreak, tok.abbr = False, True
            return
        if (
            starter is None
            and initial
            and nxt.tok[0].isupper()
            and not params.ortho_context.get(next_typ, 0) & _LC
        ):
            tok.sentbreak, tok.abbr = False, True


def _contains_sentbreak(context: str, params: _Params) -> bool:
    tokens = _punkt_words(context)
    for tok in tokens:
        _first_pass(tok, params)
    for i, tok in enumerate(tokens[:-1]):
        _second_pass(tok, tokens[i + 1], params)
        if tok.sentbreak:
            return True  # a token follows this break
    return False


def _last_whitespace(text: str) -> int:
    for i in range(len(text) - 1, -1, -1):
        if text[i] in _LAST_WS:
            return i
    return 0


def _end_contexts(text: str) -> Iterator[tuple[re.Match[str], str]]:
    """Candidate sentence ends with the word before and the token after each."""
    prev_start, prev_stop = 0, 0
    prev_match: re.Match[str] | None = None
    for match in _PERIOD_CONTEXT.finditer(text):
        index = _last_whitespace(text[prev_stop : match.start()])
        start = index + prev_stop + 1 if index else prev_start
        if prev_match is not None and prev_stop <= start:
            yield prev_match, _context(text, prev_start, prev_stop, prev_match)
        prev_match, prev_start, prev_stop = match, start, match.start()
    if prev_match is not None:
        yield prev_match, _context(text, prev_start, prev_stop, prev_match)


def _context(text: str, start: int, stop: int, match: re.Match[str]) -> str:
    return text[start:stop] + match.group() + match.group("after_tok")


def _slices(text: str, params: _Params) -> Iterator[tuple[int, int]]:
    last_break = 0
    for match, context in _end_contexts(text):
        if _contains_sentbreak(context, params):
            yield last_break, match.end()
            last_break = match.start("next_tok") if match.group("next_tok") else match.end()
    yield last_break, len(text.rstrip())


def _realigned(text: str, slices: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    realign = 0
    for i, (start, stop) in enumerate(slices):
        start += realign
        if i + 1 == len(slices):
            if text[start:stop]:
                yield start, stop
            continue
        next_start, next_stop = slices[i + 1]
        found = _REALIGN.match(text[next_start:next_stop])
        if found:
            yield start, next_start + len(found.group(0).rstrip())
            realign = found.end()
        else:
            realign = 0
            if text[start:stop]:
                yield start, stop


def sentences(text: str) -> list[str]:
    """English Punkt sentences, as `nltk.sent_tokenize(text)` returns them."""
    spans = list(_slices(text, _params()))
    return [text[start:stop] for start, stop in _realigned(text, spans)]


# ---------------------------------------------------------------------------
# NLTKWordTokenizer (the improved Treebank tokenizer), one sentence at a time
# ---------------------------------------------------------------------------

_Rule = tuple[re.Pattern[str], str]

_STARTING_QUOTES: list[_Rule] = [
    (re.compile("([«“‘„]|[`]+)"), r" \1 "),
    (re.compile(r"^\""), r"``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
    (re.compile(r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)"), r"\1 "),
]
_PUNCTUATION: list[_Rule] = [
    (re.compile(f"([^\\.])(\\.)([\\]\\)}}>\"'»”’ ]*+){_S}*$"), r"\1 \2 \3 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}"), r" \g<0> "),
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile("[\u2012-\u2015]"), r" \g<0> "),
    (re.compile(f"([^\\.])(\\.)([\\]\\)}}>\"']*){_S}*$"), r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[*]"), r" \g<0> "),
]
_PARENS: _Rule = (re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> ")
_DOUBLE_DASHES: _Rule = (re.compile(r"--"), r" -- ")
_ENDING_QUOTES: list[_Rule] = [
    (re.compile("([»”’])"), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(f"{_S}+"), " "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
_CONTRACTIONS: list[re.Pattern[str]] = [
    re.compile(p)
    for p in (
        r"(?i)\b(can)(?#X)(not)\b",
        r"(?i)\b(d)(?#X)('ye)\b",
        r"(?i)\b(gim)(?#X)(me)\b",
        r"(?i)\b(gon)(?#X)(na)\b",
        r"(?i)\b(got)(?#X)(ta)\b",
        r"(?i)\b(lem)(?#X)(me)\b",
        r"(?i)\b(more)(?#X)('n)\b",
        f"(?i)\\b(wan)(?#X)(na)(?={_S})",
        r"(?i) ('t)(?#X)(is)\b",
        r"(?i) ('t)(?#X)(was)\b",
    )
]


def _apply(rules: list[_Rule], text: str) -> str:
    for pattern, replacement in rules:
        text = pattern.sub(replacement, text)
    return text


def treebank_words(sentence: str) -> list[str]:
    """One sentence's tokens, as `nltk.tokenize.NLTKWordTokenizer().tokenize` gives them."""
    text = _apply(_STARTING_QUOTES, sentence)
    text = _apply(_PUNCTUATION, text)
    text = _apply([_PARENS, _DOUBLE_DASHES], text)
    text = _apply(_ENDING_QUOTES, " " + text + " ")
    for pattern in _CONTRACTIONS:
        text = pattern.sub(r" \1 \2 ", text)
    return text.split()


def word_tokenize(text: str) -> list[str]:
    """`nltk.word_tokenize(text)` with the English Punkt model."""
    return [token for sentence in sentences(text) for token in treebank_words(sentence)]
