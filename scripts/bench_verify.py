"""Benchmark `--verify`: the time to prove every label of the bundled suite (target < 2 min),
and the mutation report of the bundled suite (`--verify --mutants`).

Runs the real command in a fresh process (embedded PostgreSQL started and removed inside it),
then, in process, the same verification per app, and as a baseline taken in the same run the
cost no suite can avoid: starting and stopping the embedded PostgreSQL alone. Then verifies
every mutant of every good case and prints the share caught per app and scenario, every
survivor, and the time the mutants took beside the verify time. Prints the figures; asserts
nothing.

    python scripts/bench_verify.py [--repeat 1] [--no-mutants]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from secbench_tui.config import bundled_cases_dir  # noqa: E402
from secbench_tui.core.verify.models import Proof  # noqa: E402
from secbench_tui.core.verify.runner import verify_suite  # noqa: E402
from secbench_tui.verifying import mutation_lines  # noqa: E402

TARGET_S = 120.0


def server_alone() -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            server = pgserver.get_server(folder, cleanup_mode="delete")
            server.cleanup()
    return time.perf_counter() - started


def command() -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--verify"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    last = done.stdout.strip().splitlines()[-2] if done.stdout.strip() else done.stderr
    return time.perf_counter() - started, done.returncode, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-mutants", action="store_true", help="skip the mutation report")
    args = parser.parse_args()
    baseline = min(server_alone() for _ in range(args.repeat))
    print(f"baseline: embedded PostgreSQL start + stop alone   {baseline:6.1f} s")
    for _ in range(args.repeat):
        wall, code, summary = command()
        verdict = "within" if wall < TARGET_S else "OVER"
        print(f"secbench-tui --verify (fresh process)             {wall:6.1f} s  exit {code}")
        print(f"  {summary}")
        print(
            f"  {wall / baseline:.1f}x the server's own start/stop; {verdict} the "
            f"{TARGET_S:.0f} s target"
        )
    for app in ("purchase-order", "warehouse-management-system", "clinic-portal-api"):
        started = time.perf_counter()
        report = verify_suite(bundled_cases_dir(), [app])
        wall = time.perf_counter() - started
        proven = report.count(Proof.PROVEN)
        runs = sum(1 for _ in report.cases)
        print(f"{app:<32} {runs:3d} cases  {proven:3d} proven  {wall:6.1f} s in process")
    if args.no_mutants:
        return
    started = time.perf_counter()
    report = verify_suite(bundled_cases_dir(), mutants=True)
    wall = time.perf_counter() - started
    print(
        f"\n--verify --mutants in process: {wall:.1f} s in all: verify {report.seconds:.1f} s "
        f"({report.count(Proof.PROVEN)} of {len(report.cases)} cases proven), "
        f"mutants {report.mutants_seconds:.1f} s "
        f"({report.mutants_seconds / max(report.seconds, 0.001):.1f}x the verify time)"
    )
    print("\n".join(mutation_lines(report)))


if __name__ == "__main__":
    main()
