"""The comments a reader of a case's code sees, and the code without them.

The lint looks for label words in comments, trains a classifier on their words, and finds
duplicate cases by their code with the comments taken out; all three read the comments
found here. Each language's comment syntax is read by one small scanner that skips string
literals (so a `--` inside a string is no comment) and reads SQL comments inside SQL-looking
strings of other languages, since a model reads those all the same.

Why not the languages' own tokenizers: a case's code is often a fragment, and the lint must
read all of it and say on which line each comment is. sqlglot's tokenizer keeps a comment
only as text attached to a neighbouring token (no position, `--` or `/* */` stripped), drops
the comments of a text that has no other token, and raises on an unterminated string; no
dialect reads `#` as this lint does (PostgreSQL: an operator, so a `# it's` line raises;
MySQL: a comment anywhere). Python's `tokenize` stops at the first error (a dedent that
matches no outer level, an unterminated triple-quoted string) and loses every comment after
it, and it reads the same text differently from Python 3.12 (an unclosed one-line string
raises; f-strings come in parts). C-like code and shell have no tokenizer in our stack.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

WORD = re.compile(r"[a-z][a-z0-9]*(?:['_-][a-z0-9]+)*")
_SQLISH = re.compile(r"\b(select|insert|update|delete|with)\b", re.IGNORECASE)
# `[^\S\n]*`, not `\s*`: a `\s*` run across thousands of blank lines, retried from each of
# them, made this search quadratic.
_PYTHON_LINE = re.compile(r"^[^\S\n]*(def|class|import|from)\s", re.MULTILINE)
# The characters a comment or a string can start with, per language: the rest is skipped.
_MAY_START = {
    "sql": re.compile(r"[-/#'\"$]"),
    "python": re.compile(r"[#'\"]"),
    "shell": re.compile(r"[#'\"`]"),
    "c": re.compile(r"[/'\"`]"),
}
_DOLLAR_TAG = re.compile(r"\$[A-Za-z_]*\$")
_LINE_INDENT = re.compile(r"^[^\S\n]*", re.MULTILINE)


@dataclass(frozen=True)
class Comment:
    start: int
    end: int
    line: int
    text: str


def code_language(fence_info: str, code: str) -> str:
    """One of sql, python, shell, c: the comment syntax to read the code with."""
    tag = fence_info.lower()
    if tag in ("sql", "psql", "postgres", "postgresql", "pgsql", "plpgsql", "mysql", "sqlite"):
        return "sql"
    if tag in ("python", "py", "python3"):
        return "python"
    if tag in ("sh", "bash", "shell", "zsh", "console"):
        return "shell"
    if tag:
        return "c"
    if _PYTHON_LINE.search(code):
        return "python"
    if _SQLISH.search(code) and not re.search(r"[{};]\s*$", code.partition("\n")[0]):
        return "sql"
    return "c"


class _Lines:
    """Line numbers and indentation of one text, computed once: every lookup is O(log n).

    Counting newlines from the start for each comment made a large case quadratic.
    """

    def __init__(self, code: str) -> None:
        # where each line's first non-blank character (or its end) is, in line order
        self.first_text = [m.end() for m in _LINE_INDENT.finditer(code)]
        self.starts = [m.start() for m in _LINE_INDENT.finditer(code)]

    def line_of(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)

    def opens_line(self, pos: int) -> bool:
        """Only blanks stand between the start of pos's line and pos."""
        return self.first_text[self.line_of(pos) - 1] == pos


def _string_end(code: str, i: int, quote: str, escapes: bool, doubled: bool) -> int:
    """Index just past the string whose opening `quote` starts at i (or len(code))."""
    j = i + len(quote)
    n = len(code)
    while j < n:
        if escapes and code[j] == "\\":
            j += 2
            continue
        if code.startswith(quote, j):
            if doubled and code.startswith(quote * 2, j):
                j += 2 * len(quote)
                continue
            return j + len(quote)
        if len(quote) == 1 and quote in "'\"" and code[j] == "\n" and escapes:
            return j  # an unterminated one-line string ends at the line's end
        j += 1
    return n


def _is_docstring(code: str, i: int, lines: _Lines) -> bool:
    """A Python triple-quoted string that opens a line right after a `...:` line."""
    if not lines.opens_line(i):
        return False
    j = i - 1  # back over blanks only: stops at the end of what came before, so linear
    while j >= 0 and code[j].isspace():
        j -= 1
    return j < 0 or code[j] == ":"


def find_comments(code: str, language: str) -> list[Comment]:
    """The comments a reader of `code` sees, in order; strings are skipped, not misread.

    SQL: `--`, `/* */` and MySQL's `#` at the start of a line (a `#` elsewhere is an operator).
    Python: `#` and docstrings. Shell: `#` at the start of a word. Others: `//` and `/* */`.
    SQL comments inside SQL-looking string literals of other languages count too: the model
    reads them all the same.
    """
    return _find_comments(code, language, _Lines(code), 0)


def _find_comments(code: str, language: str, lines: _Lines, offset: int) -> list[Comment]:
    """The comments of `code`, which starts at `offset` of the text `lines` describes."""
    comments: list[Comment] = []
    first_line = lines.line_of(offset)
    head = _LINE_INDENT.match(code)
    text_starts = head.end() if head else 0  # where text begins on `code`'s own first line

    def opens_line(i: int) -> bool:  # `code` may start mid-line: inside a string literal
        if lines.line_of(offset + i) == first_line:
            return i == text_starts
        return lines.opens_line(offset + i)

    n = len(code)
    i = 0
    skip_to = _MAY_START.get(language, _MAY_START["c"])
    while i < n:
        found = skip_to.search(code, i)  # straight to the next comment or string, if any
        if found is None:
            break
        i = found.start()
        ch = code[i]
        two = code[i : i + 2]
        line_comment = (
            (language == "sql" and two == "--")
            or (language == "c" and two == "//")
            or (language == "python" and ch == "#")
            or (language == "shell" and ch == "#" and (i == 0 or code[i - 1].isspace()))
            or (language == "sql" and ch == "#" and opens_line(i))
        )
        if line_comment:
            end = code.find("\n", i)
            end = n if end < 0 else end
            comments.append(Comment(i, end, lines.line_of(offset + i), code[i:end]))
            i = end
            continue
        if two == "/*" and language in ("sql", "c"):
            end = code.find("*/", i + 2)
            end = n if end < 0 else end + 2
            comments.append(Comment(i, end, lines.line_of(offset + i), code[i:end]))
            i = end
            continue
        end = _skip_string(code, i, language, comments, lines, offset)
        i = end if end > i else i + 1
    return comments


def _skip_string(
    code: str, i: int, language: str, comments: list[Comment], lines: _Lines, offset: int
) -> int:
    """Past a string literal starting at i (recording comments it holds), or i if none."""
    ch = code[i]
    if language == "sql":
        if ch in "'\"":
            return _string_end(code, i, ch, escapes=False, doubled=True)
        dollar = _DOLLAR_TAG.match(code, i) if ch == "$" else None
        if dollar:
            tag = dollar.group(0)
            end = code.find(tag, i + len(tag))
            return len(code) if end < 0 else end + len(tag)
        return i
    if language == "python" and code.startswith(('"""', "'''"), i):
        quote = code[i : i + 3]
        end = _string_end(code, i, quote, escapes=True, doubled=False)
        if _is_docstring(code, i, lines):
            comments.append(Comment(i, end, lines.line_of(offset + i), code[i:end]))
        else:
            _embedded_sql(code, i + 3, end - 3, comments, lines, offset)
        return end
    if ch in "'\"" or (ch == "`" and language in ("c", "shell")):
        escapes = not (language == "shell" and ch == "'")
        end = _string_end(code, i, ch, escapes=escapes, doubled=False)
        _embedded_sql(code, i + 1, end - 1, comments, lines, offset)
        return end
    return i


def _embedded_sql(
    code: str, start: int, end: int, comments: list[Comment], lines: _Lines, offset: int
) -> None:
    body = code[start:end]
    if not _SQLISH.search(body):
        return
    for inner in _find_comments(body, "sql", lines, offset + start):
        s, e = start + inner.start, start + inner.end
        comments.append(Comment(s, e, inner.line, inner.text))


def comment_words(comments: Iterable[Comment]) -> list[str]:
    """Every word of the comments, lower-cased, in order: what the comment classifier reads."""
    return [w for c in comments for w in WORD.findall(c.text.lower())]


def strip_comments(code: str, comments: Sequence[Comment]) -> str:
    """`code` without its comments: two cases that differ only there are duplicates."""
    parts, pos = [], 0
    for c in sorted(comments, key=lambda c: c.start):
        if c.start >= pos:
            parts.append(code[pos : c.start])
            pos = c.end
    parts.append(code[pos:])
    return "".join(parts)


def normalise(code: str) -> str:
    """Runs of whitespace made one space: code compared and measured as a reader sees it."""
    return " ".join(code.split())
