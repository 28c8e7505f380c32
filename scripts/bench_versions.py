"""Is this version of secbench-tui slower than another, at a provider's latency?

Decides whether a speed trick pays for itself: the issue's rule is that one stays only if it
saves more than 3% of wall time at 100 ms provider latency and concurrency 10. This runs two
source trees of the tool, this one and `--base` (for instance `git archive <commit> | tar -x
-C /tmp/base`), as their own processes (`python -m secbench_tui --no-ui`) against the same
loopback server (tests/e2e/server.py, in a process of its own, adding `--delay` to every
request), in interleaved rounds: each round runs both, the order alternating from round to
round, so that both see the same machine. Ratios (this tree / base) are taken within a round;
the script prints their median and range over the rounds:

- wall: the run's own time (`wall_seconds` of its summary: first request to last stored
  result);
- process: the whole process, interpreter start to exit;
- cpu: processor time of the whole process (user + system, every thread, from `wait4`), which
  swings much less than wall time with whatever else runs on the machine.

Usage: python scripts/bench_versions.py --base /tmp/base [--cases 500] [--rounds 7]
       [--delay 0.1] [--concurrency 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scripts.bench_engine import MODEL, Server, make_suite  # noqa: E402


@dataclass
class Sample:
    wall: float  # the run's own time
    process: float  # the whole process
    cpu: float  # processor seconds of the whole process


def tool_env(tree: Path, cache: Path) -> dict[str, str]:
    """The command's environment: `tree` importable first, no key or proxy of the caller's,
    a cache folder of its own, and bytecode kept as an installed program keeps it."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.upper().startswith(("OPENROUTER_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"))
        and k.upper() not in ("NO_PROXY", "PYTHONDONTWRITEBYTECODE")
    }
    env["PYTHONPATH"] = str(tree)
    env["XDG_CACHE_HOME"] = str(cache)
    return env


def run_tool(
    tree: Path, base_url: str, suite: Path, work: Path, concurrency: int, check: bool = False
) -> Sample:
    db = Path(tempfile.mkdtemp(dir=work)) / "results.db"
    summary = db.with_suffix(".json")
    code = "import secbench_tui, sys; print(secbench_tui.__file__, file=sys.stderr)"
    args = [
        sys.executable,
        "-c",
        f"{code}; import runpy; runpy.run_module('secbench_tui', run_name='__main__')",
        "--no-ui",
        "--model",
        MODEL,
        "--base-url",
        base_url,
        "--db",
        str(db),
        "--cases",
        str(suite),
        "--concurrency",
        str(concurrency),
        "--max-retries",
        "0",
        "--summary-json",
        str(summary),
    ]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            args, cwd=db.parent, env=tool_env(tree, work / "cache"), stdout=out, stderr=err
        )
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        err.seek(0)
        stderr = err.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{tree} failed: {stderr[-2000:]}")
    loaded = Path(stderr.splitlines()[0]).resolve()
    if check and not loaded.is_relative_to(tree.resolve()):
        raise RuntimeError(f"meant to run the tool in {tree}, ran {loaded}")
    data = json.loads(summary.read_text(encoding="utf-8"))
    assert data["errors"] == 0, data
    return Sample(float(data["wall_seconds"]), elapsed, usage.ru_utime + usage.ru_stime)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.3f}x  (range {min(values):.3f}-{max(values):.3f})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--base", type=Path, required=True, help="source tree of the other version")
    p.add_argument("--cases", type=int, default=500)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--delay", type=float, default=0.1, help="seconds the server adds")
    p.add_argument("--concurrency", type=int, default=10)
    args = p.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-versions-"))
    ratios: dict[str, list[float]] = {"wall": [], "process": [], "cpu": []}
    trees = {"this": REPO_ROOT, "base": args.base}
    try:
        suite = make_suite(work / "suite", args.cases)
        cases = len(list(suite.glob("*/*.md"))) - 10
        ideal = cases * args.delay / args.concurrency
        print(
            f"this tree ({REPO_ROOT}) against {args.base}: {cases} cases, concurrency"
            f" {args.concurrency}, loopback server adding {args.delay * 1000:.0f} ms, "
            f"{args.rounds} interleaved rounds, {os.cpu_count()} CPUs, Python"
            f" {sys.version.split()[0]}; ideal wall {ideal:.2f} s",
            flush=True,
        )
        server = Server(args.delay)
        try:
            for tree in trees.values():  # untimed: bytecode, page cache, the server warmed
                run_tool(tree, server.base_url, suite, work, args.concurrency, check=True)
            for r in range(args.rounds):
                order = list(trees) if r % 2 == 0 else list(reversed(trees))
                got = {
                    name: run_tool(trees[name], server.base_url, suite, work, args.concurrency)
                    for name in order
                }
                this, base = got["this"], got["base"]
                ratios["wall"].append(this.wall / base.wall)
                ratios["process"].append(this.process / base.process)
                ratios["cpu"].append(this.cpu / base.cpu)
                print(
                    f"round {r + 1}: wall {this.wall:.3f}s/{base.wall:.3f}s"
                    f"  process {this.process:.3f}s/{base.process:.3f}s"
                    f"  cpu {this.cpu:.3f}s/{base.cpu:.3f}s   (this/base)",
                    flush=True,
                )
        finally:
            server.stop()
        print(f"\n{'figure':<10} this / base, median")
        for name, values in ratios.items():
            print(f"{name:<10} {spread(values)}")
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"\nload average at the end: {load} (1, 5, 15 min; {os.cpu_count()} CPUs)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
