"""What `--batch` costs in time beside a live run of the same cases (a benchmark, not a test).

Both run as the real command (`python -m secbench_tui --no-ui`) against the same loopback server
(scripts/harness/loopback.py, a process of its own): the live run at `--concurrency` with the
server answering at once, the batch run through its OpenRouter Batch API emulation (the batch
is in progress at the first poll and ended at the second, `--batch-poll 0.01`), so what is
measured is what the tool adds: sending the bodies, polling, reading every result and scoring
and committing it. In interleaved rounds (the order alternating), each round runs both on the
same suite into fresh databases; the script prints each one's whole process time (start to
exit) and the per-round ratio batch / live, median and range. A real batch also waits on the
provider, minutes to hours, which no benchmark can show: docs/batch.md says how long.

Usage: python scripts/bench_batch.py [--cases 2000] [--rounds 3] [--concurrency 16]
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from contextlib import closing
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scripts.harness import figures  # noqa: E402
from scripts.harness.loopback import Loopback  # noqa: E402
from scripts.harness.processes import run_tool  # noqa: E402
from scripts.harness.suites import case_count, make_suite  # noqa: E402

BATCH = ("--batch", "--batch-api", "openrouter", "--batch-poll", "0.01")


def one_run(url: str, suite: Path, work: Path, concurrency: int, batch: bool) -> float:
    """One run to its end; the seconds its process took. Raises if any case went wrong."""
    db = Path(tempfile.mkdtemp(dir=work)) / "results.db"
    summary, measured = run_tool(url, suite, db, concurrency, *(BATCH if batch else ()))
    if summary["errors"] != 0 or summary["cases"] != case_count(suite):
        raise RuntimeError(f"the {'batch' if batch else 'live'} run went wrong: {summary}")
    if batch:
        with closing(sqlite3.connect(db)) as conn:
            (sent,) = conn.execute("SELECT COUNT(*) FROM batches").fetchone()
        if sent == 0:
            raise RuntimeError("the batch run sent no batch")
    return measured.elapsed


def main(argv: list[str] | None = None) -> int:
    p = figures.parser(__doc__, cases=2000, rounds=3, concurrency=16)
    args = p.parse_args(argv)
    times: dict[str, list[float]] = {"live": [], "batch": []}
    ratios: list[float] = []
    with figures.workdir("bench-batch-", args.keep) as work, Loopback(0.0) as server:
        suite = make_suite(work / "suite", args.cases)
        cases = case_count(suite)
        for n in range(args.rounds):
            order = ("live", "batch") if n % 2 == 0 else ("batch", "live")
            took = {
                kind: one_run(server.base_url, suite, work, args.concurrency, kind == "batch")
                for kind in order
            }
            for kind, seconds in took.items():
                times[kind].append(seconds)
            ratios.append(took["batch"] / took["live"])
            print(f"round {n + 1}: live {took['live']:.1f} s, batch {took['batch']:.1f} s")
    print(f"{cases} cases, {args.rounds} rounds; {figures.machine()}")
    print(f"live at concurrency {args.concurrency}: {figures.spread(times['live'], ' s')}")
    print(f"batch (one poll before it ends):  {figures.spread(times['batch'], ' s')}")
    print(f"batch / live, per round:          {figures.spread(ratios)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
