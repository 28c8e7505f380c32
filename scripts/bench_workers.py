"""Cases per second for 1, 2 and 4 workers sharing one run (`--worker`) on PostgreSQL.

Each configuration runs the same suite against a fast loopback model (scripts/harness/
loopback.py, a process of its own, `--latency` per request) into a fresh database on one
embedded PostgreSQL (pgserver): N worker processes started together with `--worker`, each at
`--concurrency`. The figure is the run's cases over its wall time, from the first worker's
start to the last one's exit (process start-up included, as a team's CI job pays it). The
baseline, in the same round, is one process running the same suite into a PostgreSQL store
without `--worker` (no queue, no shared rate): the ratio says what the queue costs one worker,
and what more workers bring. Rounds interleave the configurations, so every one sees the same
machine; the median of the rounds is printed, with the range.

Usage: python scripts/bench_workers.py [--cases 400] [--rounds 3] [--latency 0.0]
                                       [--concurrency 8]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scripts.harness.loopback import Loopback  # noqa: E402
from scripts.harness.processes import bench_env  # noqa: E402
from scripts.harness.suites import make_suite  # noqa: E402

WORKERS = (1, 2, 4)


def fresh_database(server_url: str) -> str:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(server_url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def run(workers: int, shared: bool, db: str, suite: Path, base_url: str, concurrency: int) -> float:
    """Seconds from the first process's start to the last one's exit."""
    command = [
        sys.executable, "-m", "secbench_tui", "--no-ui", "--model", "openai/gpt-4o-mini",
        "--base-url", base_url, "--db", db, "--cases", str(suite),
        "--concurrency", str(concurrency), *(["--worker"] if shared else []),
    ]  # fmt: skip
    env = bench_env()
    env["OPENROUTER_API_KEY"] = "sk-or-bench"
    started = time.perf_counter()
    procs = [
        subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(workers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"a worker failed ({proc.returncode}): {err.decode()[-2000:]}")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    rates: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        suite = make_suite(Path(tmp) / "suite", args.cases)
        with tempfile.TemporaryDirectory(prefix="bench-workers-pg-", dir="/tmp") as folder:
            server = pgserver.get_server(folder, cleanup_mode="delete")
            try:
                with Loopback(args.latency) as loopback:
                    for round_no in range(args.rounds):
                        configs = [("1 process, no --worker", 1, False)] + [
                            (f"{n} worker{'s' if n > 1 else ''}", n, True) for n in WORKERS
                        ]
                        if round_no % 2:
                            configs.reverse()
                        for label, n, shared in configs:
                            db = fresh_database(server.get_uri())
                            seconds = run(n, shared, db, suite, loopback.base_url, args.concurrency)
                            rates.setdefault(label, []).append(args.cases / seconds)
            finally:
                server.cleanup()
    base = statistics.median(rates["1 process, no --worker"])
    print(
        f"{args.cases} cases, latency {args.latency * 1000:g} ms, concurrency "
        f"{args.concurrency} per process, {args.rounds} rounds (median, range):"
    )
    for label, values in rates.items():
        median = statistics.median(values)
        print(
            f"  {label:<24} {median:7.1f} cases/s ({min(values):.1f}-{max(values):.1f})"
            f"  {median / base:5.2f}x the process without --worker"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
