"""`--batch` planned: what cannot go through a batch API is said before anything is sent.

A batch is paid for as a whole once sent, so `--max-cost` (which stops a run as the costs come
in) cannot guard it: `--dry-run` prices it first. Anthropic's Message Batches take Messages API
requests, which have no `response_format` of the OpenAI kind and no OpenAI-style reasoning
setting (`core.run.batch.anthropic`): structured outputs and `--reasoning-effort` are refused
there, naming the model and what to do instead. The offline baselines have no batch API: they
answer offline, as in any run; a run of baselines alone with `--batch` is a mistake. Workers
sharing a run (`--worker`) claim its cases from a queue and ask them live: `--batch` with them
is refused rather than ignored.
"""

from __future__ import annotations

from collections.abc import Sequence

from secbench_tui.config import Options, Settings
from secbench_tui.core.run.catalog import Catalog, ModelInfo
from secbench_tui.core.run.estimate import BATCH_DISCOUNT
from secbench_tui.core.run.providers.baselines import is_baseline
from secbench_tui.core.run.spec import RunSpec
from secbench_tui.errors import UsageError


def _given(settings: Settings, name: str) -> bool:
    return bool(getattr(settings, name) != Options.model_fields[name].default)


def check_batch(settings: Settings) -> None:
    """Refuse `--batch` (and its companions) where it cannot work; say why and what to do."""
    if not settings.batch:
        for flag, name in (("--batch-api", "batch_api"), ("--batch-poll", "batch_poll")):
            if _given(settings, name):
                raise UsageError(f"{flag} applies to runs with --batch; add --batch or drop {flag}")
        return
    remote = [m for m in settings.models if not is_baseline(m)]
    if settings.models and not remote:
        raise UsageError(
            "--batch: the baselines answer offline and have no batch API; drop --batch"
        )
    if settings.worker:
        raise UsageError(
            "--batch cannot go with --worker: workers claim a shared run's cases from its queue "
            "a few at a time and ask them live, while a batch is sent whole by one process; "
            "drop --worker (one process sends the run's batch), or drop --batch"
        )
    if settings.max_cost is not None:
        raise UsageError(
            "--max-cost cannot guard --batch: a batch is paid for as a whole once sent; "
            "see its price first with --dry-run, and drop --max-cost"
        )
    if settings.batch_protocol == "anthropic":
        _check_anthropic(settings, remote)


def _check_anthropic(settings: Settings, models: list[str]) -> None:
    names = ", ".join(models)
    if settings.original_request or settings.response_format == "json_schema":
        why = (
            "--request-style security-bench sends structured outputs (a json_schema "
            "response_format)"
            if settings.original_request
            else "--response-format json_schema asks for structured outputs"
        )
        raise UsageError(
            f"--batch: Anthropic's Message Batches do not take OpenAI-style structured "
            f"outputs, and {why}; for {names} use --response-format json_object (the prompt "
            "asks for JSON; the reply is read the same way), or run it live, without --batch"
        )
    if settings.reasoning_effort is not None:
        raise UsageError(
            f"--batch: Anthropic's Message Batches do not take --reasoning-effort (sent as "
            f"OpenRouter's reasoning.effort); for {names} drop --reasoning-effort, or run it "
            "live, without --batch"
        )


def _prices(info: ModelInfo | None) -> tuple[float, float] | None:
    if info is None or info.prompt_price is None or info.completion_price is None:
        return None
    return info.prompt_price, info.completion_price


def price_batches(specs: Sequence[RunSpec], catalog: Catalog) -> None:
    """Give each batched run its model's live and batch prices, for its summary: the batch
    variant's (`<model>:batch`) where the catalog lists one, else the live at the documented
    discount."""
    for spec in specs:
        if not spec.batch:
            continue
        live = _prices(catalog.find(spec.model))
        spec.live_price = live
        spec.batch_price = _prices(catalog.find(f"{spec.model}:batch")) or (
            None if live is None else (live[0] * BATCH_DISCOUNT, live[1] * BATCH_DISCOUNT)
        )
