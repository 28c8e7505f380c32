"""Running the tool (or any command) in a process of its own, and what that process cost.

`measure` runs a command to its end and returns its whole time, its processor time (user +
system of every thread, from `wait4`) and its peak resident memory as GNU time reports it: a
child's own `ru_maxrss` is not that, since Linux carries the high-water mark of the process
that forked it into the child across exec, so every child of a benchmark would report at least
the benchmark's own memory. GNU time, a 2 MB process, starts the command instead.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripts.harness import MODEL, REPO_ROOT

GNU_TIME = shutil.which("time", path="/usr/bin:/bin")


@dataclass(frozen=True)
class Measured:
    elapsed: float  # seconds, the whole process
    cpu: float  # processor seconds of the whole process (user + system, all threads)
    peak_mb: float | None  # None without GNU time
    stdout: str


@functools.cache
def _scratch_cache() -> str:
    """A cache folder for this benchmark's commands, removed when it ends: never `~/.cache`."""
    folder = tempfile.mkdtemp(prefix="secbench-bench-cache-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def bench_env(root: Path = REPO_ROOT, **extra: str) -> dict[str, str]:
    """The environment of a measured command: the tool imported from `root`, no key or proxy
    of the caller's, a cache folder of this benchmark's own, and bytecode cached as an
    installed program has it (PYTHONDONTWRITEBYTECODE, set in CI, would make every start
    compile the tool's modules again)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.upper().startswith(("OPENROUTER_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"))
        and k.upper() not in ("NO_PROXY", "PYTHONDONTWRITEBYTECODE")
    }
    env["PYTHONPATH"] = os.pathsep.join(
        [str(root), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    )
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("XDG_CACHE_HOME", _scratch_cache())
    env.update(extra)
    return env


def measure(args: list[str], cwd: Path, env: dict[str, str]) -> Measured:
    """Run `args` to its end; raise with its error output if it fails. Output goes to files,
    so a process that writes more than a pipe holds never waits for this one to read."""
    with (
        tempfile.TemporaryFile() as out_f,
        tempfile.TemporaryFile() as err_f,
        tempfile.NamedTemporaryFile("r") as peak_f,
    ):
        command = [GNU_TIME, "-f", "%M", "-o", peak_f.name, *args] if GNU_TIME else args
        started = time.perf_counter()
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=out_f, stderr=err_f)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read().decode(), err_f.read().decode()
        peak = float(peak_f.read().split()[-1]) / 1024 if GNU_TIME else None
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{' '.join(args[:4])} ... failed ({code}): {err[-2000:]}")
    return Measured(elapsed, usage.ru_utime + usage.ru_stime, peak, out)


def tool_command(
    base_url: str,
    suite: Path,
    db: Path,
    concurrency: int,
    *extra: str,
    models: Sequence[str] = (MODEL,),
    max_retries: int | None = 0,
) -> list[str]:
    """`python -m secbench_tui --no-ui` on `suite` into `db`, a summary beside it; no retries
    unless `max_retries` says (None: the tool's default)."""
    args = [sys.executable, "-m", "secbench_tui", "--no-ui"]
    for model in models:
        args += ["--model", model]
    args += ["--base-url", base_url, "--db", str(db), "--cases", str(suite)]
    args += ["--concurrency", str(concurrency)]
    args += ["--summary-json", str(db.with_suffix(".summary.json"))]
    if max_retries is not None:
        args += ["--max-retries", str(max_retries)]
    return [*args, *extra]


def run_tool(
    base_url: str,
    suite: Path,
    db: Path,
    concurrency: int,
    *extra: str,
    root: Path = REPO_ROOT,
    prefix: Sequence[str] = (),
    models: Sequence[str] = (MODEL,),
    max_retries: int | None = 0,
) -> tuple[dict[str, Any], Measured]:
    """One real run from `db`'s folder: its summary (`--summary-json`) and what it cost.
    `prefix` goes between the interpreter and `-m` (e.g. `-m cProfile -o out.prof`)."""
    args = tool_command(
        base_url, suite, db, concurrency, *extra, models=models, max_retries=max_retries
    )
    args[1:1] = prefix
    measured = measure(args, db.parent, bench_env(root))
    summary = json.loads(db.with_suffix(".summary.json").read_text(encoding="utf-8"))
    return summary, measured
