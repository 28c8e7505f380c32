"""`secbench-tui fix`: repair the cases of a suite that `--verify` fails, for its authors.

As the original security-bench's `fix` and `autofix` do, but nothing is written unproven:
`--verify` finds the cases whose label fails (a good case that breaks its property, a bad case
that no parameter set breaks); the model is asked for each case's code anew
(`core.fixes.proposals`: the SPEC, the case, what verify found, and for a bad case its rule and
nearest compliant twin); each proposal is proven on PostgreSQL as the case's label; a proven
one is written beside its case as `<case>.md.proposed` (the case file with its code replaced),
never over any file, for the author to review (`diff case.md case.md.proposed`). `--apply`
then replaces each case file by its proposal. The last lines say what was proven, what was
refused and why. Case ids, replies and database messages are foreign text: every line printed
goes through `inert_line`.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

from secbench_tui.config import Settings, is_bundled_suite
from secbench_tui.core.models import Case, Message
from secbench_tui.core.results.fixes import proposed_code_of
from secbench_tui.core.run.providers.base import Provider, RunAborted
from secbench_tui.core.run.providers.baselines import is_baseline
from secbench_tui.core.untrusted import inert_line
from secbench_tui.errors import UsageError, say_error
from secbench_tui.exit_codes import (
    EXIT_ABORTED,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
)

if TYPE_CHECKING:
    from secbench_tui.core.fixes.proposals import ProposalVerdict, Repair
    from secbench_tui.core.verify.stopping import Stop

PROPOSED = ".proposed"  # a proposal lies beside its case: <case>.md.proposed


@dataclass
class Repaired:
    """One failing case: proven and written, or refused, and why."""

    case_id: str
    proven: bool
    why: str


def proposal_path(case_file: Path) -> Path:
    return case_file.with_name(case_file.name + PROPOSED)


def _ask_message(repair: Repair, spec: str, root: Path) -> Case:
    from secbench_tui.core.fixes.proposals import repair_message
    from secbench_tui.core.verify.data import load_app_data, scenario_of

    data = load_app_data(repair.case.app, root / repair.case.app)[0]
    scenario = data.scenarios.get(scenario_of(repair.case.case_id) or "")
    text = repair_message(repair, spec, scenario)
    return Case(
        kind=repair.case.kind,
        app=repair.case.app,
        case_id=repair.case.case_id,
        test_file=repair.case.test_file,
        expected=repair.case.expected,
        code=repair.case.code,
        messages=(Message(role="user", content=text),),
    )


async def _ask(provider: Provider, asked: Sequence[Case]) -> list[tuple[str | None, str]]:
    """Each case's proposed code (None when the reply gives none) and what went wrong."""
    answers: list[tuple[str | None, str]] = []
    try:
        for case in asked:
            completion = await provider.complete(case)
            if completion.error is not None:
                answers.append((None, f"no reply: {completion.error}"))
                continue
            code = proposed_code_of(completion.text)
            why = "" if code is not None else "the reply gives no code (a JSON object with code)"
            answers.append((code, why))
    finally:
        await provider.aclose()
    return answers


def _write(case_file: Path, code: str) -> str | None:
    """The proposal written beside its case; why not, when it cannot be (never overwrites)."""
    from secbench_tui.core.suites.markdown import with_code

    target = proposal_path(case_file)
    try:
        text = with_code(case_file.read_text(encoding="utf-8"), code)
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot read {case_file.name} ({exc})"
    if text is None:
        return f"{case_file.name} has no fenced block under '# Code' to replace"
    try:
        with target.open("x", encoding="utf-8", newline="") as out:
            out.write(text)
    except FileExistsError:
        return (
            f"{target.name} is already there: review it (diff it with its case), then"
            " --apply it or delete it"
        )
    except OSError as exc:
        return f"cannot write {target.name} ({exc})"
    return None


def _say_verdict(repair: Repair, verdict: ProposalVerdict) -> None:
    state = "proven" if verdict.proven else "refused"
    twin = (
        f", {verdict.twin_lines} lines from its twin {verdict.twin}"
        if verdict.twin is not None
        else ""
    )
    why = f": {verdict.reason}" if verdict.reason else ""
    line = (
        f"{state:<9} {repair.case.case_id} ({repair.case.expected}; changes"
        f" {verdict.change_lines} lines{twin}){why}"
    )
    print(inert_line(line)[:600], flush=True)


def _propose(settings: Settings, pg_url: str | None, deadline: float, halt: Stop) -> int:
    """Verify, ask, prove, write: the exit code (0: every failing case has a proven proposal)."""
    from secbench_tui.core.fixes.proposals import repair_of, verify_proposals
    from secbench_tui.core.suites.markdown import load_markdown_suite, read_app_prompt
    from secbench_tui.core.suites.twins import twins_of
    from secbench_tui.core.verify import SUITE_CODE_NOTICE
    from secbench_tui.core.verify.deadline import Limits
    from secbench_tui.core.verify.models import Proof
    from secbench_tui.core.verify.runner import verify_suite
    from secbench_tui.lifecycle import make_provider
    from secbench_tui.verifying import proof_line

    root = settings.cases_dir
    print(inert_line(f"fix {root}: verify first, on PostgreSQL"), flush=True)
    if not is_bundled_suite(root):
        print(f"caution: {SUITE_CODE_NOTICE}", flush=True)
    limits = Limits(deadline=deadline)
    report = verify_suite(
        root, settings.apps, pg_url, None, limits, only=settings.filters, stop=halt
    )
    failing = [p for p in report.cases if p.proof is Proof.FAILED]
    for proof in failing:
        print(proof_line(proof), flush=True)
    if not failing:
        print(f"nothing to fix: verify fails none of the {len(report.cases)} cases", flush=True)
        return EXIT_OK
    suite = load_markdown_suite(root, settings.apps)
    by_id = {c.case_id: c for c in suite.cases}
    specs = {app.name: read_app_prompt(app.root / "SPEC.md") for app in suite.apps}
    outcomes: list[Repaired] = []
    repairs = []
    for proof in failing:
        case = by_id.get(proof.case_id)
        if case is None:
            outcomes.append(Repaired(proof.case_id, False, "its case file cannot be read"))
            continue
        repairs.append(repair_of(case, proof, twins_of(Path(case.test_file), case.app)))
    one = settings.run(settings.models[0])
    asked = [_ask_message(r, specs[r.case.app], root) for r in repairs]
    print(f"asking {inert_line(one.model)} to repair {len(asked)} cases", flush=True)
    answers = asyncio.run(_ask(make_provider(one, reply="proposal"), asked))
    proposals = []
    for repair, (code, why) in zip(repairs, answers, strict=True):
        if code is None:
            outcomes.append(Repaired(repair.case.case_id, False, why))
        else:
            proposals.append((repair, code))
    if proposals:
        proven = verify_proposals(root, proposals, pg_url, limits, _say_verdict, halt)
        for (repair, code), verdict in zip(proposals, proven.verdicts, strict=True):
            case_id = repair.case.case_id
            if not verdict.proven:
                outcomes.append(Repaired(case_id, False, verdict.reason))
            elif (refused := _write(Path(repair.case.test_file), code)) is not None:
                outcomes.append(Repaired(case_id, False, refused))
            else:
                written = proposal_path(Path(repair.case.test_file)).name
                outcomes.append(Repaired(case_id, True, f"written as {written}"))
    return _summary(outcomes)


def _summary(outcomes: Sequence[Repaired]) -> int:
    proven = [o for o in outcomes if o.proven]
    refused = [o for o in outcomes if not o.proven]
    for o in proven:
        print(inert_line(f"proposed  {o.case_id}: {o.why}"), flush=True)
    for o in refused:
        print(inert_line(f"refused   {o.case_id}: {o.why}")[:600], flush=True)
    print(
        f"{len(proven)} proposals proven and written, {len(refused)} refused"
        + ("; review each (diff <case>.md <case>.md.proposed), then --apply" if proven else ""),
        flush=True,
    )
    return EXIT_OK if not refused else EXIT_FAILED


def apply_proposals(root: Path, apps: Sequence[str] | None, filters: Sequence[str]) -> int:
    """Each `<case>.md.proposed` of the suite (its apps, the cases `--filter` picks) replaces
    its case file; the exit code (1 when one could not be applied)."""
    failed = 0
    applied = 0
    folders = [root / a for a in apps] if apps else sorted(p for p in root.iterdir() if p.is_dir())
    for folder in folders:
        for proposal in sorted(folder.glob(f"*.md{PROPOSED}")):
            case_file = proposal.with_name(proposal.name.removesuffix(PROPOSED))
            case_id = f"{folder.name}/{case_file.name}"
            if filters and not any(fnmatchcase(case_id, p) for p in filters):
                continue
            try:
                os.replace(proposal, case_file)
            except OSError as exc:
                failed += 1
                print(inert_line(f"not applied {case_id}: {exc}"), flush=True)
                continue
            applied += 1
            print(inert_line(f"applied   {case_id}"), flush=True)
    print(f"{applied} proposals applied" + (f", {failed} could not be" if failed else ""))
    return EXIT_FAILED if failed else EXIT_OK


def fix_suite_main(
    settings: Settings, pg_url: str | None, deadline: float, apply: bool = False
) -> int:
    """Entry point of `secbench-tui fix`: 0 when every failing case got a proven proposal (or
    none fails) and every proposal applied; 1 when some were refused; 2 for a usage error or
    no PostgreSQL; 3 when the endpoint cannot be used; 130/143 on Ctrl+C and SIGTERM."""
    from secbench_tui.core.suites.markdown import SuiteError

    root = settings.cases_dir
    if not root.is_dir():
        say_error(f"--cases {root}: no such directory")
        return EXIT_USAGE
    if not settings.models and not apply:
        say_error("fix: give --model ID (the model that proposes repairs), or --apply alone")
        return EXIT_USAGE
    if len(settings.models) > 1 or any(is_baseline(m) for m in settings.models):
        say_error("fix: give one --model that writes code (a baseline writes none)")
        return EXIT_USAGE
    code = EXIT_OK
    if settings.models:
        try:
            from secbench_tui.core.verify.server import Redactor, ServerError
            from secbench_tui.core.verify.stopping import Stop, Stopped
            from secbench_tui.verifying import stops
        except ImportError as exc:
            from secbench_tui.core.verify.extra import missing

            say_error(missing(exc).replace("--verify", "fix", 1))
            return EXIT_USAGE
        redactor = Redactor(pg_url)
        halt = Stop()
        seen: list[int] = []
        try:
            with stops(halt) as seen:
                code = _propose(settings, pg_url, deadline, halt)
        except (SuiteError, ServerError) as exc:
            say_error(redactor.scrub(inert_line(exc)))
            return EXIT_USAGE
        except UsageError as exc:  # no key for the endpoint
            say_error(exc)
            return EXIT_USAGE
        except RunAborted as exc:  # a bad key, no credits, an unknown model
            say_error(f"fix aborted: {inert_line(exc)}")
            return EXIT_ABORTED
        except (KeyboardInterrupt, Stopped):
            terminated = seen[:1] == [signal.SIGTERM]
            what = "stopped by SIGTERM" if terminated else "interrupted"
            say_error(
                f"fix {what}; nothing was written; its databases, roles and server are removed"
            )
            return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    if apply:
        code = max(code, apply_proposals(root, settings.apps, settings.filters))
    return code
