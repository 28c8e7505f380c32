"""How numbers read, everywhere: the headless lines, the terminal app and the HTML report.

One set of formatters, so a figure reads the same in every front end, and one empty value
(`EMPTY`) for a figure that is not known. Plain strings; front ends style them.
"""

from __future__ import annotations

import math

EMPTY = "n/a"  # a figure that is not known (no cost reported, nothing graded yet)


def pct(value: float | None, digits: int = 1) -> str:
    """0.8125 -> `81.2%`."""
    return EMPTY if value is None else f"{value * 100:.{digits}f}%"


def money(value: float | None) -> str:
    """Dollars to three significant digits ($0.534, $0.000114), cents from $1 up."""
    if value is None or not math.isfinite(value):
        return EMPTY
    if value < 0:  # never stored by this program (see core/believable.py); shown if found
        return "-" + money(-value)
    if value == 0 or value >= 1:
        return f"${value:,.2f}" if value else "$0"
    digits = 2 - math.floor(math.log10(value))
    return f"${value:.{digits}f}"


def integer(value: int | None) -> str:
    """12345 -> `12,345`."""
    return EMPTY if value is None else f"{value:,}"


def tokens(value: int | None) -> str:
    """A token count, in every front end: exact, thousands separated (`637,777`), never cut
    short, so the tally while a run goes and its summary after read the same number."""
    return integer(value)


def compact(value: int | None) -> str:
    """612k, 1.81M: counts short enough for a table cell."""
    if value is None:
        return EMPTY
    for size, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if value >= size:
            scaled = value / size
            return f"{scaled:.3g}{unit}" if scaled < 100 else f"{scaled:.0f}{unit}"
    return str(value)


def count(value: int | None) -> str:
    """Exact up to 9,999 (`2,525`), then compact (`12.3k`, `1.81M`)."""
    if value is None:
        return EMPTY
    return integer(value) if value < 10_000 else compact(value)


def clock(seconds: float | None) -> str:
    """`1:02`, `1:02:03`: elapsed time and ETAs on a running display."""
    if seconds is None:
        return EMPTY
    whole = max(0, int(round(seconds)))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def duration(seconds: float | None) -> str:
    """`4.2 s`, `3 min 5 s`, `1 h 2 min`: a finished run's wall time in prose."""
    if seconds is None:
        return EMPTY
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    return f"{minutes // 60} h {minutes % 60} min"


def latency(ms: float | None) -> str:
    """One answer's latency, milliseconds -> `0.42s`."""
    return EMPTY if ms is None else f"{ms / 1000:.2f}s"


def latency_ms(value: float | None) -> str:
    """`420 ms`, `1.20 s`: latency percentiles in the report."""
    if value is None:
        return EMPTY
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"
