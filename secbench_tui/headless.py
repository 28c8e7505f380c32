"""The headless front end: engine events -> progress lines, a summary and an exit code.

Progress goes to stdout, one line per finished case; problems go to stderr, one readable line
each. The first Ctrl+C (or SIGTERM) lets the cases in flight finish and closes the database
cleanly; a second one exits at once (every finished case is already committed).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, TextIO

from secbench_tui.cli import EXIT_ABORTED, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from secbench_tui.config import Settings
from secbench_tui.core.engine import Engine
from secbench_tui.core.events import CaseFinished, Event, Retrying, RunFinished, RunStarted
from secbench_tui.core.models import Outcome
from secbench_tui.core.store import Store, StoreError
from secbench_tui.core.untrusted import inert_line
from secbench_tui.session import UsageError, build_spec, load_suite, make_provider


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def format_case_line(event: CaseFinished) -> str:
    ev = event.evaluation
    width = len(str(event.total))
    repeat = f" #{ev.repeat + 1}" if ev.repeat else ""
    actual = ev.scored.actual if ev.scored.actual is not None else "-"
    line = (
        f"[{event.done:>{width}}/{event.total}] {ev.case.case_id}{repeat}  "
        f"expected={ev.case.expected if len(ev.case.expected) <= 12 else '...'} "
        f"actual={actual[:24]}  {ev.scored.outcome.value.upper()}"
        f"  {ev.completion.latency_ms / 1000:.2f}s"
    )
    if ev.reused:
        line += "  (reused)"
    if ev.completion.attempts > 1:
        line += f"  attempts={ev.completion.attempts}"
    return line


def format_summary(summary: dict[str, Any], status: str, message: str | None) -> str:
    lines = [f"Run {summary.get('run_id')} {status}: {summary.get('model')}"]
    if message:
        lines.append(f"  {message}")
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
                f"    {app}: {_pct(stats['accuracy'])} of {stats['cases']}"
                f" (unparsed {stats['unparsed']}, errors {stats['errors']})"
            )
    if summary.get("vuldetectbench"):
        from secbench_tui.core.vdb_scoring import crash_note

        lines.append(f"  VulDetectBench, {summary.get('vdb_scoring', 'correct')} scoring:")
        counts = summary.get("vuldetectbench_counts") or {}
        for task, metrics in summary["vuldetectbench"].items():
            shown = "  ".join(f"{k} {_pct(v)}" for k, v in metrics.items())
            note = crash_note(counts.get(task, {}))
            lines.append(f"    {task}: {shown}" + (f"  ({note})" if note else ""))
    cost = summary.get("cost")
    shown_cost = "n/a" if cost is None else f"${cost:.4f}"
    if cost is not None and summary.get("reused"):
        shown_cost += f" (${summary.get('spent') or 0.0:.4f} spent by this run, the rest reused)"
    lines.append(
        f"  tokens {summary['prompt_tokens']} in / {summary['completion_tokens']} out"
        f"  cost {shown_cost}"
        f"  wall {summary.get('wall_seconds', 0):.1f}s"
    )
    return "\n".join(lines)


async def consume(engine: Engine, out: TextIO, err: TextIO) -> RunFinished | None:
    finished: RunFinished | None = None
    event: Event
    async for event in engine.events():
        if isinstance(event, RunStarted):
            what = "resumed" if event.resumed else "started"
            print(
                f"Run {event.run_id} {what}: {event.model}, {event.total} cases, "
                f"{event.pending} to ask, {event.reused} reused"
                + (f", concurrency {event.concurrency}" if event.concurrency > 1 else ""),
                file=out,
                flush=True,
            )
            for skipped in event.skipped:
                print(f"warning: {skipped}", file=err, flush=True)
        elif isinstance(event, CaseFinished):
            print(format_case_line(event), file=out, flush=True)
            ev = event.evaluation
            if ev.scored.outcome is Outcome.ERROR:
                print(f"error: {ev.case.case_id}: {ev.completion.error}", file=err, flush=True)
            if ev.completion.notes and not ev.reused:  # e.g. a cost that was not believed
                note = inert_line(ev.completion.notes)
                print(f"note: {inert_line(ev.case.case_id)}: {note}", file=err, flush=True)
        elif isinstance(event, Retrying):
            n = event.notice
            print(
                f"retry: {n.case_id} attempt {n.attempt} failed ({n.reason}); "
                f"waiting {n.wait_seconds:.1f}s",
                file=err,
                flush=True,
            )
        elif isinstance(event, RunFinished):
            finished = event
    return finished


async def _run(settings: Settings) -> int:
    if settings.summary_json is not None and not settings.summary_json.parent.is_dir():
        print(
            f"secbench-tui: error: --summary-json {settings.summary_json}: folder "
            f"{settings.summary_json.parent} does not exist",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        suite = load_suite(settings)
        provider = make_provider(settings)
    except UsageError as exc:
        print(f"secbench-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        store = await Store.open(settings.db)
    except StoreError as exc:
        await provider.aclose()
        print(f"secbench-tui: error: {exc}", file=sys.stderr)
        return EXIT_ABORTED
    if settings.max_cost is not None and not provider.reports_cost:
        print(
            f"warning: --max-cost: {settings.base_url} may not report costs; "
            "the budget only counts costs the endpoint reports",
            file=sys.stderr,
        )
    engine = Engine(build_spec(settings, suite), provider, store)
    interrupts = 0

    def on_signal() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            print(
                "\nstopping: finishing the cases in flight (Ctrl+C again to quit now)",
                file=sys.stderr,
                flush=True,
            )
            engine.stop()
        else:
            os._exit(EXIT_INTERRUPTED)

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        finished = await consume(engine, sys.stdout, sys.stderr)
    except Exception as exc:  # the run could not even start (the database, most likely)
        print(f"secbench-tui: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ABORTED
    finally:
        await provider.aclose()
        await store.close()
    if finished is None:
        return EXIT_ABORTED
    print(format_summary(finished.summary, finished.status, finished.message), flush=True)
    unwritten = False  # every result is stored by now: a summary file that fails is reported
    if settings.summary_json is not None:
        try:
            write_summary_json(settings.summary_json, finished)
        except OSError as exc:
            unwritten = True
            reason = "it is a folder" if settings.summary_json.is_dir() else exc.strerror or exc
            print(
                f"secbench-tui: error: --summary-json {settings.summary_json}: cannot write it "
                f"({reason}); the results are in {settings.db}, pick another path",
                file=sys.stderr,
            )
    if finished.status == "aborted":
        print(f"secbench-tui: run aborted: {finished.message}", file=sys.stderr)
        return EXIT_ABORTED
    if finished.status == "stopped" and interrupts:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if unwritten else EXIT_OK


def write_summary_json(path: Path, finished: RunFinished) -> None:
    data = {**finished.summary, "status": finished.status, "message": finished.message}
    path.write_text(
        json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8"
    )


def run_headless(settings: Settings) -> int:
    return asyncio.run(_run(settings))
