"""Check `secbench_tui.core.vuldetectbench.tokenize` against the real `nltk.word_tokenize`.

Needs nltk and its English `punkt_tab` model, so run it in a scratch environment, never
in the project's own:

    python -m venv /tmp/vdbvenv && /tmp/vdbvenv/bin/pip install vuldetectbench==0.0.5
    NLTK_DATA=/path/with/tokenizers/punkt_tab/english \
        /tmp/vdbvenv/bin/python scripts/vdb_tokenize_check.py \
        --data ../shared/vuldetectbench/test [--samples 200000] [--write-fixture]

It tokenises, with both, every gold answer, every code sample and every prompt of the
test set, plus a large set of generated replies in the shapes models give (prose, lists,
markdown, fenced code, sentence ends after identifiers, numbers, single letters and
abbreviations), and prints each difference. `--write-fixture` stores a sample of texts and
nltk's tokens in tests/fixtures/vdb/tokens.json for the unit tests, which run without nltk.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nltk import __version__ as nltk_version  # noqa: E402
from nltk import word_tokenize as nltk_word_tokenize  # noqa: E402

from secbench_tui.core.vuldetectbench.tokenize import word_tokenize  # noqa: E402

WORDS = (
    "the buffer is copied without checking its size this can overflow when the input is "
    "longer than expected pointer freed twice used after free null dereference integer "
    "wraps around loop index off by one format string user controlled data to from of in "
    "and or not it's doesn't can't won't I'd we'll they're variable function call"
).split()
ABBREVS = ["e.g.", "i.e.", "etc.", "Mr.", "Dr.", "vs.", "St.", "Inc.", "U.S.", "approx."]
STARTERS = ["The", "This", "However", "It", "In", "Then", "Also", "But", "So", "If", "A", "An"]
PUNCT = [".", ",", ";", ":", "!", "?", "...", " -", " --", "'", '"', ")", "(", "]"]
PUNCT += ["\u201c", "\u201d", "\u2019", "\u2014", "\xa0", "\u00ab", "\u00bb", "\u2026"]
PUNCT += ["\x1c", "e\u0301", "\u4e2d\u6587"]


def _identifiers(code: str) -> list[str]:
    import re

    names = re.findall(r"[A-Za-z_][A-Za-z0-9_]*|\d+", code)
    return names or ["x"]


def _snippet(rng: random.Random, code_lines: list[str]) -> str:
    line = rng.choice(code_lines).strip() if code_lines else "x = 1;"
    return rng.choice([f"`{line}`", f"```c\n{line}\n```", f"```\n{line}\n```", line])


def _reply(rng: random.Random, gold: list[str], code: str) -> str:
    names = _identifiers(code)
    lines = [ln for ln in code.splitlines() if ln.strip()]
    pool = gold + names if gold else names
    parts: list[str] = []
    for _ in range(rng.randint(1, 14)):
        kind = rng.random()
        tok = rng.choice(pool)
        if kind < 0.25:
            parts.append(rng.choice(["`" + tok + "`", tok, "**" + tok + "**", f"'{tok}'"]))
        elif kind < 0.45:
            parts.append(tok + rng.choice([".", ".", ",", ":", ";", ".)", ".'", '."', "?"]))
        elif kind < 0.55:
            parts.append(rng.choice(STARTERS) + " " + rng.choice(WORDS))
        elif kind < 0.65:
            parts.append(rng.choice(ABBREVS))
        elif kind < 0.75:
            parts.append(rng.choice(PUNCT))
        elif kind < 0.8:
            parts.append("\n" + rng.choice(["- ", "* ", "1. ", "2) ", "## ", "> "]) + tok)
        elif kind < 0.85:
            parts.append(_snippet(rng, lines))
        elif kind < 0.9:
            parts.append(rng.choice([str(rng.randint(0, 4096)), f"{rng.randint(0, 99)}."]))
        elif kind < 0.95:
            parts.append(rng.choice("abcdefghijklmnopqrstuvwxyzABCDXYZ") + ".")
        else:
            parts.append(rng.choice(WORDS) + rng.choice(["", ".", "\n\n", "\n", "  "]))
    sep = rng.choice([" ", " ", "\n", ", ", "  "])
    return sep.join(parts)


def corpus(data: Path, samples: int, seed: int) -> Iterator[str]:
    rows: dict[int, list[dict[str, str]]] = {}
    for task in range(1, 6):
        with (data / f"task{task}_code.jsonl").open(encoding="utf-8") as f:
            rows[task] = [json.loads(line) for line in f if line.strip()]
        for row in rows[task]:
            yield row["answer"]
            yield row["code"]
            if task == 2:
                yield row["selection"] + row["code"]
    from secbench_tui.core.vuldetectbench.loader import load_vuldetectbench

    for method in (None, "cot", "few-shot"):
        for case in load_vuldetectbench(data, method=method):
            yield case.messages[1].content
    rng = random.Random(seed)
    task3 = rows[3]
    for _ in range(samples):
        row = rng.choice(task3)
        yield _reply(rng, row["answer"].split(), row["code"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO / ".." / "shared/vuldetectbench/test")
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--write-fixture", action="store_true")
    args = parser.parse_args()
    checked = differ = 0
    kept: list[dict[str, object]] = []
    rng = random.Random(args.seed)
    for text in corpus(args.data, args.samples, args.seed):
        expected = nltk_word_tokenize(text)
        got = word_tokenize(text)
        checked += 1
        if got != expected:
            differ += 1
            if differ <= 20:
                print(f"DIFF {text!r}\n  nltk: {expected}\n  ours: {got}")
        if len(text) < 600 and rng.random() < 0.004:
            kept.append({"text": text, "tokens": expected})
    print(f"nltk {nltk_version}: {checked} texts, {differ} differ")
    if args.write_fixture:
        out = REPO / "tests/fixtures/vdb/tokens.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        payload = {"nltk": nltk_version, "cases": kept}
        out.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {len(kept)} cases to {out}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
