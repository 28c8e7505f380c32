"""The display boundary for text the program did not write.

Model replies, server messages, catalog entries, file names and suite contents are stored
exactly as they came. Where such text leaves the program (a terminal, a spreadsheet, a
message that names an endpoint) it passes through one of these functions first:

- `inert` shows C0 and C1 control characters (ESC, BEL, CSI ...), DEL and the Unicode
  direction overrides visibly as `\\x1b`-style escapes, so no escape sequence reaches a
  terminal and no text is reordered. Newline and tab are kept; `inert_line` escapes them
  too, for text that must stay on one line (a progress line, a table cell).
- `csv_cell` applies the OWASP rule for CSV injection: a cell that a spreadsheet would read
  as a formula gets a leading `'`.
- `redact_url` hides credentials in an endpoint URL (user info, query values); requests still
  use the real URL, everything that is stored or shown uses the redacted one.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# C0 controls except tab and newline, DEL, C1 controls, and the bidirectional formatting
# characters that can make displayed text read differently from what it is.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE_RE = re.compile(f"[{_UNSAFE}]")
_UNSAFE_LINE_RE = re.compile(f"[{_UNSAFE}\t\n]")
_REDACTED = "***"


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\n":
        return "\\n"
    if char == "\t":
        return "\\t"
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def inert(text: object) -> str:
    """`text` as a string that is safe to write to a terminal; newlines and tabs kept."""
    if text is None:
        return ""
    value = text if isinstance(text, str) else str(text)
    return _UNSAFE_RE.sub(_visible, value)


def inert_line(text: object) -> str:
    """Like `inert`, and newlines and tabs are shown as `\\n` and `\\t`: one line."""
    if text is None:
        return ""
    value = text if isinstance(text, str) else str(text)
    return _UNSAFE_LINE_RE.sub(_visible, value)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER_RE = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
# Characters a spreadsheet may skip before it reads a formula: every Unicode space (no-break
# space included) and the invisible ones that are not spaces to Python.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u180e"
_MINUS_SIGNS = "\u2212\u2012\u2013"  # read as "-" by some spreadsheets


def csv_cell(value: object) -> object:
    """A CSV cell a spreadsheet will not run: text whose first character other than a space
    would start a formula (= + - @, full-width and small forms such as `＝` included, or a
    leading tab or CR) gets a leading `'`.

    Numbers (and text that is a plain number, such as `-0.5`) are left as they are.
    """
    if not isinstance(value, str):
        return value
    if value.startswith(("\t", "\r")):
        return "'" + value
    rest = value.lstrip()
    while rest and (rest[0] in _INVISIBLE or rest[0].isspace()):
        rest = rest[1:].lstrip()
    if not rest:
        return value
    first = unicodedata.normalize("NFKC", rest[0])[:1]
    if first not in _FORMULA_START and rest[0] not in _MINUS_SIGNS:
        return value
    if _NUMBER_RE.fullmatch(unicodedata.normalize("NFKC", rest)):
        return value
    return "'" + value


def redact_url(url: str | None) -> str:
    """`url` without secrets: user info becomes `***@`, every query value `***`."""
    if not url:
        return url or ""
    try:
        parts = urlsplit(url)
    except ValueError:  # unreadable: shown only when it has no place a secret could be in
        return _REDACTED if any(c in url for c in "@?#") else url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = _REDACTED + "@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(name, _REDACTED) for name, _ in pairs], safe="*")
    fragment = _REDACTED if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))
