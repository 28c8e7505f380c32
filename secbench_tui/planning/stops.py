"""Ctrl+C and SIGTERM while a headless command plans: the proving of `--rewrites` stops.

Planning proves `--rewrites` on PostgreSQL (`planning.plan.plan`, in a thread): a signal must
end the statement or child process in flight at once, start nothing more and send nothing;
the proving then unwinds through its `finally` blocks, which drop its databases and roles and
remove the embedded server. A second signal quits at once, the embedded server stopped and
its folder removed first. Once the runs go on, `run_signals.Signals` takes over.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import TYPE_CHECKING

from secbench_tui.config import Settings
from secbench_tui.core.run.catalog import Catalog
from secbench_tui.core.verify.stopping import Stop, Stopped
from secbench_tui.exit_codes import EXIT_INTERRUPTED, EXIT_TERMINATED
from secbench_tui.planning.plan import Plan, plan

if TYPE_CHECKING:
    from secbench_tui.core.rewrites.progress import Proving

REMOVED = "the rewrites' databases, roles and embedded PostgreSQL are removed"


class PlanStopped(Exception):
    """A signal stopped the planning; `exit_code` is the command's, the message its last
    words on stderr."""

    def __init__(self, terminated: bool, rewrites: bool) -> None:
        what = "SIGTERM" if terminated else "Ctrl+C"
        removed = f"; {REMOVED}" if rewrites else ""
        super().__init__(f"stopped ({what}) before any request was sent{removed}")
        self.exit_code = EXIT_TERMINATED if terminated else EXIT_INTERRUPTED


def _say_proving(proving: Proving) -> None:
    """How far the proving of `--rewrites` is, on stderr (at most once a second)."""
    print(proving.line(), file=sys.stderr, flush=True)


async def plan_or_stop(settings: Settings, catalog: Catalog) -> Plan:
    """`plan(settings, catalog)` in a thread, Ctrl+C and SIGTERM stopping it (PlanStopped)."""
    stop = Stop()
    seen: list[bool] = []  # SIGTERM?

    def arrived(sig: signal.Signals) -> None:
        seen.append(sig is signal.SIGTERM)
        if len(seen) > 1:
            stop.abandon()
            os._exit(EXIT_TERMINATED if any(seen) else EXIT_INTERRUPTED)
        what = "SIGTERM" if seen[0] else "Ctrl+C"
        print(
            f"\nstopping ({what}): nothing is sent; the planning stops now"
            " (Ctrl+C again to quit now)",
            file=sys.stderr,
            flush=True,
        )
        stop.set()

    loop = asyncio.get_running_loop()
    listening = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, arrived, sig)
            listening.append(sig)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        made = await asyncio.to_thread(plan, settings, catalog, stop, _say_proving)
    except Stopped:
        raise PlanStopped(any(seen), bool(settings.rewrites)) from None
    finally:
        for sig in listening:
            loop.remove_signal_handler(sig)
    if seen:  # a stop while planning (without rewrites to prove): nothing starts either
        raise PlanStopped(any(seen), bool(settings.rewrites))
    return made
