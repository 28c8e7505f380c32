"""`secbench-tui --rescore`: score the stored replies again after a change to scoring.

No request is sent and no key is read: every figure is recomputed from the raw replies in the
database (`core/results/regrading.py`), then the counts of what changed are printed. `--runs`
and `--models` select the runs as they do for `--report` and `--export`. The fixes of
`--task fix` runs among them are verified again on PostgreSQL (`proving_fixes`), and each such
run's fix figures are printed: a fix is judged from its stored reply, never asked again. With
`--prove-findings`, the exploits of the stored replies are proven again on PostgreSQL
(`proving`), and each run's proven-finding figures are printed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Sequence

from secbench_tui.core.results.regrading import RescoreReport, rescore
from secbench_tui.core.results.report.selection import unknown_models
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.location import StoreLocation
from secbench_tui.core.verify.stopping import Stop
from secbench_tui.errors import say_error
from secbench_tui.exit_codes import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
)
from secbench_tui.results_db import DatabaseError, open_results


async def _verify_fixes(store: Store, runs: Sequence[int], pg_url: str | None) -> int:
    """The fix runs among `runs` (all of the database's when none is named), verified again."""
    from secbench_tui.core.results.lines import plain
    from secbench_tui.core.results.summary import fix_lines
    from secbench_tui.core.untrusted import inert_line
    from secbench_tui.proving_fixes import is_fix_run, verify_runs

    fix_runs = [r.id for r in await store.runs(run_ids=runs) if is_fix_run(r.settings.task)]
    if not fix_runs:
        return EXIT_OK
    checking = await verify_runs(store, fix_runs, pg_url, out=sys.stderr)
    if checking.error is not None:
        say_error(checking.line())
        return EXIT_FAILED
    print(checking.line())
    for run_id, summary in checking.summaries.items():
        run = await store.run(run_id)
        print(f"Run {run_id}: {inert_line(run.model_name if run else '?')}")
        print(plain(fix_lines(summary)) or "  no answer to a bad case to verify")
    return EXIT_OK


class _Stops:
    """Ctrl+C and SIGTERM while stored runs are proven: the first ends the proving (the
    statement or child in flight too) and removes its databases, roles and embedded server;
    a second quits at once, the embedded server removed first. Without this, Ctrl+C would
    cancel the wait but not the proving thread, which the process would then wait for."""

    def __init__(self, halt: Stop) -> None:
        self.halt = halt
        self.seen: list[signal.Signals] = []

    def listen(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.arrived, sig)
            except (NotImplementedError, RuntimeError):
                pass

    def forget(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.remove_signal_handler(sig)
            except (NotImplementedError, RuntimeError):
                pass

    def arrived(self, sig: signal.Signals) -> None:
        self.seen.append(sig)
        if len(self.seen) > 1:
            say_error("proving quit; its embedded PostgreSQL is removed")
            self.halt.abandon()
            os._exit(self.exit_code)
        what = "SIGTERM" if sig is signal.SIGTERM else "Ctrl+C"
        print(
            f"\nstopping ({what}): proving ends; what it proved of the run in progress is not"
            " stored (Ctrl+C again to quit now)",
            file=sys.stderr,
            flush=True,
        )
        self.halt.set()

    @property
    def exit_code(self) -> int:
        return EXIT_TERMINATED if signal.SIGTERM in self.seen else EXIT_INTERRUPTED


async def _prove(store: Store, runs: Sequence[int], pg_url: str | None) -> int:
    """`--prove-findings`: the exploits of the markdown runs among `runs` proven again."""
    from secbench_tui.core.results.findings_text import findings_lines
    from secbench_tui.core.results.lines import plain
    from secbench_tui.core.untrusted import inert_line
    from secbench_tui.proving import prove_runs

    run_ids = list(runs) or [r.id for r in await store.runs() if r.suite_kind == "markdown"]
    stops, loop = _Stops(Stop()), asyncio.get_running_loop()
    stops.listen(loop)
    try:
        proving = await prove_runs(store, run_ids, pg_url, out=sys.stderr, stop=stops.halt)
    finally:
        stops.forget(loop)
    if proving.error is not None:
        say_error(proving.line())
        return stops.exit_code if stops.seen else EXIT_FAILED
    print(proving.line())
    for run_id, summary in proving.summaries.items():
        run = await store.run(run_id)
        name = inert_line(run.model_name if run else "?")
        print(f"Run {run_id}: {name}")
        print(plain(findings_lines(summary)) or "  no markdown result to prove")
    return EXIT_OK


async def _rescore_main(
    db: StoreLocation,
    runs: Sequence[int],
    models: Sequence[str],
    pg_url: str | None,
    prove_findings: bool,
) -> int:
    try:
        store = await open_results(db, create=False, runs=runs)
    except DatabaseError as exc:
        say_error(exc)
        return exc.exit_code
    try:
        if models:  # as --report and --export take them: each must have a run there
            every = await store.runs()
            unknown = unknown_models(models, [r.model_name for r in every], db)
            if unknown:
                say_error(unknown)
                return EXIT_USAGE
            runs = [r.id for r in every if r.model_name in models and (not runs or r.id in runs)]
        # no run of the models among --runs: nothing to rescore (no runs at all means all)
        if models and not runs:
            print(RescoreReport().text())
            return EXIT_OK
        report = await rescore(store, runs)
        print(report.text())
        fixed = await _verify_fixes(store, runs, pg_url)
        if fixed != EXIT_OK or not prove_findings:
            return fixed
        return await _prove(store, runs, pg_url)
    finally:
        await store.close()


def rescore_main(
    db: StoreLocation,
    runs: Sequence[int] | None,
    models: Sequence[str] | None = None,
    pg_url: str | None = None,
    prove_findings: bool = False,
) -> int:
    """Entry point of `--rescore`: 0 when done; 1 when the fixes of a fix run cannot be
    verified or, with --prove-findings, the findings cannot be proven (no PostgreSQL); 2 when
    --db names no database, --runs a run it does not hold or --models a model with no run
    there, 3 when it cannot be used (as for every command: `results_db`)."""
    return asyncio.run(_rescore_main(db, runs or (), models or (), pg_url, prove_findings))
