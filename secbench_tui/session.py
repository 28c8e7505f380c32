"""From settings to a run: load the suite, build the provider, describe the run.

Both front ends call `prepare_run`, so a run started in the terminal app and one started
with `--no-ui` are the same run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from secbench_tui.config import Settings
from secbench_tui.core.engine import RunSpec
from secbench_tui.core.models import Case, SuiteKind
from secbench_tui.core.prompts import load_evaluation_prompt, sha256_text
from secbench_tui.core.providers.base import Provider
from secbench_tui.core.providers.baselines import BaselineProvider, is_baseline
from secbench_tui.core.providers.openai_compat import ClientSettings, OpenAICompatibleProvider
from secbench_tui.core.suites.markdown import SuiteError, load_markdown_suite


class UsageError(Exception):
    """Bad settings or input: the message names the flag or file and the fix."""


@dataclass
class LoadedSuite:
    kind: SuiteKind
    root: Path
    cases: list[Case]
    skipped: list[str]
    prompt_hash: str


def is_vuldetectbench(path: Path) -> bool:
    """A VulDetectBench test set: `task{N}_code.jsonl` files, as the benchmark ships them."""
    from secbench_tui.core.suites.vuldetectbench import is_vuldetectbench_dir

    return is_vuldetectbench_dir(path)


def load_suite(settings: Settings) -> LoadedSuite:
    root = settings.cases_dir
    if not root.exists():
        raise UsageError(f"--cases {root}: no such directory")
    vuldetectbench = is_vuldetectbench(root)
    check_suite_flags(settings, vuldetectbench)
    if vuldetectbench:
        from secbench_tui.core.suites.vuldetectbench import load_vuldetectbench

        skipped: list[str] = []
        try:
            cases = load_vuldetectbench(root, settings.tasks, settings.method, skipped=skipped)
        except (ValueError, OSError) as exc:
            raise UsageError(str(exc)) from exc
        prompt_hash = sha256_text(f"vuldetectbench:{settings.method}")
        kind = SuiteKind.VULDETECTBENCH
    else:
        try:
            prompt_text, _ = load_evaluation_prompt(settings.prompt)
        except OSError as exc:
            raise UsageError(f"--prompt {settings.prompt}: cannot read ({exc})") from exc
        try:
            suite = load_markdown_suite(root, settings.apps, prompt_text)
        except SuiteError as exc:
            raise UsageError(str(exc)) from exc
        cases, skipped = suite.cases, [str(s) for s in suite.skipped]
        prompt_hash = sha256_text(prompt_text)
        kind = SuiteKind.MARKDOWN
    if settings.limit is not None:
        cases = first_cases(cases, settings.limit, per_app=kind is SuiteKind.VULDETECTBENCH)
    return LoadedSuite(kind, root, cases, skipped, prompt_hash)


def check_suite_flags(settings: Settings, vuldetectbench: bool) -> None:
    """Flags that mean nothing for this kind of suite are mistakes: say so, do not ignore them."""
    if vuldetectbench and settings.apps:
        raise UsageError(f"--apps: {settings.cases_dir} is a VulDetectBench folder; use --tasks")
    if not vuldetectbench:
        for flag, given in (
            ("--method", settings.method is not None),
            ("--vdb-scoring", settings.vdb_scoring != "correct"),
        ):
            if given:
                raise UsageError(
                    f"{flag} applies to VulDetectBench folders (task{{N}}_code.jsonl); "
                    f"{settings.cases_dir} is a markdown suite"
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


def make_provider(settings: Settings) -> Provider:
    model = settings.model
    if not model:
        raise UsageError("--model is required (for example --model baseline/random)")
    if is_baseline(model):
        return BaselineProvider(model, settings.seed)
    client = ClientSettings(
        base_url=settings.base_url,
        api_key=settings.key,
        model=model,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        seed=settings.seed,
        response_format=settings.response_format,
        max_retries=settings.max_retries,
        timeout=settings.timeout,
        concurrency=settings.concurrency,
    )
    if client.is_openrouter and not client.api_key:
        raise UsageError(
            "no API key: set OPENROUTER_API_KEY in the environment or in .env "
            "(or use --base-url for a local server, or a baseline/* model offline)"
        )
    return OpenAICompatibleProvider(client)


def build_spec(settings: Settings, suite: LoadedSuite) -> RunSpec:
    assert settings.model
    return RunSpec(
        model=settings.model,
        cases=suite.cases,
        suite_kind=suite.kind.value,
        suite_path=str(suite.root.resolve()),
        settings=settings.recorded(
            vuldetectbench=suite.kind is SuiteKind.VULDETECTBENCH,
            baseline=is_baseline(settings.model),
        ),
        prompt_hash=suite.prompt_hash,
        repeats=settings.repeats,
        concurrency=settings.concurrency,
        resume=settings.resume,
        force=settings.force,
        retry_errors=settings.retry_errors,
        max_cost=settings.max_cost,
        vdb_scoring=settings.vdb_scoring,
        skipped=tuple(suite.skipped),
    )
