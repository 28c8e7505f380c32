"""Which runs a report shows: the ones asked for, or the latest whole run of each model on each
suite, and why a run covers only part of its suite.
"""

from __future__ import annotations

from collections.abc import Sequence

from secbench_tui.core.models import RunStatus, SuiteKind
from secbench_tui.core.results.report.data import ReportError
from secbench_tui.core.store.runs import RunRecord


def choose_runs(
    every: Sequence[RunRecord],
    path: object,
    run_ids: Sequence[int] | None,
    models: Sequence[str] | None,
) -> list[RunRecord]:
    """The runs asked for, or by default, per model and suite, the latest
    whole run (completed, not narrowed by --apps or --limit), else the latest run."""
    no_such_run = unknown_runs(run_ids or (), [r.id for r in every], path)
    if no_such_run:
        raise ReportError(no_such_run)
    no_such_model = unknown_models(models or (), [r.model_name for r in every], path)
    if no_such_model:
        raise ReportError(no_such_model)
    runs = [
        r
        for r in every
        if r.finished > 0
        and (not run_ids or r.id in run_ids)
        and (not models or r.model_name in models)
    ]
    if not runs:
        raise ReportError(
            f"--db {path}: no results to report"
            + (" for this selection" if run_ids or models else "")
            + "; run an evaluation first, e.g. secbench-tui --model baseline/random --no-ui"
        )
    if run_ids:
        return runs
    chosen: dict[tuple[str, ...], RunRecord] = {}
    for run in runs:  # in id order: a later run replaces an earlier one...
        held = chosen.get(_suite_identity(run))
        # ...unless it covers less (--apps, --limit, stopped) than the whole run held.
        if held is None or is_whole(run) or not is_whole(held):
            chosen[_suite_identity(run)] = run
    # A run whose words are unknown (adopted from the original evaluator, which kept only the
    # prompt's file name) is taken for the later run of the same name whose words are known.
    worded: dict[tuple[str, ...], int] = {}  # the latest run with known words, by name
    for r in chosen.values():
        if r.prompt_hash:
            worded[_suite_identity(r)[:4]] = max(r.id, worded.get(_suite_identity(r)[:4], 0))
    return sorted(
        (
            r
            for r in chosen.values()
            if r.prompt_hash or worded.get(_suite_identity(r)[:4], 0) < r.id
        ),
        key=lambda r: r.id,
    )


def unknown_runs(asked: Sequence[int], there: Sequence[int], path: object) -> str | None:
    """What is wrong with a `--runs` that names runs `path` does not hold (None: nothing),
    naming the runs it does hold: every command that takes `--runs` says it so."""
    missing = sorted(set(asked) - set(there))
    if not missing:
        return None
    held = _id_ranges(there)
    return f"--runs: no run {', '.join(map(str, missing))} in {path}; " + (
        f"runs there: {held}" if held else "it holds no run yet; run an evaluation first"
    )


def prompt_labels(runs: Sequence[RunRecord]) -> dict[int, str]:
    """Each run's prompt as the report names it: its name, with the start of its words' hash
    where runs shown together use one name for different words (`default [3c93fbfa]`), so
    that two questions are never shown as one."""
    hashes: dict[str, set[str]] = {}
    for run in runs:
        words = hashes.setdefault(run.prompt_name or "", set())
        if run.prompt_hash:  # unknown words (an adopted run) are not another text
            words.add(run.prompt_hash)
    return {
        r.id: f"{r.prompt_name} [{(r.prompt_hash or 'words unknown')[:8]}]"
        if r.prompt_name and len(hashes[r.prompt_name]) > 1
        else r.prompt_name or ""
        for r in runs
    }


def is_whole(run: RunRecord) -> bool:
    """A run that completed over its whole suite (its tasks): no --apps, no --limit."""
    settings = run.settings
    return run.status is RunStatus.COMPLETED and not settings.apps and settings.limit is None


def narrowed_by(run: RunRecord) -> str:
    """Why a run covers only part of its suite, in the words of the command line."""
    settings, parts = run.settings, []
    if settings.apps:
        parts.append("--apps " + ",".join(settings.apps))
    if settings.limit is not None:
        parts.append(f"--limit {settings.limit}")
    tasks = settings.tasks
    if run.suite_kind == SuiteKind.VULDETECTBENCH.value and tasks is not None:
        if not set(tasks) >= {1, 2, 3, 4, 5}:
            parts.append("--tasks " + ",".join(map(str, tasks)))
    if run.status is not RunStatus.COMPLETED:
        parts.append(run.status)
    return ", ".join(parts)


def _suite_identity(run: RunRecord) -> tuple[str, ...]:
    """What makes two runs the same benchmark for one model; a prompt is its words, not its
    name (a file edited between runs asks another question); VulDetectBench's prompting
    method, scoring and tasks change the figures as much as another suite would (its tasks
    are five benchmarks, each with its own metrics)."""
    identity = (
        run.model_name,
        run.suite_kind,
        run.suite_path,
        run.prompt_name or "",
        run.prompt_hash or "",
    )
    if run.suite_kind == SuiteKind.VULDETECTBENCH.value:
        tasks = run.settings.tasks
        extra = (
            str(run.settings.method),
            str(run.settings.vdb_scoring),
            ",".join(map(str, sorted(tasks))) if tasks is not None else "",
        )
        return identity + extra
    return identity


def unknown_models(asked: Sequence[str], there: Sequence[str], path: object) -> str | None:
    """What is wrong with a `--models` that names models with no run in `path` (None:
    nothing), naming the models it does hold: every command that takes `--models` says it so."""
    known = sorted(set(there))
    unknown = [m for m in asked if m not in known]
    if not unknown:
        return None
    return (
        f"--models: no runs of {', '.join(unknown)} in {path}; "
        f"models there: {', '.join(known) or 'none'}"
    )


def _id_ranges(ids: Sequence[int]) -> str:
    """1-4, 7, 9-10: run ids as a short list."""
    spans: list[list[int]] = []
    for run_id in sorted(ids):
        if spans and run_id == spans[-1][1] + 1:
            spans[-1][1] = run_id
        else:
            spans.append([run_id, run_id])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
