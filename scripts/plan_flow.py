"""How a headless command reaches its plan: which modules it goes down into, and how often.

Issue 29 asked that planning go down, not back and forth: a headless run entered the
planner three times (the catalog's defaults, the matrix, the context check), read the model
catalog three times (GET /models twice when the first failed), and the dry run planned by a
route of its own. This script counts it, for any checkout (run it with PYTHONPATH pointing at
another one to compare).

It runs the command in this process under `sys.setprofile` (every thread), from its start
until the first run's engine is made (`Matrix.__init__`; a dry run to its end), and keeps
each call from one module of the package into another; a coroutine's resumption is not a
call, nor is a method of a data object (only module-level functions count). It prints:

- entries: calls into the planning modules (`--planning`) from outside them;
- descents: calls from the front end (cli, headless, lifecycle, a worker thread) into the
  planning modules or the catalog; each after the first is a return to the front end that
  goes down again;
- catalog reads: calls that read the model catalog (its cache file or GET /models).

The default command is a matrix of an offline baseline and a remote model x two prompts,
one case each, against a closed port on 127.0.0.1 (the catalog cannot be fetched, the
remote runs abort): planning is all it exercises. Nothing but loopback is asked.

Usage: python scripts/plan_flow.py [--dry-run] [--planning MODULE] [--show]
"""

from __future__ import annotations

import argparse
import dis
import io
import os
import sys
import tempfile
import threading
from contextlib import redirect_stderr, redirect_stdout
from types import FrameType
from typing import Any

PACKAGE = "secbench_tui"
FRONT = ("secbench_tui.cli", "secbench_tui.headless", "secbench_tui.lifecycle", "<thread>")
CATALOG = "secbench_tui.core.run.catalog"
READS = {
    "read_catalog",  # the one way, since issue 29
    "lookup_models",  # the five before it
    "lookup_model",
    "load_catalog",
    "cached_catalog",
    "load_cache",
}
YIELD = dis.opmap["YIELD_VALUE"]
Call = tuple[str, str, str]  # caller's module, callee's module, callee's name


def module_of(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


def caller_module(frame: FrameType) -> str | None:
    """The nearest caller in the package (a thread's first frame: `<thread>`)."""
    back = frame.f_back
    while back is not None:
        if module_of(back).startswith(PACKAGE):
            return module_of(back)
        back = back.f_back
    return None if threading.current_thread() is threading.main_thread() else "<thread>"


def traced(argv: list[str]) -> tuple[int, list[Call]]:
    """Run the command, keeping the calls between two modules of the package."""
    from secbench_tui.cli import main

    calls: list[Call] = []
    tracing = [True]

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if not tracing[0] or event != "call" or not module_of(frame).startswith(PACKAGE):
            return
        code = frame.f_code
        if code.co_qualname == "Matrix.__init__":
            tracing[0] = False  # the runs start: planning is over
            return
        if frame.f_lasti >= 2 and code.co_code[frame.f_lasti - 2] == YIELD:
            return  # a coroutine resumed, not called
        caller = caller_module(frame)
        if caller is not None and caller != module_of(frame):
            calls.append((caller, module_of(frame), code.co_qualname))

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:  # the command's own output is not what is measured
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            code = main(argv)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return code, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="trace --dry-run instead")
    parser.add_argument(
        "--planning",
        default="secbench_tui.planning",
        help="the planning modules (secbench_tui.planner before issue 29)",
    )
    parser.add_argument("--show", action="store_true", help="list the calls counted")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["XDG_CACHE_HOME"] = scratch  # no cached catalog: as on a first run
        command = [
            *("--model", "baseline/random,vendor/remote", "--prompt", "default,attacker"),
            *("--limit", "1", "--db", os.path.join(scratch, "r.db"), "--max-retries", "0"),
            *("--base-url", "http://127.0.0.1:9/v1", "--dry-run" if args.dry_run else "--no-ui"),
        ]
        exit_code, calls = traced(command)

    def planning(module: str) -> bool:
        return module == args.planning or module.startswith(args.planning + ".")

    work = [c for c in calls if "." not in c[2] and c[2] != "<module>"]  # functions only
    entries = [c for c in work if planning(c[1]) and not planning(c[0])]
    descents = [c for c in work if c[0] in FRONT and (planning(c[1]) or c[1] == CATALOG)]
    reads = [c for c in work if c[1] == CATALOG and c[2] in READS]
    what = "--dry-run" if args.dry_run else "--no-ui"
    print(
        f"{what} (exit {exit_code}): {len(entries)} entries into {args.planning}, "
        f"{len(descents)} descents from the front end, {len(reads)} catalog reads"
    )
    if args.show:
        for caller, callee, name in sorted(set(entries + descents + reads), key=calls.index):
            print(f"  {caller} -> {callee}.{name}")


if __name__ == "__main__":
    main()
