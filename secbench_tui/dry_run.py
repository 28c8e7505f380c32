"""`--dry-run`: the plan printed, with what it would ask and cost; nothing is sent.

It prints the plan a run would run (`planning.plan.plan`, with the catalog read once): the
suite's skipped files, what `--rewrites` made, every run with its requests after reuse, tokens
and cost, and each request a run would refuse as larger than its model's context.
"""

from __future__ import annotations

from typing import TextIO

from secbench_tui.core.run.estimate import Estimate, estimate_lines
from secbench_tui.core.untrusted import inert_line
from secbench_tui.errors import say_error
from secbench_tui.exit_codes import EXIT_OK
from secbench_tui.planning.plan import Plan
from secbench_tui.results_db import DatabaseError, check_path, holds_results, open_results


async def print_plan(plan: Plan, out: TextIO) -> int:
    """Print `plan` and its estimate (what the database already holds is reused)."""
    db = plan.settings.db
    try:
        check_path(db, create=True)  # what the run would refuse, the dry run refuses
        store = await open_results(db, create=False) if holds_results(db) else None
    except DatabaseError as exc:
        say_error(exc)
        return exc.exit_code
    try:
        est = await plan.estimate(store)
    finally:
        if store is not None:
            await store.close()
    for line in plan_lines(plan, est):
        print(line, file=out)
    return EXIT_OK


def plan_lines(plan: Plan, est: Estimate) -> list[str]:
    """The plan as the dry run prints it, warnings first: the dry run is where to look."""
    settings = plan.settings
    lines = [f"warning: {inert_line(skipped)}" for skipped in plan.skipped]
    if plan.rewrites is not None:
        lines += [inert_line(line) for line in plan.rewrites.lines()]
    lines += [inert_line(line) for line in plan.leak_lines()]
    lines.append(
        f"Plan: {len(plan.cells)} run(s) = {len(plan.models)} model(s) x "
        f"{len(plan.prompts)} prompt(s), repeats {settings.repeats}; dry run, nothing is sent"
    )
    lines += estimate_lines(est)
    if plan.catalog.error:  # asked only for a remote model's entry, and it failed
        lines.append(f"note: {inert_line(plan.catalog.error)}")
    refused = "sent anyway (--force)" if settings.force else "refused when run"
    lines += [f"warning: {overflow.message()}; {refused}" for overflow in plan.overflows]
    return lines
