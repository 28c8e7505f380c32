"""The cells of the matrix: one `RunSettings` per model x prompt (markdown suites) or model x
method (VulDetectBench), after every flag that cannot apply to this suite has been refused, and
with what each model's catalog entry decides about the requests it is sent."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from secbench_tui.config import Options, RunSettings, Settings
from secbench_tui.core.run.catalog import Catalog
from secbench_tui.core.run.providers.baselines import BASELINES, is_baseline
from secbench_tui.core.suites.prompts import (
    EXPLOIT_PROMPT,
    FIX_PROMPT,
    PromptError,
    resolve_prompts,
)
from secbench_tui.errors import UsageError
from secbench_tui.planning.batching import check_batch

REASONING_MAX_TOKENS = 32768


def is_vuldetectbench(path: Path) -> bool:
    """A VulDetectBench test set: `task{N}_code.jsonl` files, as the benchmark ships them."""
    from secbench_tui.core.vuldetectbench import is_vuldetectbench_dir

    return is_vuldetectbench_dir(path)


def matrix_cells(settings: Settings, catalog: Catalog) -> list[RunSettings]:
    """One `RunSettings` per cell: every model, times every prompt (markdown suites) or every
    method (VulDetectBench), each with what its model's catalog entry decides. Raises
    `UsageError` for a flag, a model or a suite folder that cannot work."""
    root = settings.cases_dir
    if not root.exists():
        raise UsageError(f"--cases {root}: no such directory")
    if not settings.models:
        raise UsageError("--model is required (for example --model baseline/random)")
    for model in settings.models:
        check_model(model)
    vuldetectbench = is_vuldetectbench(root)
    check_suite_flags(settings, vuldetectbench=vuldetectbench)
    check_batch(settings)
    cells = _vuldetectbench_cells(settings) if vuldetectbench else _markdown_cells(settings)
    return [request_defaults(one, catalog) for one in cells]


def _vuldetectbench_cells(settings: Settings) -> list[RunSettings]:
    methods = settings.methods or [None]
    return [settings.run(model, method=method) for model in settings.models for method in methods]


def _markdown_cells(settings: Settings) -> list[RunSettings]:
    """Every model with every prompt; duplicates given twice are run once. Without `--prompt`,
    `--task fix` asks with the bundled prompt `fix`, `--prove-findings` with `exploit`."""
    default = (
        [FIX_PROMPT]
        if settings.task == "fix"
        else [EXPLOIT_PROMPT]
        if settings.prove_findings
        else []
    )
    asked = settings.prompts or default
    try:
        prompts = resolve_prompts(asked)
    except PromptError as exc:
        raise UsageError(str(exc)) from exc
    cells: list[RunSettings] = []
    for model in settings.models:
        if settings.original_request:  # --seed is refused for each model but a baseline
            check_original_request(settings, model=model)
        cells.extend(settings.run(model, prompt=prompt) for prompt in prompts)
    return cells


def check_model(model: str) -> None:
    """A `baseline/` id that names no baseline is a typo, said before anything runs."""
    if model.startswith("baseline/") and not is_baseline(model):
        raise UsageError(
            f"--model {model}: no such baseline; the baselines are {', '.join(BASELINES)}"
        )


def check_suite_flags(settings: Settings, *, vuldetectbench: bool) -> None:
    """Flags that mean nothing for this kind of suite are mistakes: say so, do not ignore them."""
    root = settings.cases_dir
    if vuldetectbench and settings.apps:
        raise UsageError(f"--apps: {root} is a VulDetectBench folder; use --tasks")
    if vuldetectbench and settings.original_request:
        raise UsageError(
            f"--request-style security-bench applies to markdown suites; {root} is a "
            "VulDetectBench folder"
        )
    if vuldetectbench and settings.task == "fix":
        raise UsageError(
            f"--task fix applies to markdown suites (their fixes are verified on PostgreSQL); "
            f"{root} is a VulDetectBench folder"
        )
    if settings.task == "fix" and settings.original_request:
        raise UsageError(
            "--task fix cannot be combined with --request-style security-bench, which sends "
            "the original evaluator's request as it is (its own schema, without the fixed code)"
        )
    if settings.task == "fix" and settings.prove_findings:
        raise UsageError(
            "--prove-findings applies to --task find: a fix reply carries no exploit to prove"
        )
    if settings.task == "fix" and settings.rewrites:
        raise UsageError(
            "--rewrites applies to --task find: a variant is asked for a verdict, not a fix"
        )
    if vuldetectbench and settings.prompts:
        raise UsageError(
            f"--prompt applies to markdown suites; {root} is a VulDetectBench folder, whose "
            "prompting strategy is --method"
        )
    if vuldetectbench:
        return
    for flag, given in (
        ("--method", any(m is not None for m in settings.methods)),
        ("--vdb-scoring", settings.vdb_scoring != Options.model_fields["vdb_scoring"].default),
    ):
        if given:
            raise UsageError(
                f"{flag} applies to VulDetectBench folders (task{{N}}_code.jsonl); "
                f"{root} is a markdown suite"
            )


def check_original_request(settings: Options, *, model: str) -> None:
    """`--request-style security-bench` fixes the whole body: a flag that would change it
    is a mistake, not something to drop silently."""
    style = "--request-style security-bench"
    fixed = (
        ("--temperature", settings.temperature is not None, "temperature 0.1"),
        ("--max-tokens", settings.max_tokens is not None, "max_tokens 30000"),
        ("--seed", settings.seed is not None and not is_baseline(model), "no seed"),
        ("--reasoning-effort", settings.reasoning_effort is not None, "no reasoning field"),
        ("--response-format", settings.response_format != "json_schema", "its own json_schema"),
    )
    for flag, given, sent in fixed:
        if given:
            raise UsageError(
                f"{flag} cannot be combined with {style}, which sends the original "
                f"evaluator's request as it is ({sent}); drop {flag}"
            )


def request_defaults(one: RunSettings, catalog: Catalog) -> RunSettings:
    """A cell with what its model's catalog entry decides about what is sent.

    Reasoning models spend reply tokens on thinking before they answer, so 1024 leaves many
    of them with no answer at all: when `--max-tokens` is not given and the model's catalog
    entry lists `reasoning`, requests carry REASONING_MAX_TOKENS (or the model's own smaller
    limit), and an attempt may take REASONING_TIMEOUT unless `--timeout` is given. The run
    records the values sent and `reasoning_model`; `--max-cost` stays the guard on spend. A
    model the catalog does not list keeps the plain defaults.
    """
    if is_baseline(one.model) or one.original_request or one.max_tokens is not None:
        return one
    info = catalog.find(one.model)
    if info is None or info.reasoning is None:
        return one
    update: dict[str, object] = {"reasoning_model": info.reasoning}
    if info.reasoning:
        update["max_tokens"] = min(
            REASONING_MAX_TOKENS, info.max_completion_tokens or REASONING_MAX_TOKENS
        )
    return one.replace(**update)


def remote_models(models: Sequence[str]) -> list[str]:
    """The models that are asked over the network (not the offline baselines)."""
    return [m for m in models if not is_baseline(m)]
