"""The report's bar charts: accuracy per run with its interval, and accuracy per app."""

from __future__ import annotations

from collections.abc import Sequence

from secbench_tui.core import numbers
from secbench_tui.core.results.report.data import LABEL_CHARS, Bar, Chart, Contender


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "\u2026"


def accuracy_chart(contenders: Sequence[Contender]) -> Chart | None:
    if not contenders:
        return None
    left, plot, step, top = 300, 420, 24, 24
    bars = []
    for i, c in enumerate(contenders):
        acc = c.stats["accuracy"] or 0.0
        low, high = c.stats["accuracy_ci"] or (0.0, 0.0)
        interval = (
            f"  ({numbers.pct(low, 0)}\u2013{numbers.pct(high, 0)})" if c.stats["cases"] else ""
        )
        bars.append(
            Bar(
                y=top + i * step,
                width=plot * acc,
                css=c.colour,
                label=_short(c.label),
                value=numbers.pct(c.stats["accuracy"]) + interval,
                low=left + plot * low,
                high=left + plot * high,
            )
        )
    marks = []
    suites = {c.run.suite_path for c in contenders}
    references = [a for c in contenders if c.baseline and (a := c.stats["accuracy"]) is not None]
    if references and len(suites) == 1:
        best = max(references)
        marks.append((left + plot * best, f"best reference {numbers.pct(best)}"))
    return Chart(
        width=left + plot + 150,
        height=top + 20 + len(bars) * step,
        left=left,
        plot=plot,
        bars=bars,
        marks=marks,
    )


def app_chart(contenders: Sequence[Contender], apps: Sequence[str]) -> Chart | None:
    if not contenders or not apps:
        return None
    left, plot, step, gap = 300, 420, 14, 22
    bars: list[Bar] = []
    groups: list[tuple[float, str]] = []
    y = 10.0
    for app in apps:
        groups.append((y + 11, _short(app)))
        y += gap
        for c in contenders:
            stats = c.apps.get(app)
            if stats is None:
                continue
            acc = stats["accuracy"]
            bars.append(
                Bar(
                    y=y,
                    width=plot * (acc or 0.0),
                    css=c.colour,
                    label=_short(c.label),
                    value=numbers.pct(acc),
                )
            )
            y += step
        y += 6
    return Chart(
        width=left + plot + 70, height=int(y) + 24, left=left, plot=plot, bars=bars, groups=groups
    )
