"""The replies of the fix task, as pydantic models, and the JSON schemas of them that a
request's `response_format` carries (docs/fixes.md).

Verdict schema 4 (`--task fix`, the bundled prompt `fix`): verdict schema 2 (explanation,
assessment, violations) with the corrected code after it, `fixed_code`, so that one reply is
both a verdict, scored as any other, and a fix, verified on PostgreSQL as if it were a good
case of the scenario. Schema 3 is the exploit verdict (`--prove-findings`); the numbers are one
sequence, so a stored reply names the schema it was asked for without ambiguity.

`CaseProposal` is what `secbench-tui fix` asks a model for when it repairs a suite's case: the
case's new code and why. It is no verdict (the label is the suite author's), so it is a model
of its own.

Both schemas are generated as the verdict's is (`verdict.StructuredOutputSchema`: strict mode,
every property required, every object closed), never written by hand. What a reply holds is
read by `core.results.fixes.fixed_code_of`, which reads more than these models allow (keys in
any case, prose around the JSON) and never guesses.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from secbench_tui.core.models import JSONObject
from secbench_tui.core.suites.verdict import ReplyViolation, StructuredOutputSchema

FIX_SCHEMA_VERSION = 4
FIXED_CODE = "fixed_code"  # the key of the corrected code in a fix reply
PROPOSED_CODE = "code"  # the key of a case's new code in a case proposal


class FixReply(BaseModel):
    """What `--task fix` asks: why, the verdict and the violations (as verdict schema 2), then
    the whole corrected code."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when first used

    explanation: str
    assessment: Literal["good", "bad"]
    violations: list[ReplyViolation]
    fixed_code: str


class CaseProposal(BaseModel):
    """What `secbench-tui fix` asks for one case of a suite: why, then its new code."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    explanation: str
    code: str


@cache
def fix_schema() -> JSONObject:
    """The JSON schema of `FixReply`, as `response_format` sends it (made once)."""
    return FixReply.model_json_schema(schema_generator=StructuredOutputSchema)


@cache
def proposal_schema() -> JSONObject:
    """The JSON schema of `CaseProposal`, as `response_format` sends it (made once)."""
    return CaseProposal.model_json_schema(schema_generator=StructuredOutputSchema)
