"""The headless front end: engine events -> progress lines, a summary and an exit code.

Progress goes to stdout, one line per finished case; problems go to stderr, one readable line
each. The first Ctrl+C (or SIGTERM) starts no new case, gives the requests in flight a few
seconds to finish, cancels the rest (they are not recorded, so `--resume` asks them) and closes
the database cleanly; a second one exits at once (every finished case is already committed).

Whatever in a line came from elsewhere (case ids, replies, server messages, model and file
names) goes through `core.untrusted.inert_line`: no escape sequence reaches the terminal and
no foreign newline breaks a line.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, TextIO

from secbench_tui.cli import (
    EXIT_ABORTED,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
)
from secbench_tui.config import Settings
from secbench_tui.core.catalog import cached_catalog
from secbench_tui.core.engine import STOP_GRACE, Engine
from secbench_tui.core.events import CaseFinished, Event, Retrying, RunFinished, RunStarted
from secbench_tui.core.matrix import Matrix
from secbench_tui.core.models import Outcome
from secbench_tui.core.providers.baselines import is_baseline
from secbench_tui.core.store import Store, StoreError
from secbench_tui.core.untrusted import inert, inert_line, redact_url
from secbench_tui.session import (
    UsageError,
    catalog_defaults,
    plan_matrix,
    plan_settings,
    resolve_matrix_defaults,
)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def format_case_line(event: CaseFinished) -> str:
    ev = event.evaluation
    width = len(str(event.total))
    repeat = f" #{ev.repeat + 1}" if ev.repeat else ""
    actual = ev.scored.actual if ev.scored.actual is not None else "-"
    expected = ev.case.expected if len(ev.case.expected) <= 12 else "..."
    line = (
        f"[{event.done:>{width}}/{event.total}] {inert_line(ev.case.case_id)}{repeat}  "
        f"expected={inert_line(expected)} "
        f"actual={inert_line(actual[:24])}  {ev.scored.outcome.value.upper()}"
        f"  {ev.completion.latency_ms / 1000:.2f}s"
    )
    if ev.reused:
        line += "  (reused)"
    if ev.completion.attempts > 1:
        line += f"  attempts={ev.completion.attempts}"
    return line


def format_summary(summary: dict[str, Any], status: str, message: str | None) -> str:
    prompt = f", prompt {inert_line(summary['prompt'])}" if summary.get("prompt") else ""
    lines = [f"Run {summary.get('run_id')} {status}: {inert_line(summary.get('model'))}{prompt}"]
    if message:
        lines.append(f"  {inert_line(message)}")
    lines.append(
        f"  cases {summary['cases']}  correct {summary['correct']}  wrong {summary['wrong']}"
        f"  unparsed {summary['unparsed']}  errors {summary['errors']}"
        + (f"  reused {summary['reused']}" if summary.get("reused") else "")
    )
    if summary.get("accuracy") is not None:
        low, high = summary["accuracy_ci"]
        lines.append(
            f"  accuracy {_pct(summary['accuracy'])} (95% CI {_pct(low)}-{_pct(high)})"
            f"  balanced {_pct(summary['balanced_accuracy'])}"
        )
        for app, stats in summary.get("apps", {}).items():
            lines.append(
                f"    {inert_line(app)}: {_pct(stats['accuracy'])} of {stats['cases']}"
                f" (unparsed {stats['unparsed']}, errors {stats['errors']})"
            )
    if summary.get("vuldetectbench"):
        from secbench_tui.core.vdb_scoring import crash_note

        lines.append(f"  VulDetectBench, {summary.get('vdb_scoring', 'correct')} scoring:")
        counts = summary.get("vuldetectbench_counts") or {}
        for task, metrics in summary["vuldetectbench"].items():
            shown = "  ".join(f"{k} {_pct(v)}" for k, v in metrics.items())
            note = crash_note(counts.get(task, {}))
            lines.append(f"    {inert_line(task)}: {shown}" + (f"  ({note})" if note else ""))
    cost = summary.get("cost")
    shown_cost = "n/a" if cost is None else f"${cost:.4f}"
    if cost is not None and summary.get("reused"):
        shown_cost += f" (${summary.get('spent') or 0.0:.4f} spent by this run, the rest reused)"
    lines.append(
        f"  tokens {summary['prompt_tokens']} in / {summary['completion_tokens']} out"
        + (f" ({summary['reasoning_tokens']} reasoning)" if summary.get("reasoning_tokens") else "")
        + f"  cost {shown_cost}"
        f"  wall {summary.get('wall_seconds', 0):.1f}s"
    )
    return "\n".join(lines)


def _started_line(event: RunStarted) -> str:
    what = "resumed" if event.resumed else "started"
    return (
        f"Run {event.run_id} {what}: {inert_line(event.model)}, {event.total} cases, "
        f"{event.pending} to ask, {event.reused} reused"
        + (f", concurrency {event.concurrency}" if event.concurrency > 1 else "")
        + (f", prompt {inert_line(event.prompt)}" if event.prompt else "")
    )


def print_event(event: Event, out: TextIO, err: TextIO, prefix: str = "") -> None:
    """One event as the headless runner shows it; `prefix` names the run in a matrix."""
    if isinstance(event, RunStarted):
        print(_started_line(event), file=out, flush=True)
        for skipped in event.skipped:
            print(f"warning: {inert_line(skipped)}", file=err, flush=True)
    elif isinstance(event, CaseFinished):
        print(prefix + format_case_line(event), file=out, flush=True)
        ev = event.evaluation
        if ev.scored.outcome is Outcome.ERROR:
            case_id, error = inert_line(ev.case.case_id), inert_line(ev.completion.error)
            print(f"{prefix}error: {case_id}: {error}", file=err, flush=True)
        if ev.completion.notes and not ev.reused:  # e.g. a cost that was not believed
            note = inert_line(ev.completion.notes)
            print(f"{prefix}note: {inert_line(ev.case.case_id)}: {note}", file=err, flush=True)
    elif isinstance(event, Retrying):
        n = event.notice
        print(
            f"{prefix}retry: {inert_line(n.case_id)} attempt {n.attempt} failed "
            f"({inert_line(n.reason)}); "
            f"waiting {n.wait_seconds:.1f}s",
            file=err,
            flush=True,
        )


async def consume(engine: Engine, out: TextIO, err: TextIO) -> RunFinished | None:
    finished: RunFinished | None = None
    async for event in engine.events():
        print_event(event, out, err)
        if isinstance(event, RunFinished):
            finished = event
    return finished


async def consume_matrix(matrix: Matrix, out: TextIO, err: TextIO) -> dict[int, RunFinished]:
    """Every run's events, lines prefixed with the run id when more than one run goes on."""
    several = len(matrix.runs) > 1
    run_ids: dict[int, int] = {}
    async for tagged in matrix.events():
        event = tagged.event
        if isinstance(event, RunStarted):
            run_ids[tagged.slot] = event.run_id
        prefix = f"run {run_ids[tagged.slot]}: " if several and tagged.slot in run_ids else ""
        print_event(event, out, err, prefix)
    return dict(matrix.finished)


def format_matrix(finished: list[RunFinished]) -> str:
    """Accuracy of every model x prompt, as one table after the runs' own summaries."""
    lines = ["Matrix (accuracy, 95% CI, balanced accuracy):"]
    for done in finished:
        s = done.summary
        acc = s.get("accuracy")
        figure = "n/a"
        if acc is not None:
            low, high = s.get("accuracy_ci") or (None, None)
            balanced = _pct(s.get("balanced_accuracy"))
            figure = f"{_pct(acc)} ({_pct(low)}-{_pct(high)})  balanced {balanced}"
        lines.append(
            f"  {inert_line(s.get('model'))}  x  {inert_line(s.get('prompt'))}: {figure}"
            f"  [run {done.run_id} {done.status}]"
        )
    return "\n".join(lines)


async def print_plan(settings: Settings, out: TextIO) -> int:
    """`--dry-run`: the runs, their requests after reuse, tokens and cost; nothing is asked."""
    from secbench_tui.core.catalog import load_catalog
    from secbench_tui.core.estimate import estimate, estimate_lines

    try:
        cells = plan_settings(settings)  # bad flags are said before anything is fetched
        remote = [one.model for one, _ in cells if not is_baseline(str(one.model))]
        catalog = (
            await load_catalog(settings.base_url) if remote else cached_catalog(settings.base_url)
        )
        # what each model's catalog entry decides (a reasoning model's max_tokens), as a run
        plan = plan_matrix(settings, False, catalog_defaults(settings, catalog))
    except UsageError as exc:
        print(f"secbench-tui: error: {inert(exc)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        store = await Store.open(settings.db) if settings.db.exists() else None
    except StoreError as exc:
        print(f"secbench-tui: error: {inert(exc)}", file=sys.stderr)
        return EXIT_ABORTED
    try:
        est = await estimate([r.spec for r in plan.runs], settings.sent_max_tokens, catalog, store)
    finally:
        if store is not None:
            await store.close()
    models = len({r.model for r in plan.runs})
    prompts = len({r.prompt for r in plan.runs})
    print(
        f"Plan: {len(plan.runs)} run(s) = {models} model(s) x {prompts} prompt(s), "
        f"repeats {settings.repeats}; dry run, nothing is sent",
        file=out,
    )
    for line in estimate_lines(est):
        print(line, file=out)
    if catalog.error and remote:
        print(f"note: {inert_line(catalog.error)}", file=out)
    return EXIT_OK


async def _run(settings: Settings) -> int:
    if settings.summary_json is not None and not settings.summary_json.parent.is_dir():
        print(
            f"secbench-tui: error: --summary-json {settings.summary_json}: folder "
            f"{settings.summary_json.parent} does not exist",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if settings.dry_run:
        return await print_plan(settings, sys.stdout)
    try:
        resolved = await resolve_matrix_defaults(settings)
        plan = plan_matrix(settings, resolved=resolved)
    except UsageError as exc:
        print(f"secbench-tui: error: {inert(exc)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        store = await Store.open(settings.db)
    except StoreError as exc:
        await plan.aclose()
        print(f"secbench-tui: error: {inert(exc)}", file=sys.stderr)
        return EXIT_ABORTED
    if settings.max_cost is not None and not all(r.provider.reports_cost for r in plan.runs):
        print(
            f"warning: --max-cost: {redact_url(settings.base_url)} may not report costs; "
            "the budget only counts costs the endpoint reports",
            file=sys.stderr,
        )
    matrix = Matrix(plan.runs, store)
    interrupts = 0
    terminated = False

    def on_signal(sig: signal.Signals) -> None:
        nonlocal interrupts, terminated
        interrupts += 1
        terminated = terminated or sig is signal.SIGTERM
        if interrupts == 1:
            what = "SIGTERM" if sig is signal.SIGTERM else "Ctrl+C"
            print(
                f"\nstopping ({what}): the requests in flight get {STOP_GRACE:g}s to "
                "finish, the rest are asked by --resume (Ctrl+C again to quit now)",
                file=sys.stderr,
                flush=True,
            )
            matrix.stop()
        else:
            os._exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal, sig)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        by_slot = await consume_matrix(matrix, sys.stdout, sys.stderr)
    except Exception as exc:  # a run could not even start (the database, most likely)
        print(f"secbench-tui: error: {type(exc).__name__}: {inert(exc)}", file=sys.stderr)
        return EXIT_ABORTED
    finally:
        await plan.aclose()
        await store.close()
    finished = [by_slot[slot] for slot in sorted(by_slot)]
    if not finished:
        return EXIT_ABORTED
    for done in finished:
        print(format_summary(done.summary, done.status, done.message), flush=True)
    if len(finished) > 1:
        print(format_matrix(finished), flush=True)
    unwritten = False  # every result is stored by now: a summary file that fails is reported
    if settings.summary_json is not None:
        try:
            write_summary_json(settings.summary_json, finished)
        except OSError as exc:
            unwritten = True
            reason = "it is a folder" if settings.summary_json.is_dir() else exc.strerror or exc
            print(
                f"secbench-tui: error: --summary-json {settings.summary_json}: cannot write it "
                f"({inert_line(reason)}); the results are in {settings.db}, pick another path",
                file=sys.stderr,
            )
    codes = []
    for done in finished:
        if done.status == "aborted":
            print(
                f"secbench-tui: run {done.run_id} aborted: {inert_line(done.message)}",
                file=sys.stderr,
            )
            codes.append(EXIT_ABORTED)
        elif done.status == "stopped" and interrupts:
            codes.append(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)
    return worst_exit(codes) or (EXIT_FAILED if unwritten else EXIT_OK)


def worst_exit(codes: list[int]) -> int:
    """An aborted run outweighs a terminated or interrupted one, which outweighs success."""
    for code in (EXIT_ABORTED, EXIT_TERMINATED, EXIT_INTERRUPTED):
        if code in codes:
            return code
    return EXIT_OK


def _summary_data(finished: RunFinished) -> dict[str, Any]:
    return {**finished.summary, "status": finished.status, "message": finished.message}


def write_summary_json(path: Path, finished: RunFinished | list[RunFinished]) -> None:
    """One run: its summary, as before (with `prompt`); several: `{"runs": [summary, ...]}`."""
    runs = finished if isinstance(finished, list) else [finished]
    data: dict[str, Any] = (
        _summary_data(runs[0]) if len(runs) == 1 else {"runs": [_summary_data(r) for r in runs]}
    )
    path.write_text(
        json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8"
    )


def run_headless(settings: Settings) -> int:
    return asyncio.run(_run(settings))
