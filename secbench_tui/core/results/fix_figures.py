"""`--task fix`'s figures, as summary models: what verifying each fix found, counted
(`core.results.fixes.fix_summary` makes them; `summary.fix_lines` renders them).

A module of their own, beside the summary that carries them (`RunSummary.fixes`), so the
figures' code can name them without importing the renderer.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


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
