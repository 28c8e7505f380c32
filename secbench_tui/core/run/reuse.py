"""Answers already paid for: a run asks no question whose answer is on record.

An answer is found by its request's hash (the same model, endpoint, settings and messages,
`RunSpec.request_hash`), under the keys of today or those written when the prompt's name was
part of them (`legacy_names`); in a database the original security-bench wrote, by the body
it sent (`adopted_answers`). A reused answer is graded again, as every answer is, and
recorded in the run that reused it, naming the row it came from. `--force` reuses nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from secbench_tui.core.models import Case, ChatRequest, Completion, Evaluation
from secbench_tui.core.results.grading import score_completion
from secbench_tui.core.run.providers.base import SendsBodies
from secbench_tui.core.run.record import PromptNames, legacy_names
from secbench_tui.core.run.scheduling import Work
from secbench_tui.core.run.spec import RunSpec
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.values import now_iso
from secbench_tui.core.suites import security_bench


class AnswerBook(PromptNames, Protocol):
    """What finding the answers on record needs of the store."""

    async def reusable(self, request_hashes: Sequence[str]) -> dict[tuple[str, int], ResultRow]: ...

    @property
    def adopted_requests(self) -> bool: ...

    async def adopted_answers(
        self, model: str, bodies: dict[str, ChatRequest]
    ) -> dict[tuple[str, int], ResultRow]: ...


def request_body(spec: RunSpec, provider: object, case: Case) -> ChatRequest | None:
    """The body that would be sent for `case`: the provider's own, or (where no provider is
    built, as in a dry run) the original evaluator's, which needs none; None when unknown."""
    if isinstance(provider, SendsBodies):
        return provider.payload(case)
    if spec.settings.request_style == security_bench.STYLE and case.messages:
        return security_bench.request_body(spec.model, case.prompt_messages())
    return None


async def paid_answers(
    spec: RunSpec, store: AnswerBook, work: Sequence[Any]
) -> dict[tuple[str, int], ResultRow]:
    """The latest stored answer to each request of `work` (items with `case` and
    `request_hash`), by (request hash, repeat): keyed on its content, or on a name its
    prompt's text was recorded under before (`legacy_names`)."""
    keys = {item.request_hash: item.request_hash for item in work}
    for name in await legacy_names(spec, store):
        for item in {id(item.case): item for item in work}.values():
            keys.setdefault(spec.request_hash(item.case, name), item.request_hash)
    paid: dict[tuple[str, int], ResultRow] = {}
    for (key, repeat), row in (await store.reusable(list(keys))).items():
        found = (keys[key], repeat)
        if found not in paid or row["id"] > paid[found]["id"]:
            paid[found] = row
    return paid


async def adopted_answers(
    spec: RunSpec, provider: object, store: AnswerBook, work: Sequence[Any]
) -> dict[tuple[str, int], ResultRow]:
    """Answers the original evaluator recorded (in a database it wrote, adopted) for exactly
    the requests `work` would send, by (case id, repeat)."""
    if not work or not store.adopted_requests:
        return {}
    bodies: dict[str, ChatRequest] = {}
    for item in work:
        body = request_body(spec, provider, item.case)
        if body is not None:
            bodies[item.case.case_id] = body
    return await store.adopted_answers(spec.model, bodies)


@dataclass(frozen=True)
class OnRecord:
    """The answers on record for a run's cases: `paid`, by (request hash, repeat), and those
    the original evaluator recorded, `adopted`, by (case id, repeat)."""

    paid: dict[tuple[str, int], ResultRow] = field(default_factory=dict)
    adopted: dict[tuple[str, int], ResultRow] = field(default_factory=dict)

    def answer(self, work: Work) -> ResultRow | None:
        row = self.paid.get((work.request_hash, work.repeat))
        return row if row is not None else self.adopted.get((work.case.case_id, work.repeat))

    def imported_runs(self) -> list[int]:
        """The runs imported from the original's rows whose answers are reused."""
        return sorted({int(row["run_id"]) for row in self.adopted.values()})


async def on_record(
    spec: RunSpec, provider: object, store: AnswerBook, work: Sequence[Work]
) -> OnRecord:
    """Every answer on record to the requests of `work` (none with `--force`)."""
    if spec.force:
        return OnRecord()
    paid = await paid_answers(spec, store, work)
    unpaid = [w for w in work if (w.request_hash, w.repeat) not in paid]
    return OnRecord(paid, await adopted_answers(spec, provider, store, unpaid))


def reused_evaluation(run_id: int, work: Work, row: ResultRow, vdb_scoring: str) -> Evaluation:
    """A stored answer as this run's evaluation of `work`, graded again."""
    completion = Completion(
        text=row["raw_reply"],
        status=row["http_status"],
        finish_reason=row["finish_reason"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        cost=row["cost"],
        served_model=row["served_model"],
        provider=row["provider"],
        latency_ms=row["latency_ms"] or 0.0,
        attempts=row["attempts"],
        reasoning=row.get("reasoning"),
        reasoning_tokens=row.get("reasoning_tokens"),
        notes=row.get("notes"),
        # errors are never reused: a reason kept on another outcome is an unreadable reply's
        unreadable=row.get("error"),
    )
    return Evaluation(
        run_id=run_id,
        case=work.case,
        repeat=work.repeat,
        index=work.index,
        completion=completion,
        scored=score_completion(work.case, completion, vdb_scoring),
        timestamp=now_iso(),
        reused=True,
    )
