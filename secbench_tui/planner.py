"""From settings to a run: load the suite, build the provider, describe the run.

Both front ends call `plan_matrix`, so runs started in the terminal app and ones started
with `--no-ui` are the same runs: one per model x evaluation prompt (x VulDetectBench method).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

from secbench_tui.config import Options, RunSettings, Settings
from secbench_tui.core.models import Case, Completion, RewritesRecord, SuiteKind
from secbench_tui.core.run.engine import RunSpec
from secbench_tui.core.run.matrix import PlannedRun
from secbench_tui.core.run.providers.base import Provider, RetryCallback
from secbench_tui.core.run.providers.baselines import BASELINES, BaselineProvider, is_baseline
from secbench_tui.core.run.providers.openai_compat import ClientSettings, OpenAICompatibleProvider
from secbench_tui.core.store.values import vdb_prompt_name
from secbench_tui.core.suites.markdown import SuiteError, load_markdown_suite
from secbench_tui.core.suites.prompts import (
    PromptError,
    default_prompt,
    resolve_prompts,
    sha256_text,
)

if TYPE_CHECKING:
    from secbench_tui.core.run.catalog import Catalog, ModelInfo
    from secbench_tui.core.run.context import Overflow

REASONING_MAX_TOKENS = 32768


class UsageError(Exception):
    """Bad settings or input: the message names the flag or file and the fix."""


@dataclass
class LoadedSuite:
    kind: SuiteKind
    root: Path
    cases: list[Case]
    skipped: list[str]
    prompt_hash: str
    prompt_name: str = ""


def is_vuldetectbench(path: Path) -> bool:
    """A VulDetectBench test set: `task{N}_code.jsonl` files, as the benchmark ships them."""
    from secbench_tui.core.vuldetectbench import is_vuldetectbench_dir

    return is_vuldetectbench_dir(path)


def load_suite(settings: RunSettings) -> LoadedSuite:
    """The cases of one run: with its prompt for a markdown suite (default: the default one)."""
    root = settings.cases_dir
    if not root.exists():
        raise UsageError(f"--cases {root}: no such directory")
    vuldetectbench = is_vuldetectbench(root)
    check_suite_flags(settings, vuldetectbench, [settings.prompt], [settings.method])
    if settings.original_request:
        check_original_request(settings, vuldetectbench, settings.model)
    if vuldetectbench:
        from secbench_tui.core.vuldetectbench.loader import load_vuldetectbench

        skipped: list[str] = []
        try:
            cases = load_vuldetectbench(root, settings.tasks, settings.method, skipped=skipped)
        except (ValueError, OSError) as exc:
            raise UsageError(str(exc)) from exc
        prompt_hash = sha256_text(f"vuldetectbench:{settings.method}")
        prompt_name = vdb_prompt_name(settings.method)
        kind = SuiteKind.VULDETECTBENCH
    else:
        try:
            prompt = settings.prompt or default_prompt()
        except PromptError as exc:
            raise UsageError(str(exc)) from exc
        try:
            text = prompt.text if settings.original_request else prompt.normalised
            suite = load_markdown_suite(root, settings.apps, text, settings.request_style)
        except SuiteError as exc:
            raise UsageError(str(exc)) from exc
        cases, skipped = suite.cases, [*prompt.notes, *(str(s) for s in suite.skipped)]
        prompt_hash, prompt_name = prompt.sha256, prompt.name
        kind = SuiteKind.MARKDOWN
        if not cases:
            raise UsageError(no_usable_case(root, [str(s) for s in suite.skipped], kind))
    if not cases:
        raise UsageError(no_usable_case(root, skipped, kind))
    if settings.filters:
        cases = filter_cases(cases, settings.filters, root)
    if settings.limit is not None:
        cases = first_cases(cases, settings.limit, per_app=kind is SuiteKind.VULDETECTBENCH)
    return LoadedSuite(kind, root, cases, skipped, prompt_hash, prompt_name)


def no_usable_case(root: Path, skipped: list[str], kind: SuiteKind) -> str:
    """Why a run over `root` would measure nothing: a run of no case is refused, not recorded."""
    if kind is SuiteKind.VULDETECTBENCH:
        fix = "fix the task files named, or give --cases another folder"
    else:
        fix = (
            "fix the case files named (each needs a '# Code' block and '# Expected' good or "
            "bad), or give --cases another folder"
        )
    if not skipped:
        return f"no usable case in {root} (no case files found); {fix}"
    shown = "; ".join(s.removeprefix("skipped ") for s in skipped[:3])
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return f"no usable case in {root} ({len(skipped)} skipped: {shown}{more}); {fix}"


def filter_cases(cases: list[Case], patterns: list[str], root: Path) -> list[Case]:
    """The cases whose id (`app/file.md`) matches any `--filter` glob."""
    kept = [c for c in cases if any(fnmatchcase(c.case_id, p) for p in patterns)]
    if not kept:
        example = cases[0].case_id if cases else "app/case.md"
        raise UsageError(
            f"--filter {' '.join(patterns)}: matches no case in {root}; "
            f"case ids look like {example}"
        )
    return kept


def check_suite_flags(
    settings: Options,
    vuldetectbench: bool,
    prompts: Sequence[object] = (),
    methods: Sequence[str | None] = (),
) -> None:
    """Flags that mean nothing for this kind of suite are mistakes: say so, do not ignore them.
    `prompts` and `methods`: those asked for (None: none given, the plain method)."""
    if vuldetectbench and settings.apps:
        raise UsageError(f"--apps: {settings.cases_dir} is a VulDetectBench folder; use --tasks")
    if settings.original_request and vuldetectbench:
        check_original_request(settings, vuldetectbench, "")
    if vuldetectbench and any(p is not None for p in prompts):
        raise UsageError(
            f"--prompt applies to markdown suites; {settings.cases_dir} is a VulDetectBench "
            "folder, whose prompting strategy is --method"
        )
    if not vuldetectbench:
        for flag, given in (
            ("--method", any(m is not None for m in methods)),
            ("--vdb-scoring", settings.vdb_scoring != Options.model_fields["vdb_scoring"].default),
        ):
            if given:
                raise UsageError(
                    f"{flag} applies to VulDetectBench folders (task{{N}}_code.jsonl); "
                    f"{settings.cases_dir} is a markdown suite"
                )


def check_original_request(settings: Options, vuldetectbench: bool, model: str) -> None:
    """`--request-style security-bench` fixes the whole body: a flag that would change it
    is a mistake, not something to drop silently."""
    style = "--request-style security-bench"
    if vuldetectbench:
        raise UsageError(
            f"{style} applies to markdown suites; {settings.cases_dir} is a VulDetectBench folder"
        )
    fixed = (
        ("--temperature", settings.temperature is not None, "temperature 0.1"),
        ("--max-tokens", settings.max_tokens is not None, "max_tokens 30000"),
        ("--seed", settings.seed is not None and not is_baseline(model), "no seed"),
        ("--reasoning-effort", settings.reasoning_effort is not None, "no reasoning field"),
        (
            "--response-format",
            settings.response_format != "json_schema",
            "its own json_schema",
        ),
    )
    for flag, given, sent in fixed:
        if given:
            raise UsageError(
                f"{flag} cannot be combined with {style}, which sends the original "
                f"evaluator's request as it is ({sent}); drop {flag}"
            )


def first_cases(cases: list[Case], limit: int, per_app: bool) -> list[Case]:
    """The first `limit` cases, or the first `limit` of each app (each VulDetectBench task)."""
    if not per_app:
        return cases[:limit]
    taken: dict[str, int] = {}
    kept = []
    for case in cases:
        if taken.get(case.app, 0) < limit:
            taken[case.app] = taken.get(case.app, 0) + 1
            kept.append(case)
    return kept


def request_defaults(settings: RunSettings, info: ModelInfo | None) -> RunSettings:
    """Settings with what the model's catalog entry decides about what is sent.

    Reasoning models spend reply tokens on thinking before they answer, so 1024 leaves many
    of them with no answer at all: when `--max-tokens` is not given and the model's catalog
    entry lists `reasoning`, requests carry REASONING_MAX_TOKENS (or the model's own smaller
    limit), and an attempt may take REASONING_TIMEOUT unless `--timeout` is given. The run
    records the values sent and `reasoning_model`; `--max-cost` stays the guard on spend. A
    model the catalog does not list keeps the plain defaults.
    """
    if not settings.model or is_baseline(settings.model) or settings.original_request:
        return settings
    if settings.max_tokens is not None or info is None or info.reasoning is None:
        return settings
    update: dict[str, object] = {"reasoning_model": info.reasoning}
    if info.reasoning:
        update["max_tokens"] = min(
            REASONING_MAX_TOKENS, info.max_completion_tokens or REASONING_MAX_TOKENS
        )
    return settings.replace(**update)


def make_provider(settings: RunSettings) -> Provider:
    model = settings.model
    if not model:
        raise UsageError("--model is required (for example --model baseline/random)")
    if is_baseline(model):
        return BaselineProvider(model, settings.seed)
    if model.startswith("baseline/"):
        raise UsageError(
            f"--model {model}: no such baseline; the baselines are {', '.join(BASELINES)}"
        )
    client = ClientSettings(
        base_url=settings.base_url,
        api_key=settings.key,
        model=model,
        temperature=settings.sent_temperature,
        max_tokens=settings.sent_max_tokens,
        seed=settings.seed,
        response_format=settings.response_format,
        reasoning_effort=settings.reasoning_effort,
        request_style=settings.request_style,
        max_retries=settings.max_retries,
        backoff_base=settings.retry_backoff,
        timeout=settings.attempt_timeout,
        concurrency=settings.concurrency,
    )
    if client.is_openrouter and not client.api_key:
        raise UsageError(
            "no API key: set OPENROUTER_API_KEY in the environment or in .env "
            "(or use --base-url for a local server, or a baseline/* model offline)"
        )
    return OpenAICompatibleProvider(client)


def build_spec(
    settings: RunSettings, suite: LoadedSuite, rewrites: Rewrites | None = None
) -> RunSpec:
    recorded = settings.recorded(
        vuldetectbench=suite.kind is SuiteKind.VULDETECTBENCH,
        baseline=is_baseline(settings.model),
    )
    if rewrites is not None:
        recorded = recorded.model_copy(update={"rewrites": rewrites.recorded()})
    return RunSpec(
        model=settings.model,
        cases=suite.cases,
        suite_kind=suite.kind.value,
        suite_path=str(suite.root.resolve()),
        settings=recorded,
        prompt_hash=suite.prompt_hash,
        prompt_name=suite.prompt_name,
        repeats=settings.repeats,
        concurrency=settings.concurrency,
        resume=settings.resume,
        force=settings.force,
        retry_errors=settings.retry_errors,
        max_cost=settings.max_cost,
        vdb_scoring=settings.vdb_scoring,
        skipped=tuple(suite.skipped),
        base_url=None if is_baseline(settings.model) else settings.base_url,
    )


@dataclass
class Rewrites:
    """What `--rewrites` made of the suite: variants proven (or sent unproven) by original
    case, and what the equivalence gate dropped, with why."""

    relations: tuple[str, ...]
    seed: int
    made: int = 0
    not_applicable: int = 0
    proven: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # id -> (rel, code)
    unproven: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)  # by relation
    reasons: list[tuple[str, str]] = field(default_factory=list)  # (variant id, why)
    engine: str = ""
    seconds: float = 0.0

    def recorded(self) -> RewritesRecord:
        """What a run records of them (its settings' `rewrites`), for the figures."""
        from secbench_tui.core.rewrites.relations import BY_NAME

        return RewritesRecord(
            relations=list(self.relations),
            kinds={name: BY_NAME[name].kind for name in self.relations},
            seed=self.seed,
            made=self.made,
            dropped=dict(sorted(self.dropped.items())),
            unproven=sum(len(v) for v in self.unproven.values()),
            reasons=[list(r) for r in self.reasons[:50]],
            engine=self.engine,
        )

    def lines(self) -> list[str]:
        """What a front end says about them before the run starts."""
        proven = sum(len(v) for v in self.proven.values())
        unproven = sum(len(v) for v in self.unproven.values())
        dropped = sum(self.dropped.values())
        head = (
            f"rewrites: {self.made} variant(s) made ({', '.join(self.relations)}; seed "
            f"{self.seed}), {proven} proven equivalent"
            + (f" on {self.engine} in {self.seconds:.0f}s" if self.engine else "")
            + f", {dropped} dropped"
            + (f", {unproven} sent unproven" if unproven else "")
        )
        out = [head]
        for relation, count in sorted(self.dropped.items()):
            why = next((r for v, r in self.reasons if f"#{relation}/" in v), "")
            out.append(f"  dropped {count} {relation}: e.g. {why}")
        return out


def prepare_rewrites(settings: Settings, cases: list[Case], root: Path) -> Rewrites:
    """Make the variants of `--rewrites` and prove each before it may be sent."""
    from secbench_tui.core.rewrites.relations import make_variants

    seed = settings.seed or 0
    variants, skipped = make_variants(cases, settings.rewrites, seed)
    outcome = Rewrites(tuple(settings.rewrites), seed, len(variants), len(skipped))
    try:
        from secbench_tui.core.rewrites.gate import prove_variants, unproven_report
        from secbench_tui.core.verify.server import ServerError
    except ImportError as exc:
        if not settings.unproven_rewrites:
            raise UsageError(
                "--rewrites proves every variant on PostgreSQL: install the verify extra "
                f"(pip install 'secbench-tui[verify]'; {exc}), or add --unproven-rewrites "
                "to send variants without proof"
            ) from exc
        report = unproven_report(variants, f"the verify extra is not installed ({exc})", True)
    else:
        try:
            report = prove_variants(
                root, cases, variants, settings.pg_url, settings.unproven_rewrites
            )
        except ServerError as exc:
            if not settings.unproven_rewrites:
                raise UsageError(
                    f"--rewrites proves every variant on PostgreSQL: {exc}; or add "
                    "--unproven-rewrites to send variants without proof"
                ) from exc
            report = unproven_report(variants, str(exc), True)
    outcome.engine, outcome.seconds = report.engine, report.seconds
    for variant in report.proven:
        outcome.proven.setdefault(variant.original.case_id, []).append(
            (variant.relation, variant.code)
        )
    for variant in report.unproven:
        outcome.unproven.setdefault(variant.original.case_id, []).append(
            (variant.relation, variant.code)
        )
    for dropped in report.dropped:
        relation = dropped.variant.relation
        outcome.dropped[relation] = outcome.dropped.get(relation, 0) + 1
        outcome.reasons.append((dropped.variant.case_id, dropped.reason))
    return outcome


def with_variants(cases: list[Case], rewrites: Rewrites) -> list[Case]:
    """The originals, then each one's variants (the original's prompt around new code)."""
    from secbench_tui.core.rewrites.relations import Variant

    added: list[Case] = []
    for case in cases:
        for proven, table in ((True, rewrites.proven), (False, rewrites.unproven)):
            for relation, code in table.get(case.case_id, []):
                added.append(Variant(case, relation, rewrites.seed, code).as_case(proven))
    return [*cases, *added]


@dataclass
class Plan:
    """The matrix to run: one `PlannedRun` per model x prompt (x method), in that order."""

    runs: list[PlannedRun]
    settings: list[RunSettings]  # each run's own settings, in the same order
    skipped: list[str] = field(default_factory=list)
    rewrites: Rewrites | None = None

    async def aclose(self) -> None:
        for provider in {id(r.provider): r.provider for r in self.runs}.values():
            await provider.aclose()


class _NoProvider:
    """Stands in for a provider where nothing is asked (`--dry-run`, the setup estimate)."""

    name = ""
    reports_cost = False

    async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
        raise RuntimeError("a plan built without providers sends no request")

    async def aclose(self) -> None:
        return None


def _with_defaults(one: RunSettings, model: RunSettings | None) -> RunSettings:
    """A cell's settings with what the catalog decided for its model."""
    if model is None:
        return one
    return one.replace(max_tokens=model.max_tokens, reasoning_model=model.reasoning_model)


async def resolve_matrix_defaults(
    settings: Settings, cache: Path | None = None, fetch: bool = True
) -> dict[str, RunSettings]:
    """`request_defaults` for every model of the matrix, by model id."""
    from secbench_tui.core.run.catalog import read_catalog

    cells = {model: settings.run(model) for model in settings.models}
    asked = [m for m in cells if not is_baseline(m)]
    decided = settings.original_request or settings.max_tokens is not None
    if decided or not asked:
        return cells
    timeout = min(settings.attempt_timeout, 10.0)
    catalog = await read_catalog(
        settings.base_url,
        fetch="missing" if fetch else "never",
        wanted=asked,
        directory=cache,
        timeout=timeout,
    )  # one GET /models for the whole matrix
    return {model: request_defaults(one, catalog.find(model)) for model, one in cells.items()}


def catalog_defaults(settings: Settings, catalog: Catalog) -> dict[str, RunSettings]:
    """`resolve_matrix_defaults` from a catalog already loaded (the estimate's), by model id:
    an estimate must price and reuse the requests the run would send."""
    return {
        model: request_defaults(settings.run(model), catalog.find(model))
        for model in settings.models
    }


def plan_settings(settings: Settings) -> list[RunSettings]:
    """One `RunSettings` per cell: every model, times every prompt (markdown suites) or every
    method (VulDetectBench). Duplicates given twice are run once."""
    root = settings.cases_dir
    if not root.exists():
        raise UsageError(f"--cases {root}: no such directory")
    if not settings.models:
        raise UsageError("--model is required (for example --model baseline/random)")
    if is_vuldetectbench(root):
        check_suite_flags(settings, True, settings.prompts, settings.methods)
        methods = settings.methods or [None]
        return [
            settings.run(model, method=method) for model in settings.models for method in methods
        ]
    check_suite_flags(settings, False, settings.prompts, settings.methods)
    try:
        prompts = resolve_prompts(settings.prompts)
    except PromptError as exc:
        raise UsageError(str(exc)) from exc
    cells: list[RunSettings] = []
    for model in settings.models:
        if settings.original_request:  # --seed is refused for each model but a baseline
            check_original_request(settings, False, model)
        cells.extend(settings.run(model, prompt=prompt) for prompt in prompts)
    return cells


def plan_matrix(
    settings: Settings,
    with_providers: bool = True,
    resolved: dict[str, RunSettings] | None = None,
) -> Plan:
    """Load the suite once per prompt, make one provider per model, describe every run.

    Without providers (an estimate) no key is needed and nothing can be asked. `resolved`
    holds a model's settings after `resolve_matrix_defaults` (what its catalog entry decides).
    """
    cells = plan_settings(settings)
    if resolved:
        cells = [_with_defaults(one, resolved.get(one.model)) for one in cells]
    suites: dict[tuple[str | None, str | None], LoadedSuite] = {}
    notes = list(dict.fromkeys(note for one in cells if one.prompt for note in one.prompt.notes))
    for one in cells:
        if _suite_key(one) not in suites:
            suite = suites[_suite_key(one)] = load_suite(one)
            # every prompt folder's skipped files, said with whichever run starts first
            suite.skipped = [*notes, *(s for s in suite.skipped if s not in notes)]
    rewrites: Rewrites | None = None
    if settings.rewrites and suites:
        first = next(iter(suites.values()))
        if first.kind is not SuiteKind.MARKDOWN:
            raise UsageError(
                "--rewrites applies to markdown suites (SQL and Python cases); "
                f"{first.root} is a VulDetectBench folder"
            )
        rewrites = prepare_rewrites(settings, first.cases, first.root)
        for suite in suites.values():
            suite.cases = with_variants(suite.cases, rewrites)
    providers: dict[str, Provider] = {}
    for one in cells:
        if one.model not in providers:  # a missing key raises before any request is made
            providers[one.model] = make_provider(one) if with_providers else _NoProvider()
    runs = [
        PlannedRun(build_spec(one, suites[_suite_key(one)], rewrites), providers[one.model])
        for one in cells
    ]
    skipped = next(iter(suites.values())).skipped if suites else []
    return Plan(runs, cells, skipped, rewrites)


def _suite_key(one: RunSettings) -> tuple[str | None, str | None]:
    """Runs with the same prompt (or method) ask the same cases: the suite is loaded once."""
    return (one.prompt.name if one.prompt else None, one.method)


async def context_refusals(
    settings: Settings, plan: Plan, cache: Path | None = None, fetch: bool = True
) -> list[Overflow]:
    """Runs whose largest request (the prompt with the case) is more than the model's context,
    by its catalog entry: refused before anything is sent, unless `--force`. One `GET /models`
    for the whole matrix at most (the defaults have usually just cached it); a model whose
    context is not known is never refused."""
    from secbench_tui.core.run.catalog import read_catalog
    from secbench_tui.core.run.context import context_overflows

    models = list(dict.fromkeys(r.model for r in plan.runs if not is_baseline(r.model)))
    if not models:
        return []
    timeout = min(settings.attempt_timeout, 10.0)
    catalog = await read_catalog(
        settings.base_url,
        fetch="missing" if fetch else "never",
        wanted=models,
        directory=cache,
        timeout=timeout,
    )
    contexts = {m: getattr(catalog.find(m), "context_length", None) for m in models}
    return context_overflows([r.spec for r in plan.runs], contexts)
