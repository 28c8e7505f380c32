"""The summary's lines of proven findings (`--prove-findings`): the proven-finding rate
first, then exploit precision, P-C proven and the chance level, the refutations by reason,
and the apps. The one renderer of these figures: a run's summary (`summary.summary_lines`)
and `--rescore --prove-findings` both print them from here.
"""

from __future__ import annotations

from secbench_tui.core import numbers
from secbench_tui.core.results.findings import FindingSummary
from secbench_tui.core.results.lines import Line, Segment, ci_text, text_line
from secbench_tui.core.untrusted import inert_line

# What filling an exploit's parameters at random from the scenario's own values proves: the
# chance level of the proven-finding rate, measured on the bundled suite
# (`baseline/random-exploit`, seed 0: scripts/bench_findings.py, docs/exploits.md). Another
# suite's is measured by running that baseline on it.
RANDOM_EXPLOIT = "baseline/random-exploit"
RANDOM_EXPLOIT_BUNDLED = 0.020


def findings_lines(f: FindingSummary | None) -> list[Line]:
    """`--prove-findings`: the proven-finding rate first, then precision, P-C proven and the
    refutations by reason."""
    if f is None:
        return []
    lines = [
        text_line(
            Segment("  proven findings ", "heading"),
            Segment(
                f"{numbers.pct(f.proven_rate)}{ci_text(f.proven_rate_ci)} of {f.bad_cases} bad"
                f" cases ({f.proven} proven)",
                "heading",
            ),
            f"  exploit precision {numbers.pct(f.exploit_precision)} of {f.offered} offered"
            f"  P-C proven {numbers.pct(f.p_c_proven)}{ci_text(f.p_c_proven_ci)}"
            f" of {f.pairs} pairs",
            Segment(
                f"  (chance: {RANDOM_EXPLOIT}, {numbers.pct(RANDOM_EXPLOIT_BUNDLED)} on the"
                " bundled suite)",
                "dim",
            ),
        )
    ]
    if f.refutations or f.false_exploits or f.unproven_results:
        reasons = ", ".join(f"{inert_line(k)} {v}" for k, v in f.refutations.items())
        lines.append(
            text_line(
                f"    refuted: {reasons or 'none'}"
                + (
                    f"; false exploits (on good cases) {f.false_exploits}"
                    if f.false_exploits
                    else ""
                )
                + (f"; {f.unproven_results} results not proven" if f.unproven_results else "")
            )
        )
    if len(f.apps) > 1:
        lines.append(
            text_line(
                "    by app: "
                + "  ".join(
                    f"{inert_line(app)} {v['proven']}/{v['bad_cases']}" for app, v in f.apps.items()
                )
            )
        )
    return lines
