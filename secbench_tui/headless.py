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
import sys
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from secbench_tui.config import Settings
from secbench_tui.core.models import Outcome, RunStatus
from secbench_tui.core.results.lines import plain
from secbench_tui.core.results.summary import RunSummary, matrix_lines, summary_lines
from secbench_tui.core.run.batch.progress import progress_lines
from secbench_tui.core.run.engine import Engine
from secbench_tui.core.run.events import (
    BatchProgress,
    CaseFinished,
    CaseStarted,
    Event,
    Retrying,
    RunFinished,
    RunStarted,
)
from secbench_tui.core.run.matrix import PlannedRun, resumable, unmatched_unfinished
from secbench_tui.core.store.database import Store
from secbench_tui.core.untrusted import inert_line, redact_url
from secbench_tui.dry_run import print_plan
from secbench_tui.errors import UsageError, say_error
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
from secbench_tui.planning.plan import Plan, catalog_for
from secbench_tui.planning.stops import PlanStopped, plan_or_stop
from secbench_tui.results_db import DatabaseError, holds_results
from secbench_tui.run_signals import Signals


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
    elif isinstance(event, BatchProgress):
        out.write("".join(f"{prefix}{line}\n" for line in progress_lines(event)))
        out.flush()
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


async def _run(settings: Settings) -> int:
    """A headless command: the catalog read once, the plan made once, then the dry run
    prints it or the runs run it."""
    if settings.summary_json is not None and not settings.summary_json.parent.is_dir():
        say_error(
            f"--summary-json {settings.summary_json}: folder "
            f"{settings.summary_json.parent} does not exist"
        )
        return EXIT_USAGE
    try:
        catalog = await catalog_for(settings)
        plan = await plan_or_stop(settings, catalog)  # (it proves --rewrites on PostgreSQL)
    except UsageError as exc:
        say_error(exc)
        return EXIT_USAGE
    except PlanStopped as stopped:
        say_error(stopped)
        return stopped.exit_code
    if settings.dry_run:
        return await print_plan(plan, sys.stdout)
    return await run_plan(plan)


async def run_plan(plan: Plan) -> int:
    """The plan's runs, a line per finished case, then their summaries; the exit code is the
    worst of theirs."""
    started = await _start(plan)
    if isinstance(started, int):
        return started
    matrix, reader = started, Reader()
    signals = Signals(matrix, plan.settings.stop_grace)
    signals.listen(asyncio.get_running_loop())
    try:  # the providers and the store are closed however it ends
        finished = await consume_matrix(matrix, sys.stdout, sys.stderr, reader)
    except Exception as exc:  # a run could not even start (the database, most likely)
        say_error(f"{type(exc).__name__}: {exc}")
        return EXIT_ABORTED
    if not finished:
        return EXIT_ABORTED
    unverified = unproven = False
    if plan.settings.task == "fix" and not signals.count and not reader.gone:
        from secbench_tui.proving_fixes import verify_finished

        halt = signals.halt_for("verifying the fixes stops now; --rescore verifies the rest")
        try:
            finished, unverified = await verify_finished(plan.settings, finished, halt)
        finally:
            signals.halt = None
    if plan.settings.prove_findings and not signals.count and not reader.gone:
        from secbench_tui.proving import prove_finished

        halt = signals.halt_for(
            "proving ends; the results are stored, and --rescore --prove-findings proves them"
        )
        db, pg_url = plan.settings.db, plan.settings.pg_url
        finished, unproven = await prove_finished(db, pg_url, finished, stop=halt)
    try:
        for done in finished:
            print(format_summary(done.summary, done.status, done.message), flush=True)
        if len(finished) > 1:
            print(format_matrix(finished), flush=True)
    except BrokenPipeError:
        reader.gone = silence_closed(sys.stdout, sys.stderr) or True
    unwritten = not _write_summary_file(plan.settings, finished)
    codes = _run_exits(finished, signals)
    if signals.count:  # (a stop while the fixes were verified or the findings proven)
        codes.append(signals.exit_code)
    if reader.gone or silence_closed(sys.stdout, sys.stderr):
        codes.append(EXIT_BROKEN_PIPE)
    failed = unwritten or unverified or unproven
    return worst_exit(codes) or (EXIT_FAILED if failed else EXIT_OK)


async def _start(plan: Plan) -> MatrixRun | int:
    """What a run checks before its first request, in order: the key, the requests too large
    for their model, something to resume, the database. The runs ready to go, or the exit
    code when they may not start."""
    settings = plan.settings
    try:
        matrix = MatrixRun(plan)
    except UsageError as exc:
        say_error(exc)
        return EXIT_USAGE
    if plan.refused or (settings.resume and not holds_results(settings.db)):
        await matrix.aclose()
        for overflow in plan.refused:
            say_error(overflow.message())
        if plan.refused:
            return EXIT_USAGE
        print(f"nothing to resume: {settings.db} holds no run yet", file=sys.stderr)
        return EXIT_OK
    if plan.rewrites is not None:
        for line in plan.rewrites.lines():
            print(inert_line(line), file=sys.stderr)
    for line in plan.leak_lines():
        print(inert_line(line), file=sys.stderr)
    try:
        store = await matrix.open_store()
    except DatabaseError as exc:
        say_error(exc)
        return exc.exit_code
    if settings.resume and not await _keep_resumable(matrix, store):
        await matrix.aclose()
        return EXIT_OK
    if settings.max_cost is not None and not all(r.provider.reports_cost for r in matrix.runs):
        print(
            f"warning: --max-cost: {redact_url(settings.base_url)} may not report costs; "
            "the budget only counts costs the endpoint reports",
            file=sys.stderr,
        )
    return matrix


def _write_summary_file(settings: Settings, finished: list[RunFinished]) -> bool:
    """`--summary-json`, after every result is stored: False (and said) when it cannot be
    written."""
    if settings.summary_json is None:
        return True
    try:
        write_summary_json(settings.summary_json, finished)
    except OSError as exc:
        reason = "it is a folder" if settings.summary_json.is_dir() else exc.strerror or exc
        say_error(
            f"--summary-json {settings.summary_json}: cannot write it "
            f"({inert_line(reason)}); the results are in {settings.db}, pick another path"
        )
        return False
    return True


def _run_exits(finished: list[RunFinished], signals: Signals) -> list[int]:
    """Each run's own exit code, with what is wrong said on stderr."""
    codes = []
    for done in finished:
        if done.status is RunStatus.ABORTED:
            print(
                f"secbench-tui: run {done.run_id} aborted: {inert_line(done.message)}",
                file=sys.stderr,
            )
            codes.append(EXIT_ABORTED)
        elif done.status is RunStatus.STOPPED and signals.count:
            codes.append(signals.exit_code)
        elif done.summary.no_answer:
            print(
                f"secbench-tui: run {done.run_id}: {inert_line(done.summary.no_answer)}",
                file=sys.stderr,
            )
            codes.append(EXIT_NO_ANSWERS)
    return codes


async def _keep_resumable(matrix: MatrixRun, store: Store) -> bool:
    """`--resume`: keep the runs that have an unfinished run to continue, name the others;
    False (and "nothing to resume") when no run is left to continue."""
    kept = await resumable(matrix.runs, store)
    if not kept:
        print(
            "nothing to resume: no unfinished run with these settings "
            "(without --resume the cases are asked again, reusing what is stored)",
            file=sys.stderr,
        )
        for run in matrix.runs:
            await _say_unmatched(run, store)
        return False
    for run in matrix.runs:
        if run not in kept:
            print(
                f"note: nothing to resume for {inert_line(run.label)}: no unfinished run "
                "with these settings; left as it is",
                file=sys.stderr,
            )
            await _say_unmatched(run, store)
    matrix.keep(kept)
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
