"""`--prove-findings`: run the exploits of a run's replies in verify's sandbox, store what each
proved, and give the runs' figures (`core.results.findings`).

After a run (headless) or on stored runs (`--rescore --prove-findings`): each result's reply
is read again for its exploits (verdict schema 3), every exploit is run on PostgreSQL against
its case and the case's compliant twins (`core.verify.exploits`), and one `findings` row per
result is written, whatever the exploit held. A result without an exploit is stored as such,
so the figures count it. Case ids, exploits and database messages are foreign text: every
line printed goes through `inert_line`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from secbench_tui.core.results.findings import (
    FindingSummary,
    OfferedExploit,
    finding_summary,
    findings_of_reply,
    stored_finding,
)
from secbench_tui.core.run.events import RunFinished
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.findings import StoredFinding
from secbench_tui.core.store.location import StoreLocation
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.values import now_iso
from secbench_tui.core.suites.exploit_verdict import MAX_EXPLOITS
from secbench_tui.core.untrusted import inert_line
from secbench_tui.core.verify.stopping import Stop, Stopped

if TYPE_CHECKING:  # the verify extra's: imported when proving
    from secbench_tui.core.verify.exploits import ExploitProof, Finding


@dataclass
class Proving:
    """What proving some runs did: their figures after it, or the error that stopped it."""

    summaries: dict[int, FindingSummary | None] = field(default_factory=dict)
    error: str | None = None
    engine: str = ""
    exploits: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        if self.error is not None:
            return f"findings not proven: {inert_line(self.error)}"
        return (
            f"proved {self.exploits} exploits on {inert_line(self.engine or 'no server')}"
            f" in {self.seconds:.1f} s"
        )


def _offered(row: ResultRow) -> list[OfferedExploit]:
    """The exploits of an original markdown case's reply (a variant's are not proven: its
    case id names no scenario of the suite)."""
    if row.get("suite_kind", "markdown") != "markdown" or row.get("variant") is not None:
        return []
    if row.get("outcome") not in ("correct", "wrong"):
        return []
    return findings_of_reply(row.get("raw_reply"))


def _progress(out: TextIO | None) -> Callable[[Finding, ExploitProof], None]:
    def say(finding: Finding, proof: ExploitProof) -> None:
        if out is None:
            return
        why = f" ({proof.reason.value})" if proof.reason is not None else ""
        text = f"proof: {finding.case.case_id} rule {finding.rule}: {proof.outcome.value}{why}"
        if proof.reason is not None and proof.detail:
            text += f": {proof.detail}"
        print(inert_line(text)[:400], file=out, flush=True)

    return say


def _prove_suite(
    root: Path,
    rows: Sequence[ResultRow],
    pg_url: str | None,
    deadline: float,
    out: TextIO | None,
    stop: Stop | None = None,
) -> tuple[list[StoredFinding], int, str]:
    """Every row's finding (in a thread: psycopg and the prover are synchronous)."""
    from secbench_tui.core.verify.deadline import Limits
    from secbench_tui.core.verify.exploits import (
        PROVING_VERSION,
        Finding,
        finding_case,
        prove_findings,
    )

    offered = {int(row.get("id") or 0): _offered(row) for row in rows}
    findings, owners = [], []  # each finding, and the result it is of
    for row in rows:
        row_id = int(row.get("id") or 0)
        case = finding_case(
            str(row.get("app") or ""),
            str(row.get("case_id") or ""),
            str(row.get("test_file") or ""),
            str(row.get("expected_result") or "").strip().lower(),
            str(row.get("code") or ""),
        )
        for n, exploit in enumerate(offered[row_id][:MAX_EXPLOITS]):
            findings.append(Finding((row_id, n), case, exploit.rule, exploit.exploit))
            owners.append(row_id)
    limits = Limits(deadline=deadline)
    report = prove_findings(root, findings, pg_url, limits, _progress(out), stop)
    proofs: dict[int, list[dict[str, object]]] = {}
    for row_id, proof in zip(owners, report.proofs, strict=True):
        proofs.setdefault(row_id, []).append(proof.to_json())
    when = now_iso()
    stored = [
        stored_finding(
            row_id, found, proofs.get(row_id, []), PROVING_VERSION, report.engine or None, when
        )
        for row_id, found in offered.items()
    ]
    return stored, len(findings), report.engine


async def prove_runs(
    store: Store,
    run_ids: Sequence[int],
    pg_url: str | None = None,
    deadline: float = 10.0,
    out: TextIO | None = None,
    stop: Stop | None = None,
) -> Proving:
    """Prove the findings of these runs (markdown runs; others have none) and store them;
    a `stop` ends it (what a run proved is stored only once the run is done)."""
    import time

    from secbench_tui.core.suites.markdown import SuiteError
    from secbench_tui.core.verify.server import ServerError

    started = time.monotonic()
    done = Proving()
    for run_id in run_ids:
        run = await store.run(run_id)
        if run is None or run.suite_kind != "markdown":
            continue
        rows = await store.run_results(run_id)
        try:
            stored, exploits, engine = await asyncio.to_thread(
                _prove_suite, Path(run.suite_path), rows, pg_url, deadline, out, stop
            )
        except Stopped:
            done.error = f"stopped before run {run_id}'s findings were all proven"
            break
        except (ServerError, SuiteError, ImportError) as exc:
            done.error = str(exc)
            if isinstance(exc, ImportError):
                from secbench_tui.core.verify.extra import missing

                done.error = missing(exc)
            break
        await store.record_findings(stored)
        done.exploits += exploits
        done.engine = engine or done.engine
        done.summaries[run_id] = finding_summary(await store.run_results(run_id))
    done.seconds = time.monotonic() - started
    return done


async def prove_finished(
    db: StoreLocation,
    pg_url: str | None,
    finished: list[RunFinished],
    stop: Stop | None = None,
) -> tuple[list[RunFinished], bool]:
    """`--prove-findings` after a headless run: each finished run's exploits proven, the
    runs with their findings figures, and whether proving failed (said on stderr: the results
    stay stored, and `--rescore --prove-findings` proves them later)."""
    from secbench_tui.after_run import check_finished

    async def prove(store: Store, run_ids: list[int]) -> Proving:
        return await prove_runs(store, run_ids, pg_url, out=sys.stderr, stop=stop)

    return await check_finished(
        db,
        finished,
        doing="proving the findings",
        later="--rescore --prove-findings proves them later",
        figure="findings",
        work=prove,
    )
