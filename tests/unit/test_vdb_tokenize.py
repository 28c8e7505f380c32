"""Our offline `word_tokenize` against tokens recorded from nltk's.

tests/fixtures/vdb/tokens.json holds texts and the tokens nltk.word_tokenize (English
punkt_tab) gave for them, written by scripts/vdb_tokenize_check.py, which also compares
the two over the whole test set and a few hundred thousand generated replies.
"""

from __future__ import annotations

import json

import pytest
from vdb_fixtures import FIXTURES

from secbench_tui.core.vuldetectbench.tokenize import sentences, treebank_words, word_tokenize


def _recorded() -> list[dict[str, object]]:
    data = json.loads((FIXTURES / "tokens.json").read_text("utf-8"))
    cases: list[dict[str, object]] = data["cases"]
    return cases


def test_recorded_tokens_match() -> None:
    cases = _recorded()
    assert len(cases) > 300
    wrong = [c["text"] for c in cases if word_tokenize(str(c["text"])) != c["tokens"]]
    assert wrong == []


@pytest.mark.parametrize(
    ("text", "tokens"),
    [  # from nltk's own doctests and runs of nltk.word_tokenize
        (
            "I called Dr. Jones. I called Dr. Jones.",
            ["I", "called", "Dr.", "Jones", ".", "I", "called", "Dr.", "Jones", "."],
        ),
        (
            "Use strcpy. Then the e.g. buffer d. is 12. ok. Mr. Smith went.",
            ["Use", "strcpy", ".", "Then", "the", "e.g", ".", "buffer", "d.", "is", "12.", "ok."]
            + ["Mr.", "Smith", "went", "."],
        ),
        ("set to 0. then n. ok", ["set", "to", "0.", "then", "n.", "ok"]),
        ("`buf` and `len`.", ["`", "buf", "`", "and", "`", "len", "`", "."]),
        (
            "It's `strcpy(dst, src)`!",
            ["It", "'s", "`", "strcpy", "(", "dst", ",", "src", ")"] + ["`", "!"],
        ),
    ],
)
def test_known_tokens(text: str, tokens: list[str]) -> None:
    assert word_tokenize(text) == tokens


def test_sentences_keep_closing_punctuation() -> None:
    assert sentences("(Sent1.) Sent2.") == ["(Sent1.)", "Sent2."]
    assert sentences("") == []


def test_treebank_splits_only_the_final_period() -> None:
    assert treebank_words("in New York. Please buy them.") == [
        "in", "New", "York.", "Please", "buy", "them", ".",
    ]  # fmt: skip
