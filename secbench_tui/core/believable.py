"""Which numbers a server reports about a reply (cost, tokens) are believed.

A server's `usage` block is untrusted input like the reply itself. One negative cost once
crashed the report and defeated `--max-cost` (the budget went down); a bogus count of tokens
skews every total. A number outside these bounds is recorded as unknown (NULL), with a note on
the case saying what was reported, and the same bounds apply to any value read back from a
database, since a file may have been written by another tool or edited by hand.

The bounds are far beyond any real request: no single chat completion costs more than $1,000
(the most expensive models charge well under $1 per thousand tokens of a long context), and
none uses more than 10^9 tokens (ten times the longest context window offered).
"""

from __future__ import annotations

import math

MAX_COST_PER_REQUEST = 1000.0  # US dollars
MAX_TOKENS = 10**9


def cost(value: object) -> float | None:
    """A believable cost in dollars (0 to MAX_COST_PER_REQUEST), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or not 0 <= value <= MAX_COST_PER_REQUEST:
        return None
    return float(value)


def tokens(value: object) -> int | None:
    """A believable token count (a whole number from 0 to MAX_TOKENS), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        return None
    return value


def doubt(name: str, value: object) -> str | None:
    """A note when the server reported `name` but not as a believable number; None if fine."""
    if value is None:
        return None
    check = cost if name == "cost" else tokens
    if check(value) is not None:
        return None
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return f"usage.{name} {shown} from the server is not believable; recorded as unknown"
