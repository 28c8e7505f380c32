"""Do two models take about the time of one? (a benchmark, not a test)

Runs the real command (`python -m secbench_tui --no-ui`) against the loopback OpenRouter server
(tests/e2e/server.py, in its own process) with 300 ms added to every request, at concurrency 2:
first one model, then two models in one command (each with its own concurrency of 2, as rate
limits are per model). Prints both wall times and their ratio; the target is at most 1.35x.
The one-model run is the baseline, taken in the same script run on the same machine.

Usage: python scripts/bench_matrix.py [--cases 40] [--delay 0.3] [--concurrency 2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scripts.bench_engine import Server  # noqa: E402
from tests.e2e.harness import cli_env, write_suite  # noqa: E402

MODELS = ("openai/gpt-4o-mini", "anthropic/claude-3.5-haiku")
TARGET = 1.35


def timed_run(
    base_url: str, work: Path, suite: Path, models: tuple[str, ...], args: argparse.Namespace
) -> float:
    db = work / f"r{len(models)}.db"
    command = [sys.executable, "-m", "secbench_tui", "--no-ui", "--base-url", base_url]
    for model in models:
        command += ["--model", model]
    command += ["--db", str(db), "--cases", str(suite), "--concurrency", str(args.concurrency)]
    started = time.perf_counter()
    result = subprocess.run(
        command, cwd=work, env=cli_env("sk-or-bench"), capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"the run failed ({result.returncode}): {result.stderr[-800:]}")
    return wall


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--cases", type=int, default=40)
    p.add_argument("--delay", type=float, default=0.3)
    p.add_argument("--concurrency", type=int, default=2)
    args = p.parse_args()
    server = Server(args.delay)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-matrix-") as tmp:
            work = Path(tmp)
            suite = work / "suite"
            write_suite(suite, {"app": ["good", "bad"] * (args.cases // 2)})
            one = timed_run(server.base_url, work, suite, MODELS[:1], args)
            two = timed_run(server.base_url, work, suite, MODELS, args)
    finally:
        server.stop()
    ideal = args.cases * args.delay / args.concurrency
    print(
        f"{args.cases} cases, {args.delay * 1000:.0f} ms per request, "
        f"concurrency {args.concurrency} per model (ideal per model {ideal:.1f} s)"
    )
    print(f"one model:  {one:6.2f} s (whole process)")
    print(f"two models: {two:6.2f} s (whole process, one command)")
    ratio = two / one
    verdict = "met" if ratio <= TARGET else "NOT met"
    print(f"ratio:      {ratio:6.2f}x (target <= {TARGET}x): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
