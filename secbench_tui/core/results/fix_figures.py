"""`--task fix`'s figures, as summary models: what verifying each fix found, counted
(`core.results.fixes.fix_summary` makes them), and their words (`fix_words`), which the one
renderer (`summary.fix_lines`) styles by their tags.

A module of their own, beside the summary that carries them (`RunSummary.fixes`), so the
figures' code can name them without importing the renderer.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from secbench_tui.core import numbers
from secbench_tui.core.untrusted import inert_line

# The floor and the ceiling of the proven-fix rate: the code returned unchanged, and the
# nearest compliant twin returned as the fix (`core.run.providers.baselines`).
FIX_FLOOR, FIX_CEILING = "baseline/echo", "baseline/twin"


class FixTally(BaseModel):
    """`--task fix`, over bad cases (their first answers): what verifying each fix found.
    Rates are fractions of `judged` (bad cases whose scenario can verify a fix), and count a
    case with no answer as not fixed."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when first used

    bad_cases: int = 0
    judged: int = 0
    proven: int = 0
    secure_broken: int = 0
    functional_insecure: int = 0
    insecure: int = 0  # neither secure nor functional
    refused: int = 0  # the sandbox would not run the fix
    not_run: int = 0  # the fix fails with an error on a parameter set
    did_not_parse: int = 0  # no fixed code, or code its parser rejects
    no_answer: int = 0
    not_verifiable: int = 0  # no verification data or no compliant twin (not in `judged`)
    unverified: int = 0  # answered, but not verified yet (`--rescore` verifies it)
    proven_rate: float | None = None
    proven_rate_ci: tuple[float, float] | None = None  # Wilson, over cases
    secure_broken_rate: float | None = None
    functional_insecure_rate: float | None = None
    did_not_parse_rate: float | None = None


class FixSummary(FixTally):
    """`--task fix`: the run's fix figures, with the median change size, per app and rule."""

    median_change_lines: float | None = None  # lines a fix changes in the bad case
    median_change_lines_proven: float | None = None  # the same, over proven fixes
    apps: dict[str, FixTally] = {}
    rules: dict[str, FixTally] = {}  # by the bad case's rule


Words = list[list[tuple[str, str]]]  # lines of (text, tag): heading, dim, warning or none


def _interval(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f" (95% CI {numbers.pct(ci[0])}-{numbers.pct(ci[1])})"


def _lines_of(value: float | None) -> str:
    return numbers.EMPTY if value is None else f"{value:g} lines"


def fix_words(f: FixSummary | None) -> Words:
    """The proven-fix rate first, then how the others failed, the change size, per app and
    per rule; untrusted names made inert."""
    if f is None:
        return []
    lead = (
        f"  fixes: proven {numbers.pct(f.proven_rate)}{_interval(f.proven_rate_ci)}"
        f" of {f.judged} bad cases ({f.proven} proven)"
    )
    words: Words = [
        [(lead, "heading"), (f"  (floor: {FIX_FLOOR} 0%, ceiling: {FIX_CEILING} 100%)", "dim")],
        [
            (
                f"    secure but broken {f.secure_broken} ({numbers.pct(f.secure_broken_rate)})"
                f"  functional but insecure {f.functional_insecure}"
                f" ({numbers.pct(f.functional_insecure_rate)})  insecure and broken {f.insecure}"
                f"  refused {f.refused}  does not run {f.not_run}"
                f"  did not parse {f.did_not_parse} ({numbers.pct(f.did_not_parse_rate)})"
                + (f"  no answer {f.no_answer}" if f.no_answer else ""),
                "",
            )
        ],
        [
            (
                f"    median change {_lines_of(f.median_change_lines)}"
                f" (proven fixes {_lines_of(f.median_change_lines_proven)})"
                + (f"  not verifiable {f.not_verifiable}" if f.not_verifiable else ""),
                "",
            )
        ],
    ]
    if f.unverified:
        waiting = f"    {f.unverified} fixes not verified yet: --rescore verifies them"
        words.append([(waiting, "warning")])
    for title, tallies, prefix in (("by app", f.apps, ""), ("by rule", f.rules, "rule ")):
        if len(tallies) > 1:
            shown = "  ".join(
                f"{prefix}{inert_line(key)} {t.proven}/{t.judged}" for key, t in tallies.items()
            )
            words.append([(f"    {title}: {shown}", "")])
    return words
