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
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from secbench_tui.config import Settings
from secbench_tui.core.models import Outcome, RunStatus
from secbench_tui.core.results.summary import RunSummary, matrix_lines, plain, summary_lines
from secbench_tui.core.run.engine import Engine
from secbench_tui.core.run.events import (
    CaseFinished,
    CaseStarted,
    Event,
    Retrying,
    RunFinished,
    RunStarted,
)
from secbench_tui.core.run.matrix import PlannedRun, resumable, unmatched_unfinished
from secbench_tui.core.run.providers.baselines import is_baseline
from secbench_tui.core.store.database import Store
from secbench_tui.core.untrusted import inert_line, redact_url
from secbench_tui.errors import say_error
from secbench_tui.exit_codes import (
    EXIT_ABORTED,
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NO_ANSWERS,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
)
from secbench_tui.lifecycle import MatrixRun
from secbench_tui.planner import (
    Plan,
    UsageError,
    catalog_defaults,
    plan_matrix,
    plan_settings,
)
from secbench_tui.results_db import DatabaseError, check_path, open_results


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


def format_summary(summary: RunSummary, status: RunStatus | str, message: str | None) -> str:
    return plain(summary_lines(summary, status, message))


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
        out.write(f"{prefix}{format_case_line(event)}\n")  # one write a line, as print's
        out.flush()
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


class InCaseOrder:
    """Puts one run's finished cases back in case order for the printed lines.

    The engine reports a case the moment it is stored; the headless lines keep the order the
    cases were started in (a case still waiting holds the later lines back, never their
    results), numbered as they are printed. Cases reused from earlier runs print at once.
    """

    def __init__(self) -> None:
        self.started: deque[tuple[int, int]] = deque()
        self.held: dict[tuple[int, int], CaseFinished] = {}
        self.shown = 0

    def feed(self, event: Event) -> list[Event]:
        """What to print now for `event`, in order."""
        if isinstance(event, RunStarted):
            self.shown = event.total - event.pending - event.reused
            return [event]
        if isinstance(event, CaseStarted):
            self.started.append((event.index, event.repeat))
            return []
        if isinstance(event, CaseFinished):
            ev = event.evaluation
            key = (ev.index, ev.repeat)
            if ev.reused or key not in self.started:
                return [self._numbered(event)]
            self.held[key] = event
            ready: list[Event] = []
            while self.started and self.started[0] in self.held:
                ready.append(self._numbered(self.held.pop(self.started.popleft())))
            return ready
        if isinstance(event, RunFinished):  # a stop: what finished, then the end
            ready = [self._numbered(self.held.pop(k)) for k in self.started if k in self.held]
            self.started.clear()
            return [*ready, event]
        return [event]

    def _numbered(self, event: CaseFinished) -> CaseFinished:
        self.shown += 1
        return replace(event, done=self.shown)


async def consume(engine: Engine, out: TextIO, err: TextIO) -> RunFinished | None:
    finished: RunFinished | None = None
    order = InCaseOrder()
    async for event in engine.events():
        for shown in order.feed(event):
            print_event(shown, out, err)
        if isinstance(event, RunFinished):
            finished = event
    return finished


def silence_closed(*streams: TextIO) -> bool:
    """Point each stream whose reader went away (`| head`, `| less` quit) at /dev/null, so
    later lines (and the flush at exit) vanish quietly; True if any had."""
    closed = False
    for stream in streams:
        try:
            stream.flush()
        except BrokenPipeError:
            closed = True
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, stream.fileno())
            finally:
                os.close(devnull)
        except (OSError, ValueError):  # not a real file (a test's StringIO): nothing to do
            pass
    return closed


class Reader:
    """Whether whoever reads the output went away during the run."""

    gone = False


async def consume_matrix(
    matrix: MatrixRun, out: TextIO, err: TextIO, reader: Reader | None = None
) -> list[RunFinished]:
    """Every run's events, lines prefixed with the run id when more than one run goes on.

    When the reader goes away (`| head -1`), the runs stop as on Ctrl+C (the cases in flight
    get their grace, every finished case stays stored) and the rest of the output is dropped.
    """
    reader = reader or Reader()
    several = len(matrix.runs) > 1
    run_ids: dict[int, int] = {}
    orders: dict[int, InCaseOrder] = {}
    async for tagged in matrix.events():
        event = tagged.event
        if isinstance(event, RunStarted):
            if run_ids:  # the suite's skipped files were named with the first run
                event = replace(event, skipped=())
            run_ids[tagged.slot] = event.run_id
        prefix = f"run {run_ids[tagged.slot]}: " if several and tagged.slot in run_ids else ""
        for shown in orders.setdefault(tagged.slot, InCaseOrder()).feed(event):
            try:
                print_event(shown, out, err, prefix)
            except BrokenPipeError:
                silence_closed(out, err)
                if not reader.gone:
                    reader.gone = True
                    matrix.stop("the output's reader went away")
    return matrix.finished


def format_matrix(finished: list[RunFinished]) -> str:
    """Accuracy of every model x prompt, as one table after the runs' own summaries."""
    return plain(matrix_lines([(done.status, None, done.summary) for done in finished]))


async def print_plan(settings: Settings, out: TextIO) -> int:
    """`--dry-run`: the runs, their requests after reuse, tokens and cost; nothing is asked."""
    from secbench_tui.core.run.catalog import read_catalog
    from secbench_tui.core.run.context import context_overflows
    from secbench_tui.core.run.estimate import estimate, estimate_lines

    try:
        cells = plan_settings(settings)  # bad flags are said before anything is fetched
        remote = [one.model for one in cells if not is_baseline(one.model)]
        catalog = await read_catalog(settings.base_url, fetch="always" if remote else "never")
        # what each model's catalog entry decides (a reasoning model's max_tokens), as a run
        plan = plan_matrix(settings, False, catalog_defaults(settings, catalog))
    except UsageError as exc:
        say_error(exc)
        return EXIT_USAGE
    for skipped in plan.skipped:  # what the run would say first: the dry run is where to look
        print(f"warning: {inert_line(skipped)}", file=out)
    if plan.rewrites is not None:
        for line in plan.rewrites.lines():
            print(inert_line(line), file=out)
    try:
        check_path(settings.db, create=True)  # what the run would refuse, the dry run refuses
        store = await open_results(settings.db, create=False) if settings.db.exists() else None
    except DatabaseError as exc:
        say_error(exc)
        return exc.exit_code
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
    contexts = {r.model: getattr(catalog.find(r.model), "context_length", None) for r in plan.runs}
    for overflow in context_overflows([r.spec for r in plan.runs], contexts):
        refused = "sent anyway (--force)" if settings.force else "refused when run"
        print(f"warning: {overflow.message()}; {refused}", file=out)
    return EXIT_OK


async def _run(settings: Settings) -> int:
    if settings.summary_json is not None and not settings.summary_json.parent.is_dir():
        say_error(
            f"--summary-json {settings.summary_json}: folder "
            f"{settings.summary_json.parent} does not exist"
        )
        return EXIT_USAGE
    if settings.dry_run:
        return await print_plan(settings, sys.stdout)
    matrix = MatrixRun(settings)
    try:
        plan = await matrix.plan()
    except UsageError as exc:
        await matrix.aclose()
        say_error(exc)
        return EXIT_USAGE
    overflows = await matrix.refusals()
    if overflows:
        await matrix.aclose()
        for overflow in overflows:
            say_error(overflow.message())
        return EXIT_USAGE
    if settings.resume and not settings.db.exists():
        await matrix.aclose()
        print(f"nothing to resume: {settings.db} holds no run yet", file=sys.stderr)
        return EXIT_OK
    if plan.rewrites is not None:
        for line in plan.rewrites.lines():
            print(inert_line(line), file=sys.stderr)
    try:
        store = await matrix.open_store()
    except DatabaseError as exc:
        say_error(exc)
        return exc.exit_code
    if settings.resume and not await _keep_resumable(plan, store):
        await matrix.aclose()
        return EXIT_OK
    if settings.max_cost is not None and not all(r.provider.reports_cost for r in plan.runs):
        print(
            f"warning: --max-cost: {redact_url(settings.base_url)} may not report costs; "
            "the budget only counts costs the endpoint reports",
            file=sys.stderr,
        )
    reader = Reader()
    interrupts = 0
    terminated = False

    def on_signal(sig: signal.Signals) -> None:
        nonlocal interrupts, terminated
        interrupts += 1
        terminated = terminated or sig is signal.SIGTERM
        if interrupts == 1:
            what = "SIGTERM" if sig is signal.SIGTERM else "Ctrl+C"
            print(
                f"\nstopping ({what}): the requests in flight get {settings.stop_grace:g}s to "
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
    try:  # the providers and the store are closed however it ends
        finished = await consume_matrix(matrix, sys.stdout, sys.stderr, reader)
    except Exception as exc:  # a run could not even start (the database, most likely)
        say_error(f"{type(exc).__name__}: {exc}")
        return EXIT_ABORTED
    if not finished:
        return EXIT_ABORTED
    try:
        for done in finished:
            print(format_summary(done.summary, done.status, done.message), flush=True)
        if len(finished) > 1:
            print(format_matrix(finished), flush=True)
    except BrokenPipeError:
        reader.gone = silence_closed(sys.stdout, sys.stderr) or True
    unwritten = False  # every result is stored by now: a summary file that fails is reported
    if settings.summary_json is not None:
        try:
            write_summary_json(settings.summary_json, finished)
        except OSError as exc:
            unwritten = True
            reason = "it is a folder" if settings.summary_json.is_dir() else exc.strerror or exc
            say_error(
                f"--summary-json {settings.summary_json}: cannot write it "
                f"({inert_line(reason)}); the results are in {settings.db}, pick another path"
            )
    codes = []
    for done in finished:
        if done.status is RunStatus.ABORTED:
            print(
                f"secbench-tui: run {done.run_id} aborted: {inert_line(done.message)}",
                file=sys.stderr,
            )
            codes.append(EXIT_ABORTED)
        elif done.status is RunStatus.STOPPED and interrupts:
            codes.append(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)
        elif done.summary.no_answer:
            print(
                f"secbench-tui: run {done.run_id}: {inert_line(done.summary.no_answer)}",
                file=sys.stderr,
            )
            codes.append(EXIT_NO_ANSWERS)
    if reader.gone or silence_closed(sys.stdout, sys.stderr):
        codes.append(EXIT_BROKEN_PIPE)
    return worst_exit(codes) or (EXIT_FAILED if unwritten else EXIT_OK)


async def _keep_resumable(plan: Plan, store: Store) -> bool:
    """`--resume`: keep the runs that have an unfinished run to continue, name the others;
    False (and "nothing to resume") when no run is left to continue."""
    kept = await resumable(plan.runs, store)
    if not kept:
        print(
            "nothing to resume: no unfinished run with these settings "
            "(without --resume the cases are asked again, reusing what is stored)",
            file=sys.stderr,
        )
        for run in plan.runs:
            await _say_unmatched(run, store)
        return False
    for run in plan.runs:
        if run not in kept:
            print(
                f"note: nothing to resume for {inert_line(run.label)}: no unfinished run "
                "with these settings; left as it is",
                file=sys.stderr,
            )
            await _say_unmatched(run, store)
    plan.settings = [one for run, one in zip(plan.runs, plan.settings, strict=True) if run in kept]
    plan.runs = kept
    return True


async def _say_unmatched(run: PlannedRun, store: Store) -> None:
    """The unfinished runs `--resume` would not continue for this cell, and why each."""
    for line in await unmatched_unfinished(run.spec, store):
        print(f"  {inert_line(line)}", file=sys.stderr)


def worst_exit(codes: list[int]) -> int:
    """An aborted run outweighs a terminated or interrupted one, then a run without a single
    answer, which outweighs success."""
    for code in (
        EXIT_ABORTED,
        EXIT_TERMINATED,
        EXIT_INTERRUPTED,
        EXIT_BROKEN_PIPE,
        EXIT_NO_ANSWERS,
    ):
        if code in codes:
            return code
    return EXIT_OK


def _summary_data(finished: RunFinished) -> dict[str, Any]:
    data = finished.summary.model_dump()
    return {**data, "status": finished.status.value, "message": finished.message}


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
    try:
        return asyncio.run(_run(settings))
    except BrokenPipeError:  # the reader left while a line outside the run was written
        silence_closed(sys.stdout, sys.stderr)
        return EXIT_BROKEN_PIPE
