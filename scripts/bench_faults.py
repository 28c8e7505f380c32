"""The fault tax: how much longer a run takes when the endpoint is flaky (a benchmark, not a test).

Runs the real command (`python -m secbench_tui --no-ui`, with its default retries) twice per
round against the loopback OpenAI-compatible server (scripts/harness/loopback.py, in its own
process), with the same suite, concurrency and latency:

- clean: every request answered after `--latency` seconds;
- faults: each request, independently and with probability `--fault-rate` (seeded), meets a
  transient fault instead, after the same latency: a 429 with `Retry-After: 0`, a 500, 502 or
  503, a 200 carrying an error, or a dropped connection.

It prints each run's wall time (as the run itself timed it), the requests the server saw, and
the ratio faults / clean of each round, and their median. The target is at most 1.3.

Usage: python scripts/bench_faults.py [--cases 240] [--concurrency 8] [--latency 0.1]
                                      [--fault-rate 0.1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scripts.harness import figures  # noqa: E402
from scripts.harness.loopback import Loopback  # noqa: E402
from scripts.harness.processes import run_tool  # noqa: E402
from scripts.harness.suites import case_count, write_suite  # noqa: E402

TARGET = 1.3


def run_once(
    label: str, suite: Path, work: Path, args: argparse.Namespace, fault_rate: float, seed: int
) -> float:
    """Wall seconds of one run (as the engine timed it); prints it with the requests made."""
    with Loopback(args.latency, fault_rate=fault_rate, seed=seed) as server:
        (work / label).mkdir()
        data, m = run_tool(
            server.base_url, suite, work / label / "results.db", args.concurrency, max_retries=None
        )
        requests = server.requests()
    cases = case_count(suite)
    if data["cases"] != cases or data["errors"]:
        raise RuntimeError(f"{label}: {data['cases']} cases, {data['errors']} errors")
    wall = float(data["wall_seconds"])
    print(
        f"  {label:<8} wall {wall:6.2f} s  (process {m.elapsed:6.2f} s)  "
        f"requests {requests} for {cases} cases",
        flush=True,
    )
    return wall


def main(argv: list[str] | None = None) -> int:
    p = figures.parser(__doc__, cases=240, rounds=3, latency=0.1, concurrency=8)
    p.add_argument("--fault-rate", type=float, default=0.1, help="share of requests faulted")
    p.add_argument("--seed", type=int, default=1, help="the faults' seed (plus the round)")
    args = p.parse_args(argv)
    print(
        f"{args.cases} cases, concurrency {args.concurrency}, {args.latency * 1000:.0f} ms per "
        f"request, {args.fault_rate:.0%} of requests faulty in the fault runs; "
        f"{figures.machine()}",
        flush=True,
    )
    ratios = []
    with figures.workdir("bench-faults-", args.keep) as work:
        apps = 3
        per_app = max(2, args.cases // apps)
        suite = write_suite(
            work / "suite", {f"app{a}": ["bad", "good"] * (per_app // 2) for a in range(apps)}
        )
        for n in range(1, args.rounds + 1):
            print(f"round {n}", flush=True)
            clean = run_once(f"clean{n}", suite, work, args, 0.0, args.seed + n)
            faulty = run_once(f"faults{n}", suite, work, args, args.fault_rate, args.seed + n)
            ratios.append(faulty / clean)
            print(f"  ratio    {faulty / clean:.2f}", flush=True)
    print(
        f"fault tax: median ratio {statistics.median(ratios):.2f} "
        f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)}; target <= {TARGET:.2f}); "
        f"load average at the end {figures.load()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
