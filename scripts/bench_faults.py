"""The fault tax: how much longer a run takes when the endpoint is flaky (a benchmark, not a test).

Runs the real command (`python -m secbench_tui --no-ui`) twice per round against the loopback
OpenRouter server (tests/e2e/server.py, in its own process), with the same suite, concurrency
and latency:

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
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tests.e2e import server as srv  # noqa: E402
from tests.e2e.harness import cli_env, write_suite  # noqa: E402

MODEL = "openai/gpt-4o-mini"


def faults() -> list[srv.Behaviour]:
    return [
        srv.rate_limited(0),
        srv.server_error(500),
        srv.server_error(502),
        srv.server_error(503),
        srv.error_in_body(502),
        srv.dropped(),
    ]


def serve(latency: float, fault_rate: float, seed: int) -> int:
    """The server process: answers like the loopback server, with faults mixed in."""
    rng = random.Random(seed)
    lock = threading.Lock()
    mix = faults()

    def respond(request: srv.ReceivedRequest) -> srv.Behaviour:
        with lock:
            faulty = rng.random() < fault_rate
            fault = rng.choice(mix)
        return fault if faulty else srv.expected_verdict(request)

    server = srv.LoopbackServer(default=respond, delay=latency, keep_bodies=False)
    with server:
        print(f"base_url {server.base_url}", flush=True)
        sys.stdin.read()  # until the parent closes it
    return 0


class Server:
    def __init__(self, latency: float, fault_rate: float, seed: int) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                "--latency",
                str(latency),
                "--fault-rate",
                str(fault_rate),
                "--seed",
                str(seed),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        match = re.match(r"base_url (\S+)", line)
        if not match:
            self.stop()
            raise RuntimeError(f"the loopback server did not start: {line!r}")
        self.base_url = match.group(1)

    def requests(self) -> int:
        root = self.base_url.rsplit("/api/v1", 1)[0]
        with urllib.request.urlopen(f"{root}/_stats") as response:  # noqa: S310 - loopback
            return int(json.load(response)["requests"])

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_once(
    label: str, suite: Path, work: Path, args: argparse.Namespace, fault_rate: float, seed: int
) -> tuple[float, int]:
    """Wall seconds of one run (as the engine timed it) and the requests the server saw."""
    server = Server(args.latency, fault_rate, seed)
    try:
        db = work / f"{label}.db"
        summary = work / f"{label}.json"
        started = time.perf_counter()
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "secbench_tui",
                "--no-ui",
                "--model",
                MODEL,
                "--base-url",
                server.base_url,
                "--cases",
                str(suite),
                "--db",
                str(db),
                "--concurrency",
                str(args.concurrency),
                "--summary-json",
                str(summary),
            ],
            cwd=work,
            env=cli_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        process = time.perf_counter() - started
        if result.returncode != 0:
            raise RuntimeError(f"{label}: exit {result.returncode}\n{result.stderr[-2000:]}")
        data = json.loads(summary.read_text(encoding="utf-8"))
        if data["cases"] != args.cases or data["errors"]:
            raise RuntimeError(f"{label}: {data['cases']} cases, {data['errors']} errors")
        wall = float(data["wall_seconds"])
        requests = server.requests()
    finally:
        server.stop()
    print(
        f"  {label:<8} wall {wall:6.2f} s  (process {process:6.2f} s)  "
        f"requests {requests} for {args.cases} cases",
        flush=True,
    )
    return wall, requests


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--cases", type=int, default=240)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--latency", type=float, default=0.1, help="seconds per request")
    p.add_argument("--fault-rate", type=float, default=0.1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        return serve(args.latency, args.fault_rate, args.seed)

    print(
        f"{args.cases} cases, concurrency {args.concurrency}, {args.latency * 1000:.0f} ms per "
        f"request, {args.fault_rate:.0%} of requests faulty in the fault runs",
        flush=True,
    )
    ratios = []
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp:
        work = Path(tmp)
        apps = 3
        per_app = args.cases // apps
        verdicts = {f"app{a}": ["bad", "good"] * (per_app // 2) for a in range(apps)}
        write_suite(work / "suite", verdicts)
        args.cases = apps * (per_app // 2) * 2
        for n in range(1, args.rounds + 1):
            print(f"round {n}", flush=True)
            clean, _ = run_once(f"clean{n}", work / "suite", work, args, 0.0, args.seed + n)
            faulty, _ = run_once(
                f"faults{n}", work / "suite", work, args, args.fault_rate, args.seed + n
            )
            ratios.append(faulty / clean)
            print(f"  ratio    {faulty / clean:.2f}", flush=True)
    print(
        f"fault tax: median ratio {statistics.median(ratios):.2f} "
        f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)}; target <= 1.30)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
