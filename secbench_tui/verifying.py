"""`secbench-tui --verify`: prove a suite's labels by execution and print one line per case.

Case files and database messages are suite text: every line goes through `inert_line`.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from secbench_tui.config import is_bundled_suite
from secbench_tui.core.untrusted import inert_line
from secbench_tui.core.verify import SUITE_CODE_NOTICE
from secbench_tui.core.verify.judge import witness_line
from secbench_tui.core.verify.models import (
    CaseProof,
    MutantOutcome,
    MutantResult,
    Proof,
    VerifyReport,
)
from secbench_tui.core.verify.stopping import Stop, Stopped
from secbench_tui.errors import say_error
from secbench_tui.exit_codes import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
)

if TYPE_CHECKING:  # (the rewrites gate needs the verify extra: imported when it runs)
    from secbench_tui.core.rewrites.strength import Strength

_LABEL = {Proof.PROVEN: "proven", Proof.FAILED: "FAILED", Proof.NOT_VERIFIABLE: "not verifiable"}


def proof_line(proof: CaseProof) -> str:
    """One case on one line; a proven bad case with its witness (set, rule, rows)."""
    text = f"{_LABEL[proof.proof]:<15} {proof.case_id} ({proof.expected})"
    if proof.proof is Proof.PROVEN and proof.witness is not None:
        if proof.other_rule:
            text += f" [by another rule than its rule {proof.rule}]"
        text += f": {witness_line(proof.witness)}"
    elif proof.detail and proof.proof is not Proof.PROVEN:
        text += f": {proof.detail}"
    return inert_line(text)


def summary_lines(report: VerifyReport, allow_unverified: bool = False) -> list[str]:
    lines = []
    for app in sorted({c.app for c in report.cases}):
        cases = [c for c in report.cases if c.app == app]
        counts = ", ".join(f"{sum(1 for c in cases if c.proof is p)} {p.value}" for p in Proof)
        lines.append(inert_line(f"{app}: {len(cases)} cases: {counts}"))
    counts = ", ".join(f"{report.count(p)} {p.value}" for p in Proof)
    lines.append(f"{len(report.cases)} cases: {counts} in {report.seconds:.1f} s")
    other = [c for c in report.cases if c.other_rule]
    if other:
        lines.append(
            f"note: {len(other)} bad cases are proven only by another rule than the one they are"
            " written to break: "
            + inert_line(", ".join(f"{c.case_id} (rule {c.rule})" for c in other))
        )
    unverifiable = [c for c in report.cases if c.proof is Proof.NOT_VERIFIABLE]
    if unverifiable:
        lines.append(
            f"{len(unverifiable)} cases are not verifiable (no proof either way): "
            + inert_line(", ".join(c.case_id for c in unverifiable))
        )
    failed = [c for c in report.cases if c.proof is Proof.FAILED]
    unverified = report.count(Proof.NOT_VERIFIABLE)
    if failed:
        lines.append(
            f"FAIL: {len(failed)} cases failed: " + inert_line(", ".join(c.case_id for c in failed))
        )
    elif report.count(Proof.PROVEN) == 0:
        lines.append("FAIL: no case carries verification data (see docs/verify.md)")
    elif unverified and not allow_unverified:
        lines.append(
            f"FAIL: {unverified} cases are not verifiable (each line above says why); "
            "--allow-unverified accepts them"
        )
    elif unverified:
        lines.append(f"OK: every verifiable case is proven ({unverified} not verifiable, allowed)")
    else:
        lines.append("OK: every case is proven")
    return lines


def passed(report: VerifyReport, allow_unverified: bool = False) -> bool:
    """The exit status's verdict: every case proven (not verifiable ones only if allowed)."""
    return report.ok and (allow_unverified or report.count(Proof.NOT_VERIFIABLE) == 0)


def percent(part: int, whole: int) -> str:
    """`50%`, `99.8%`; `n/a` of nothing."""
    if not whole:
        return "n/a"
    share = 100 * part / whole
    return f"{share:.0f}%" if share == round(share) else f"{share:.1f}%"


def _share(results: list[MutantResult]) -> str:
    """The mutation score, and beside it how many survivors were declared away and what the
    score would be without those declarations."""
    caught = sum(1 for m in results if m.outcome is MutantOutcome.CAUGHT)
    real = caught + sum(1 for m in results if m.outcome is MutantOutcome.SURVIVED)
    declared = sum(1 for m in results if m.outcome is MutantOutcome.EQUIVALENT)
    broken = sum(1 for m in results if m.outcome is MutantOutcome.BROKEN)
    extra = []
    if declared:
        extra.append(
            f"{declared} declared equivalent; without declarations {caught} of "
            f"{real + declared}, {percent(caught, real + declared)}"
        )
    if broken:
        extra.append(f"{broken} broken")
    more = f" ({'; '.join(extra)})" if extra else ""
    return f"{caught} of {real} real-flaw mutants caught, {percent(caught, real)}{more}"


def mutant_line(result: MutantResult) -> str:
    """One surviving (or broken) mutant: where to add data, on one line, with the guard's
    whole text when the description shortens it (what a declaration would name)."""
    where = f"{result.case_id}:{result.file_line}" if result.file_line else result.case_id
    detail = f": {result.detail}" if result.detail else ""
    whole = (
        f" (guard `{result.guard}`)"
        if result.guard and result.guard not in result.description
        else ""
    )
    return inert_line(
        f"{result.outcome.value:<9} {where} {result.kind}: {result.description}{whole}{detail}"
    )


def mutation_lines(report: VerifyReport) -> list[str]:
    """The mutation score per app and per scenario, then every survivor with case and line,
    and the declarations that were ignored (naming no mutant or several)."""
    results = report.mutants
    lines = [f"mutants: {len(results)} made in {report.mutants_seconds:.1f} s"]
    for app in sorted({m.app for m in results}):
        mine = [m for m in results if m.app == app]
        lines.append(inert_line(f"{app}: {_share(mine)}"))
        for scenario in sorted({m.scenario for m in mine}):
            those = [m for m in mine if m.scenario == scenario]
            lines.append(inert_line(f"  {scenario}: {_share(those)}"))
    lines.append(f"all apps: {_share(results)}")
    for m in results:
        if m.outcome in (MutantOutcome.SURVIVED, MutantOutcome.BROKEN):
            lines.append(mutant_line(m))
    for problem in report.ignored_declarations:
        lines.append(inert_line(f"ignored declaration {problem}"))
    return lines


def strength_lines(measured: list[Strength], seconds: float) -> list[str]:
    """The rewrites gate's strength per app (guard deletions it refused), then each scenario
    where it is under the floor, so its relations' variants would go unproven."""
    from secbench_tui.core.rewrites.strength import STRENGTH_FLOOR, Strength

    lines = [f"rewrites gate: fed the guard deletions of the good cases, in {seconds:.1f} s"]
    for app in sorted({s.app for s in measured}):
        mine = [s for s in measured if s.app == app]
        total = Strength(app, "", sum(s.rejected for s in mine), sum(s.fed for s in mine))
        strong = sum(1 for s in mine if s.strong)
        lines.append(
            inert_line(
                f"{app}: {total.text()}; at least {STRENGTH_FLOOR:.0%} on {strong} of "
                f"{len(mine)} scenarios"
            )
        )
        lines += [inert_line(f"  weak {s.scenario}: {s.text()}") for s in mine if not s.strong]
    return lines


def _gate_strength(
    cases_dir: Path, apps: list[str] | None, only: list[str], pg_url: str | None, halt: Stop
) -> tuple[list[Strength], float]:
    """Feed the gate every guard deletion of the good cases (kept proofs read back)."""
    from fnmatch import fnmatchcase

    from secbench_tui.core.rewrites.gate import prove_variants
    from secbench_tui.core.rewrites.proofs import ProofStore
    from secbench_tui.core.rewrites.strength import deletion_variants, strengths
    from secbench_tui.core.run.catalog import cache_dir
    from secbench_tui.core.suites.markdown import load_markdown_suite
    from secbench_tui.planning.rewrites import PROOFS_DIR

    cases = load_markdown_suite(cases_dir, apps).cases
    picked = [c for c in cases if not only or any(fnmatchcase(c.case_id, p) for p in only)]
    fed = deletion_variants(cases_dir, picked)
    store = ProofStore(cache_dir() / PROOFS_DIR)
    report = prove_variants(cases_dir, cases, fed, pg_url, stop=halt, proofs=store)
    return strengths(fed, report), report.seconds


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is so that every `finally` runs on the way out."""


@contextmanager
def stops(halt: Stop) -> Iterator[list[int]]:
    """Ctrl+C and SIGTERM become exceptions once (every `finally` on the way out drops what
    verify made); a second one quits at once, the embedded server removed first (`halt`)."""
    seen: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        seen.append(signum)
        if len(seen) == 1:
            halt.set()  # (a Python child's wait, a statement: ended at once)
            raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt
        say_error(
            "verify quit; its embedded PostgreSQL is removed (--pg-url: drop the "
            "secbench_* databases and roles by hand)"
        )
        halt.abandon()
        os._exit(EXIT_TERMINATED if signal.SIGTERM in seen else EXIT_INTERRUPTED)

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield seen
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def verify_main(
    cases_dir: Path,
    apps: list[str] | None,
    pg_url: str | None,
    mutants: bool = False,
    allow_unverified: bool = False,
    deadline: float = 10.0,
    only: list[str] | None = None,
    json_out: Path | None = None,
) -> int:
    from secbench_tui.core.suites.markdown import SuiteError

    if json_out is not None and not json_out.parent.is_dir():
        say_error(f"--json {json_out}: folder {json_out.parent} does not exist")
        return EXIT_USAGE

    try:
        from secbench_tui.core.verify.deadline import Limits
        from secbench_tui.core.verify.runner import verify_suite
        from secbench_tui.core.verify.server import Redactor, ServerError
    except ImportError as exc:
        from secbench_tui.core.verify.extra import missing

        say_error(missing(exc))
        return EXIT_USAGE
    redactor = Redactor(pg_url)

    def say(line: str) -> None:
        print(redactor.scrub(line), flush=True)

    def progress(proof: CaseProof) -> None:
        say(proof_line(proof))

    where = redactor.shown if pg_url else "the embedded PostgreSQL (pgserver)"
    say(inert_line(f"verify {cases_dir} on {where}"))
    if not is_bundled_suite(cases_dir):
        say(f"caution: {SUITE_CODE_NOTICE}")
    limits = Limits(deadline=deadline)
    halt = Stop()
    seen: list[int] = []
    measured: tuple[list[Strength], float] = ([], 0.0)
    try:
        with stops(halt) as seen:
            report = verify_suite(
                cases_dir,
                apps,
                pg_url,
                progress,
                limits,
                mutants=mutants,
                only=only or (),
                stop=halt,
            )
            if mutants:
                measured = _gate_strength(cases_dir, apps, only or [], pg_url, halt)
    except (SuiteError, ServerError) as exc:
        say_error(redactor.scrub(inert_line(exc)))
        return EXIT_USAGE
    except (KeyboardInterrupt, Stopped):  # (Stopped: a statement the stop ended, first)
        if seen[:1] == [signal.SIGTERM]:
            say_error("verify stopped by SIGTERM; its databases, roles and server are removed")
            return EXIT_TERMINATED
        say_error("verify interrupted; its databases, roles and server are removed")
        return EXIT_INTERRUPTED
    say(inert_line(f"ran on {report.engine}"))  # the server says what it is
    for line in summary_lines(report, allow_unverified):
        say(line)
    if mutants:
        for line in mutation_lines(report):
            say(line)
        for line in strength_lines(*measured):
            say(line)
    if json_out is not None and not _write_witnesses(json_out, report, cases_dir, apps):
        return EXIT_FAILED
    return EXIT_OK if passed(report, allow_unverified) else EXIT_FAILED


def _write_witnesses(
    path: Path, report: VerifyReport, cases_dir: Path, apps: list[str] | None
) -> bool:
    """`--json FILE`: every case's outcome and witness (`core.verify.witnesses`)."""
    import json

    from secbench_tui.core.suites.markdown import discover_apps
    from secbench_tui.core.verify.witnesses import python_apps, witness_document

    python = python_apps({app.name: app.root for app in discover_apps(cases_dir, apps)})
    document = witness_document(report, python)
    try:
        path.write_text(
            json.dumps(document.model_dump(), indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
    except OSError as exc:
        say_error(f"--json {path}: cannot write it ({inert_line(exc.strerror or exc)})")
        return False
    return True
