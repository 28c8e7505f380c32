"""Ctrl+C and SIGTERM in a headless run (`headless.run_plan`), and after it.

While the runs go on, a first signal starts no new case and gives the requests in flight their
grace, a second exits at once (every finished case is stored). Once the runs are over, while a
fix run's fixes are verified (`--task fix`) or the findings proven (`--prove-findings`), a first
signal stops that through verify's `Stop`, and a second removes the embedded server before the
process exits.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from secbench_tui.core.verify.stopping import Stop
from secbench_tui.exit_codes import EXIT_INTERRUPTED, EXIT_TERMINATED
from secbench_tui.lifecycle import MatrixRun


class Signals:
    """Ctrl+C and SIGTERM while the runs go on: the first starts no new case and gives the
    requests in flight their grace; a second exits at once (every finished case is stored)."""

    def __init__(self, matrix: MatrixRun, grace: float) -> None:
        self.matrix, self.grace = matrix, grace
        self.count = 0
        self.terminated = False
        # once the runs are over, while a fix run's fixes are verified or the findings proven
        # (--prove-findings): a first signal stops that, a second removes the embedded server
        # before the process exits; `halted` says what a first signal ends
        self.halt: Stop | None = None
        self.halted = ""

    def halt_for(self, halted: str) -> Stop:
        """A new `halt`, whose first signal ends what `halted` says."""
        self.halt, self.halted = Stop(), halted
        return self.halt

    def listen(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.arrived, sig)
            except (NotImplementedError, RuntimeError):
                pass

    def arrived(self, sig: signal.Signals) -> None:
        self.count += 1
        self.terminated = self.terminated or sig is signal.SIGTERM
        if self.count > 1:
            if self.halt is not None:  # the embedded server goes, even now
                self.halt.abandon()
            os._exit(self.exit_code)
        what = "SIGTERM" if sig is signal.SIGTERM else "Ctrl+C"
        if self.halt is not None:
            print(
                f"\nstopping ({what}): {self.halted} (Ctrl+C again to quit now)",
                file=sys.stderr,
                flush=True,
            )
            self.halt.set()
            return
        print(
            f"\nstopping ({what}): the requests in flight get {self.grace:g}s to "
            "finish, the rest are asked by --resume (Ctrl+C again to quit now)",
            file=sys.stderr,
            flush=True,
        )
        self.matrix.stop()

    @property
    def exit_code(self) -> int:
        return EXIT_TERMINATED if self.terminated else EXIT_INTERRUPTED
