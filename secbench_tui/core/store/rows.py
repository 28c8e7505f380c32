"""What the store hands back for a result: one `evaluations` row, typed.

The report, the exports, the metrics and the app's tables all read these rows; the type names
every column once, so a column read under the wrong name is a type error, not a silent `None`.
A read selects the columns it needs (a page of the results table needs no reply text), so
every key is optional. Values are the believable ones (`stored_values.evaluation_row`): a
number a server sent that cannot be true reads as None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Required, TypedDict, cast


class VariantIdentity(TypedDict, total=False):
    """A rewritten case's identity (`--rewrites`) as read back (`stored_values.variant`): its
    original case and relation are checked to be text; seed, code hash and whether the
    equivalence gate proved it are as the file holds them."""

    original: Required[str]
    relation: Required[str]
    seed: object
    code_hash: object
    proven: object


class ResultRow(TypedDict, total=False):
    id: int
    timestamp: str
    test_file: str
    model_name: str
    expected_result: str
    actual_result: str | None
    explanation: str | None
    run_id: int
    suite_kind: str
    app: str
    case_id: str
    case_index: int
    repeat: int
    outcome: str
    raw_reply: str | None
    error: str | None
    http_status: int | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: float | None
    latency_ms: float | None
    attempts: int
    served_model: str | None
    provider: str | None
    scores: str  # a JSON object of finite numbers, as the engine writes it
    case_hash: str | None
    request_hash: str | None
    reused_from: int | None
    reasoning: str | None
    reasoning_tokens: int | None
    notes: str | None
    gold: str | None  # a bad case's right rules and gold lines, JSON (None: names no rule)
    reasons: str | None  # the reply's violations, scored (`models.ReasonScore` as JSON)
    scoring_version: int | None  # the scoring that wrote outcome and reasons (None: before 2)
    # --rewrites: a variant's original case, relation, seed, code hash and proof; None for
    # an original case
    variant: VariantIdentity | None
    # the request's messages as [[role, [part hash, ...]], ...] (`core.store.requests`);
    # None: recorded before they were kept (schema 9)
    messages: str | None
    prompt_name: str | None  # the run's, where a reader adds it (the report: exports carry it)
    prompt_hash: str | None  # the run's prompt's words, where a reader adds it, as prompt_name
    code: str | None  # joined from case_texts
    description: str | None
    # --task fix, joined from `fixes` (`core.store.fixes`): the fixed code the reply gave, and
    # what verifying it found; None: no fix verified (yet) for this result
    fixed_code: str | None
    fix_outcome: str | None
    fix_reason: str | None
    fix_secure: bool | None
    fix_functional: bool | None
    fix_twin: str | None
    fix_change_lines: int | None
    fix_detail: str | None  # JSON: the failing parameter set, its rows and the twin's
    # --prove-findings, joined from `findings` where a read shows it: the exploits the reply
    # offered (JSON, as sent), how proving them ended (proven, refuted, false exploit, no
    # exploit; None: never proven), the first refutation's reason, each exploit's proof (JSON)
    exploit: str | None
    exploit_outcome: str | None
    exploit_reason: str | None
    exploit_proof: str | None


def originals_only(rows: Sequence[ResultRow]) -> list[ResultRow]:
    """The rows of original cases: a run's accuracy never blends in its variants
    (`--rewrites`), which have figures of their own (`results.robustness`)."""
    return [r for r in rows if not isinstance(r.get("variant"), dict)]


def column(row: ResultRow, name: str) -> Any:
    """A column chosen at run time (a table's sort key); None when the read did not select it."""
    return cast(Mapping[str, Any], row).get(name)
