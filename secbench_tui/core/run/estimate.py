"""What a plan will ask and cost, before anything is asked (`--dry-run`, the app's setup screen).

Requests left are the cases x repeats of each run minus what would be reused (the same request
already answered, unless `--force`) and, with `--resume`, what the run to continue already has.
Tokens are estimated, not counted: input as the characters of the messages sent divided by 4
(a common rule of thumb for English text and code with GPT-style tokenizers); output as
`TYPICAL_REPLY_TOKENS` per request (a JSON verdict with a sentence or two of explanation),
never more than `--max-tokens`, with the ceiling at `--max-tokens` shown beside it. Prices come
from the catalog (`GET /models`: `pricing.prompt` and `pricing.completion`, per token); a model
without one is "price unknown" and left out of the total, which then says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from secbench_tui.core import numbers
from secbench_tui.core.models import Case
from secbench_tui.core.run.catalog import Catalog
from secbench_tui.core.run.context import CHARS_PER_TOKEN, input_tokens
from secbench_tui.core.run.providers.baselines import is_baseline
from secbench_tui.core.run.record import latest_run
from secbench_tui.core.run.reuse import adopted_answers, paid_answers
from secbench_tui.core.run.spec import RunSpec
from secbench_tui.core.store.database import Store
from secbench_tui.core.untrusted import inert_line

TYPICAL_REPLY_TOKENS = 200
BATCH_DISCOUNT = 0.5  # a batch's price, as a share of the live one, as the providers document


@dataclass(frozen=True)
class RunEstimate:
    model: str
    prompt: str
    cases: int
    requests: int  # cases x repeats
    left: int  # requests that would be sent
    input_tokens: int
    output_tokens: int
    cost: float | None  # None: price unknown
    cost_ceiling: float | None
    batch: BatchPrice | None = None  # --batch: what the same requests cost in a batch


@dataclass(frozen=True)
class BatchPrice:
    """What requests cost through a batch API, and where the price came from: the catalog's
    batch variant of the model (`catalog`), or the live price at BATCH_DISCOUNT
    (`discount`)."""

    cost: float | None
    ceiling: float | None
    source: str


@dataclass(frozen=True)
class ModelEstimate:
    model: str
    runs: int
    left: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    cost_ceiling: float | None
    batch: BatchPrice | None = None


@dataclass(frozen=True)
class Estimate:
    runs: list[RunEstimate]
    models: list[ModelEstimate]
    price_source: str  # where the prices came from: network, cache, none

    @property
    def left(self) -> int:
        return sum(r.left for r in self.runs)

    @property
    def input_tokens(self) -> int:
        return sum(r.input_tokens for r in self.runs)

    @property
    def output_tokens(self) -> int:
        return sum(r.output_tokens for r in self.runs)

    @property
    def cost(self) -> float:
        """The total of the models whose price is known."""
        return sum(m.cost or 0.0 for m in self.models)

    @property
    def cost_ceiling(self) -> float:
        return sum(m.cost_ceiling or 0.0 for m in self.models)

    @property
    def unpriced(self) -> list[str]:
        return [m.model for m in self.models if m.cost is None]

    @property
    def batched(self) -> list[ModelEstimate]:
        """The models asked through a batch API (`--batch`)."""
        return [m for m in self.models if m.batch is not None]


async def _left(spec: RunSpec, store: Store | None) -> list[tuple[int, int]]:
    """(case index, repeat) of the requests this run would send."""
    wanted = [(i, r) for i in range(len(spec.cases)) for r in range(spec.repeats)]
    if store is None:
        return [] if spec.resume else wanted
    done: set[tuple[str, int]] = set()
    if spec.resume or spec.retry_errors:
        run_id = await latest_run(spec, store, unfinished=not spec.retry_errors)
        if run_id is not None:
            done = await store.finished_keys(run_id, include_errors=not spec.retry_errors)
        elif spec.resume:  # nothing to resume: the run leaves this cell alone
            return []
    wanted = [(i, r) for i, r in wanted if (spec.cases[i].case_id, r) not in done]
    if spec.force:
        return wanted
    hashes = {i: spec.request_hash(spec.cases[i]) for i, _ in wanted}
    asked = [_Asked(spec.cases[i], key) for i, key in hashes.items()]
    paid = await paid_answers(spec, store, asked)
    wanted = [(i, r) for i, r in wanted if (hashes[i], r) not in paid]
    # answers an adopted database of the original evaluator holds for the same request
    work = [_Asked(spec.cases[i]) for i in dict.fromkeys(i for i, _ in wanted)]
    adopted = await adopted_answers(spec, None, store, work)
    return [(i, r) for i, r in wanted if (spec.cases[i].case_id, r) not in adopted]


@dataclass(frozen=True)
class _Asked:
    case: Case
    request_hash: str = ""


def _price(tokens_in: int, tokens_out: int, model: str, catalog: Catalog) -> float | None:
    if is_baseline(model):
        return 0.0
    info = catalog.find(model)
    if info is None or info.prompt_price is None or info.completion_price is None:
        return None
    return (tokens_in * info.prompt_price + tokens_out * info.completion_price) / 1_000_000


def _batch_price(
    tokens_in: int, tokens_out: int, ceiling_out: int, model: str, catalog: Catalog
) -> BatchPrice:
    """The batch variant's price in the catalog, else the live one at BATCH_DISCOUNT."""
    variant = catalog.find(f"{model}:batch")
    if variant is not None and variant.prompt_price is not None:
        cost = _price(tokens_in, tokens_out, variant.id, catalog)
        return BatchPrice(cost, _price(tokens_in, ceiling_out, variant.id, catalog), "catalog")
    live = _price(tokens_in, tokens_out, model, catalog)
    top = _price(tokens_in, ceiling_out, model, catalog)
    return BatchPrice(
        None if live is None else live * BATCH_DISCOUNT,
        None if top is None else top * BATCH_DISCOUNT,
        "discount",
    )


def _sum_batch(runs: Sequence[RunEstimate]) -> BatchPrice | None:
    prices = [r.batch for r in runs if r.batch is not None]
    if not prices:
        return None
    costs, ceilings = [p.cost for p in prices], [p.ceiling for p in prices]
    return BatchPrice(
        None if None in costs else sum(c or 0.0 for c in costs),
        None if None in ceilings else sum(c or 0.0 for c in ceilings),
        "catalog" if all(p.source == "catalog" for p in prices) else "discount",
    )


async def estimate(
    specs: Sequence[RunSpec], max_tokens: int, catalog: Catalog, store: Store | None
) -> Estimate:
    """The plan's requests, tokens and cost, per run and per model."""
    runs: list[RunEstimate] = []
    for spec in specs:
        left = await _left(spec, store)
        offline = is_baseline(spec.model)
        tokens_in = 0 if offline else sum(input_tokens(spec, i) for i, _ in left)
        budget = spec.settings.max_tokens or max_tokens  # the run's own, per model
        reply = 0 if offline else min(budget, TYPICAL_REPLY_TOKENS)
        ceiling = 0 if offline else budget
        batch = None
        if spec.batch and not offline:
            batch = _batch_price(
                tokens_in, reply * len(left), ceiling * len(left), spec.model, catalog
            )
        runs.append(
            RunEstimate(
                model=spec.model,
                prompt=spec.prompt_name,
                cases=len(spec.cases),
                requests=len(spec.cases) * spec.repeats,
                left=len(left),
                input_tokens=tokens_in,
                output_tokens=reply * len(left),
                cost=_price(tokens_in, reply * len(left), spec.model, catalog),
                cost_ceiling=_price(tokens_in, ceiling * len(left), spec.model, catalog),
                batch=batch,
            )
        )
    models: list[ModelEstimate] = []
    for model in dict.fromkeys(r.model for r in runs):
        mine = [r for r in runs if r.model == model]
        costs = [r.cost for r in mine]
        ceilings = [r.cost_ceiling for r in mine]
        models.append(
            ModelEstimate(
                model=model,
                runs=len(mine),
                left=sum(r.left for r in mine),
                input_tokens=sum(r.input_tokens for r in mine),
                output_tokens=sum(r.output_tokens for r in mine),
                cost=None if None in costs else sum(c or 0.0 for c in costs),
                cost_ceiling=None if None in ceilings else sum(c or 0.0 for c in ceilings),
                batch=_sum_batch(mine),
            )
        )
    return Estimate(runs, models, catalog.source)


def money(value: float | None) -> str:
    """Dollars as the estimate shows them: "price unknown" when the catalog has no price."""
    return "price unknown" if value is None else numbers.money(value)


def estimate_lines(est: Estimate) -> list[str]:
    """The estimate as text, one renderer for the headless plan and the app's setup screen."""
    lines = []
    for r in est.runs:
        lines.append(
            f"  {inert_line(r.model)}  prompt {inert_line(r.prompt)}: {r.cases} cases, "
            f"{r.left} of {r.requests} requests to send, "
            f"~{r.input_tokens:,} in / ~{r.output_tokens:,} out tokens, {money(r.cost)}"
            + _in_batch(r.batch)
        )
    lines.append("per model:")
    for m in est.models:
        ceiling = "" if m.cost is None else f" (at most {money(m.cost_ceiling)})"
        lines.append(
            f"  {inert_line(m.model)}: {m.runs} run(s), {m.left} requests, "
            f"~{m.input_tokens:,} in / ~{m.output_tokens:,} out tokens, {money(m.cost)}{ceiling}"
            + _in_batch(m.batch, at_most=True)
        )
    total = f"total: {est.left} requests, ~{est.input_tokens:,} in / ~{est.output_tokens:,} out"
    total += f" tokens, {money(est.cost)} (at most {money(est.cost_ceiling)})"
    if est.unpriced:
        total += f"; price unknown for {inert_line(', '.join(est.unpriced))} (not in the total)"
    lines.append(total)
    lines.append(
        f"(tokens estimated: input chars/{CHARS_PER_TOKEN}; output {TYPICAL_REPLY_TOKENS} "
        "per reply, at most --max-tokens; prices from the model list: "
        f"{est.price_source})"
    )
    if est.batched:
        lines.append(batch_total(est))
    return lines


def _in_batch(batch: BatchPrice | None, at_most: bool = False) -> str:
    """The batch price beside the live one (`--batch`)."""
    if batch is None:
        return ""
    ceiling = f", at most {money(batch.ceiling)}" if at_most and batch.cost is not None else ""
    return f"; in a batch {money(batch.cost)}{ceiling}"


def batch_total(est: Estimate) -> str:
    """`--batch`: what the batched models cost in batches, beside live, and why that price."""
    batched = est.batched
    costs = [m.batch.cost for m in batched if m.batch is not None]
    live = [m.cost for m in batched]
    total = None if None in costs else sum(c or 0.0 for c in costs)
    live_total = None if None in live else sum(c or 0.0 for c in live)
    sources = {m.batch.source for m in batched if m.batch is not None}
    why = (
        "the catalog's batch price"
        if sources == {"catalog"}
        else f"the live price at {BATCH_DISCOUNT:.0%}, as the batch APIs document"
        + (", or the catalog's batch price where it has one" if "catalog" in sources else "")
    )
    return (
        f"--batch: {money(total)} in batches against {money(live_total)} live ({why}); "
        "the answers come within 24 hours"
    )
