"""Typed results of verifying fixes (`--task fix`): one `FixVerdict` per fix.

A fix is verified as if it were a good case of its bad case's scenario (docs/fixes.md):
**secure** when the property returns no row on any parameter set, **functional** when on
every parameter set it gives what a compliant twin gives (rows, refusal, status, the tables
afterwards), **proven** when it is both. It imports nothing of the database's, so the figures
(`core.results.fixes`) can name the outcomes without the verify extra.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum

from secbench_tui.core.verify.execution import Parameters, ResultSetRow, json_value

# Raise it whenever a change to verifying would judge a stored fix differently: `--rescore`
# verifies the fixes of stored replies again.
FIXING_VERSION = 1


class FixOutcome(StrEnum):
    PROVEN = "proven"  # secure and functional
    SECURE_BROKEN = "secure but broken"  # breaks no rule, but does not do the job
    FUNCTIONAL_INSECURE = "functional but insecure"  # does the job, but breaks a rule
    INSECURE = "insecure and broken"  # neither
    REFUSED = "refused"  # the sandbox would not run it (transaction control, a privilege)
    NOT_RUN = "does not run"  # an error on a parameter set (or the deadline)
    UNPARSED = "did not parse"  # no fixed code in the reply, or code its parser rejects
    NO_ANSWER = "no answer"  # the case got no reply at all (an error of the endpoint)
    NOT_VERIFIABLE = "not verifiable"  # no verification data, or no compliant twin

    @property
    def judged(self) -> bool:
        """Whether the model's fix was judged (not the suite's or the tool's lack)."""
        return self is not FixOutcome.NOT_VERIFIABLE


@dataclass(frozen=True)
class Failing:
    """The parameter set that shows why a fix is not proven: the property's rows (insecure),
    or what differs from the twin, with the fix's rows and the twin's (broken)."""

    params_index: int  # 0-based
    params: Parameters
    why: str
    violations: tuple[ResultSetRow, ...] = ()  # the property's rows on this set
    rows: tuple[ResultSetRow, ...] = ()  # what the fix returned
    twin_rows: tuple[ResultSetRow, ...] = ()  # what the twin returned

    def to_json(self) -> dict[str, object]:
        return {
            "set": self.params_index + 1,
            "params": json_value(self.params),
            "why": self.why,
            "violations": json_value(list(self.violations)),
            "rows": json_value(list(self.rows)),
            "twin_rows": json_value(list(self.twin_rows)),
        }


@dataclass(frozen=True)
class FixVerdict:
    """What verifying one fix found."""

    outcome: FixOutcome
    reason: str = ""  # why it is not proven (empty when it is)
    secure: bool | None = None  # None: not known (it did not run)
    functional: bool | None = None
    twin: str | None = None  # case id of the nearest compliant twin
    change_lines: int | None = None  # lines it changes in the bad case
    insecure: Failing | None = None  # a parameter set on which the property returns rows
    broken: Failing | None = None  # a parameter set on which it differs from every twin
    notes: tuple[str, ...] = field(default=())  # parameter sets left out, and why

    def detail_json(self) -> str:
        """What the `fixes` table keeps beside the outcome (`detail`)."""
        data: dict[str, object] = {}
        if self.insecure is not None:
            data["insecure"] = self.insecure.to_json()
        if self.broken is not None:
            data["broken"] = self.broken.to_json()
        if self.notes:
            data["notes"] = list(self.notes)
        return json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
