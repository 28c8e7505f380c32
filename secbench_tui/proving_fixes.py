"""`--task fix`: verify the fixes of a run's replies on PostgreSQL, store what each proved,
and give the runs' fix figures (`core.results.fixes`).

After a fix run (headless) or on stored runs (`--rescore`): each result of a bad case has its
reply read again for the fixed code, every fix is run in verify's sandbox as a good case of its
scenario and compared with the scenario's compliant twins (`core.fixes.verifying`), and one
`fixes` row per result is written, whatever the reply held: a result with no reply, or none
the code can be read from, is stored as such, so the figures count it. Case ids, codes and
database messages are foreign text: every line printed goes through `inert_line`.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from secbench_tui.config import Settings
from secbench_tui.core.fixes.models import FIXING_VERSION, FixOutcome, FixVerdict
from secbench_tui.core.models import Case, Outcome, SuiteKind
from secbench_tui.core.results.fix_figures import FixSummary
from secbench_tui.core.results.fixes import fix_summary, fixed_code_of
from secbench_tui.core.run.events import RunFinished
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.fixes import StoredFix
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.values import now_iso
from secbench_tui.core.untrusted import inert_line

if TYPE_CHECKING:  # the verify extra's: imported when verifying
    from secbench_tui.core.fixes.verifying import FixJob
    from secbench_tui.core.verify.stopping import Stop


@dataclass
class FixChecking:
    """What verifying some runs' fixes did: their figures after it, or the error that
    stopped it (the results stay stored: `--rescore` verifies them later)."""

    summaries: dict[int, FixSummary | None] = field(default_factory=dict)
    error: str | None = None
    stopped: bool = False  # by Ctrl+C or SIGTERM
    engine: str = ""
    fixes: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        if self.error is not None:
            return f"fixes not verified: {inert_line(self.error)}"
        return (
            f"verified {self.fixes} fixes on {inert_line(self.engine or 'no server')}"
            f" in {self.seconds:.1f} s"
        )


def is_fix_run(settings_task: str | None) -> bool:
    return settings_task == "fix"


def _bad_rows(rows: Sequence[ResultRow]) -> list[ResultRow]:
    """The results a fix was asked for: bad markdown cases (every repeat), originals."""
    return [
        row
        for row in rows
        if row.get("suite_kind", "markdown") == SuiteKind.MARKDOWN.value
        and row.get("variant") is None
        and str(row.get("expected_result") or "").strip().lower() == "bad"
    ]


def _case(row: ResultRow) -> Case:
    return Case(
        kind=SuiteKind.MARKDOWN,
        app=str(row.get("app") or ""),
        case_id=str(row.get("case_id") or ""),
        test_file=str(row.get("test_file") or ""),
        expected="bad",
        code=str(row.get("code") or ""),
    )


def _stored(
    row_id: int, code: str | None, verdict: FixVerdict, engine: str, when: str
) -> StoredFix:
    return StoredFix(
        evaluation_id=row_id,
        fixed_code=code,
        outcome=verdict.outcome.value,
        reason=verdict.reason or None,
        secure=verdict.secure,
        functional=verdict.functional,
        twin=verdict.twin,
        change_lines=verdict.change_lines,
        detail=verdict.detail_json(),
        fixing_version=FIXING_VERSION,
        engine=engine or None,
        fixed_at=when,
    )


def _progress(out: TextIO | None) -> Callable[[FixJob, FixVerdict], None]:
    def say(job: FixJob, verdict: FixVerdict) -> None:
        if out is None:
            return
        why = f": {verdict.reason}" if verdict.reason else ""
        text = f"fix: {job.case.case_id}: {verdict.outcome.value}{why}"
        print(inert_line(text)[:400], file=out, flush=True)

    return say


def _verify_rows(
    root: Path,
    rows: Sequence[ResultRow],
    pg_url: str | None,
    deadline: float,
    out: TextIO | None,
    stop: Stop | None,
) -> tuple[list[StoredFix], int, str]:
    """Every bad row's fix verified (in a thread: psycopg and the verifier are synchronous).
    The same code for the same case (another repeat, another run of the suite) is the same
    question: it is verified once."""
    from secbench_tui.core.fixes.verifying import FixJob, verify_fixes
    from secbench_tui.core.verify.deadline import Limits

    settled: dict[int, tuple[str | None, FixVerdict]] = {}
    jobs: dict[tuple[str, str, str], FixJob] = {}
    asked: dict[int, tuple[str, str, str]] = {}
    for row in _bad_rows(rows):
        row_id = int(row.get("id") or 0)
        if row.get("outcome") == Outcome.ERROR.value:
            settled[row_id] = (None, FixVerdict(FixOutcome.NO_ANSWER, "the case got no reply"))
            continue
        code = fixed_code_of(row.get("raw_reply"))
        if code is None:
            why = "the reply gives no fixed code (verdict schema 4's fixed_code)"
            settled[row_id] = (None, FixVerdict(FixOutcome.UNPARSED, why))
            continue
        case = _case(row)
        key = (case.case_id, case.code, code)
        jobs.setdefault(key, FixJob(case, code))
        asked[row_id] = key
    unique = list(jobs)
    report = verify_fixes(
        root, [jobs[k] for k in unique], pg_url, Limits(deadline=deadline), _progress(out), stop
    )
    verdicts = dict(zip(unique, report.verdicts, strict=True))
    for row_id, key in asked.items():
        settled[row_id] = (key[2], verdicts[key])
    when = now_iso()
    stored = [
        _stored(row_id, code, verdict, report.engine, when)
        for row_id, (code, verdict) in sorted(settled.items())
    ]
    return stored, len(unique), report.engine


async def verify_runs(
    store: Store,
    run_ids: Sequence[int],
    pg_url: str | None = None,
    deadline: float = 10.0,
    out: TextIO | None = None,
    stop: Stop | None = None,
) -> FixChecking:
    """Verify the fixes of these runs (the fix runs among them) and store them: the runs of
    one suite together, on one server, each scenario's twins run once for all of them."""
    from secbench_tui.core.suites.markdown import SuiteError

    try:
        from secbench_tui.core.verify.server import ServerError
        from secbench_tui.core.verify.stopping import Stopped
    except ImportError as exc:  # no verify extra: nothing can be verified
        return FixChecking(error=missing_extra(exc))
    started = time.monotonic()
    done = FixChecking()
    by_suite: dict[str, list[int]] = {}
    for run_id in run_ids:
        run = await store.run(run_id)
        if run is not None and run.suite_kind == "markdown" and is_fix_run(run.settings.task):
            by_suite.setdefault(run.suite_path, []).append(run_id)
    for suite_path, ids in by_suite.items():
        rows = [row for run_id in ids for row in await store.run_results(run_id)]
        try:
            stored, fixes, engine = await asyncio.to_thread(
                _verify_rows, Path(suite_path), rows, pg_url, deadline, out, stop
            )
        except (ServerError, SuiteError) as exc:
            done.error = str(exc)
            break
        except Stopped:
            done.error = "stopped before every fix was verified (--rescore verifies them)"
            done.stopped = True
            break
        except ImportError as exc:  # no verify extra
            done.error = missing_extra(exc)
            break
        await store.record_fixes(stored)
        done.fixes += fixes
        done.engine = engine or done.engine
        for run_id in ids:
            rows_now = await store.run_results(run_id, with_text=False)
            done.summaries[run_id] = fix_summary(rows_now)
    done.seconds = time.monotonic() - started
    return done


def missing_extra(exc: ImportError) -> str:
    """What to install when the verifier cannot be imported."""
    from secbench_tui.core.verify.extra import missing

    return missing(exc).replace("--verify", "--task fix", 1)


async def verify_finished(
    settings: Settings, finished: list[RunFinished], stop: Stop
) -> tuple[list[RunFinished], bool]:
    """After a headless fix run: each finished run's fixes verified on PostgreSQL; the runs
    with their fix figures, and whether verifying failed (said on stderr: the results stay
    stored, and `--rescore` verifies them later). `stop` (Ctrl+C, SIGTERM) ends it at once,
    the databases, roles and embedded server removed on the way out."""
    from secbench_tui.after_run import check_finished

    async def verify(store: Store, run_ids: list[int]) -> FixChecking:
        return await verify_runs(store, run_ids, settings.pg_url, out=sys.stderr, stop=stop)

    return await check_finished(
        settings.db,
        finished,
        doing="verifying the fixes",
        later="--rescore verifies their fixes later",
        figure="fixes",
        work=verify,
    )
