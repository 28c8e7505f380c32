"""How much time and memory secbench-tui itself adds to a run (a benchmark, not a test).

Runs the real command (`python -m secbench_tui --no-ui`) against the loopback OpenAI-compatible
server (scripts/harness/loopback.py, in its own process so the two do not share a GIL) and
prints:

- overhead per case with the server answering at once, at concurrency 1 and 16, over >= 2,000 cases
  (the run's own wall time divided by the cases: everything the tool does per case, plus the
  loopback server's sub-millisecond answer, so it is an upper bound);
- the same runs with the server answering after `--latency` (50 ms), next to the ideal
  (cases x latency / concurrency);
- peak memory (max RSS of the tool's process, by GNU time) of each run, and of a 20,000-case
  run, then of a second 20,000-case run into a database that already holds 80,000 results
  (100,000 after).

Usage: python scripts/bench_engine.py [--cases 2000] [--big 20000] [--latency 0.05]
                                      [--skip-slow] [--profile]
"""

from __future__ import annotations

import asyncio
import pstats
import sqlite3
import sys
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scripts.harness import MODEL, figures  # noqa: E402
from scripts.harness.loopback import Loopback  # noqa: E402
from scripts.harness.processes import run_tool  # noqa: E402
from scripts.harness.suites import case_count, make_suite  # noqa: E402


@dataclass
class Measure:
    label: str
    cases: int
    concurrency: int
    latency: float
    wall: float  # the run, as the engine timed it (after start-up and suite loading)
    process: float  # the whole process, start to exit
    peak_mb: float | None  # by GNU time (None without it)
    requests: int
    floor: float | None = None  # the same requests from bare httpx, no engine, no database

    @property
    def ideal(self) -> float:
        return self.cases * self.latency / self.concurrency

    @property
    def per_case_ms(self) -> float:
        """Per case, beyond the ideal: the tool, httpx and the loopback server together."""
        return (self.wall - self.ideal) / self.cases * 1000

    @property
    def own_ms(self) -> float | None:
        """Per case, beyond what bare httpx needs for the same requests: the tool's own share."""
        if self.floor is None:
            return None
        return (self.wall - self.floor) / self.cases * 1000


def bare_httpx(base_url: str, prompt: str, cases: int, concurrency: int) -> float:
    """Seconds for `cases` requests from `concurrency` workers on one httpx client, and no more.

    The floor the tool is measured against: the same HTTP client, the same request, no engine,
    no parsing, no database.
    """
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 1024,
        "response_format": {"type": "json_object"},
    }

    async def run() -> float:
        async with httpx.AsyncClient(timeout=60) as client:
            todo = iter(range(cases))

            async def worker() -> None:
                for _ in todo:
                    response = await client.post(f"{base_url}/chat/completions", json=body)
                    response.raise_for_status()
                    response.json()

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return time.perf_counter() - started

    return asyncio.run(run())


def a_prompt(suite: Path) -> str:
    """A prompt of the size the tool sends for this suite."""
    case = next(p for p in sorted(suite.glob("*/*.md")) if p.name != "SPEC.md")
    spec = (case.parent / "SPEC.md").read_text(encoding="utf-8")
    evaluation = (REPO_ROOT / "secbench_tui" / "prompts" / "default.txt").read_text(
        encoding="utf-8"
    )
    return f"{spec}\n\n{evaluation}\n\n{case.read_text(encoding='utf-8')}"


def measure(
    label: str,
    suite: Path,
    concurrency: int,
    latency: float,
    db: Path,
    *extra: str,
    floor: bool = True,
) -> Measure:
    cases = case_count(suite)
    with Loopback(latency) as server:
        data, m = run_tool(server.base_url, suite, db, concurrency, *extra)
        requests = server.requests()
        bare = bare_httpx(server.base_url, a_prompt(suite), cases, concurrency) if floor else None
    assert data["cases"] == cases, f"{label}: {data['cases']} results for {cases} cases"
    assert data["errors"] == 0, f"{label}: {data['errors']} errors"
    wall = float(data["wall_seconds"])
    return Measure(label, cases, concurrency, latency, wall, m.elapsed, m.peak_mb, requests, bare)


def grow_database(db: Path, copies: int) -> int:
    """Copy the results already in `db` into `copies` more runs; the total number of results."""
    with closing(sqlite3.connect(db)) as conn:
        (run_id,) = conn.execute("SELECT MAX(id) FROM runs").fetchone()
        columns = [r[1] for r in conn.execute("PRAGMA table_info(evaluations)") if r[1] != "id"]
        run_columns = [r[1] for r in conn.execute("PRAGMA table_info(runs)") if r[1] != "id"]
        for _ in range(copies):
            cur = conn.execute(
                f"INSERT INTO runs ({', '.join(run_columns)}) SELECT {', '.join(run_columns)}"
                " FROM runs WHERE id=?",
                (run_id,),
            )
            new_id = cur.lastrowid
            selected = ", ".join("?" if c == "run_id" else c for c in columns)
            conn.execute(
                f"INSERT INTO evaluations ({', '.join(columns)}) SELECT {selected}"
                " FROM evaluations WHERE run_id=?",
                (new_id, run_id),
            )
        conn.commit()
        return int(conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0])


HEADER = (
    f"{'run':<24} {'cases':>6} {'conc':>4} {'latency':>7} {'wall':>8} {'ideal':>8}"
    f" {'vs ideal':>8} {'ms/case':>8} {'httpx':>8} {'own ms':>7} {'process':>8} {'peak RSS':>9}"
)


def show(m: Measure) -> None:
    ideal = f"{m.ideal:7.2f}s" if m.latency else "       -"
    ratio = f"{(m.wall / m.ideal - 1) * 100:+7.1f}%" if m.latency else "       -"
    floor = f"{m.floor:7.2f}s" if m.floor is not None else "       -"
    own = f"{m.own_ms:7.3f}" if m.own_ms is not None else "      -"
    peak = f"{m.peak_mb:7.1f}MB" if m.peak_mb is not None else "      -"
    print(
        f"{m.label:<24} {m.cases:>6} {m.concurrency:>4} {m.latency * 1000:>5.0f}ms"
        f" {m.wall:7.2f}s {ideal} {ratio} {m.per_case_ms:8.3f} {floor} {own}"
        f" {m.process:7.2f}s {peak}",
        flush=True,
    )


def profile(suite: Path, workdir: Path, concurrency: int) -> None:
    out = workdir / f"profile-c{concurrency}.prof"
    with Loopback(0.0) as server:
        db = workdir / f"profile-c{concurrency}.db"
        run_tool(server.base_url, suite, db, concurrency, prefix=("-m", "cProfile", "-o", str(out)))
    print(f"\n--- profile, concurrency {concurrency}: top 30 by own time ---")
    pstats.Stats(str(out)).sort_stats("tottime").print_stats(30)
    print(f"--- profile, concurrency {concurrency}: top 30 by cumulative time ---")
    pstats.Stats(str(out)).sort_stats("cumulative").print_stats(30)


LEGEND = """
wall      the run as the engine timed it (RunStarted to RunFinished)
ideal     cases x latency / concurrency
ms/case   (wall - ideal) / cases: the tool, httpx and the loopback server together
httpx     the same number of requests, same concurrency, from bare httpx (no engine, no database)
own ms    (wall - httpx) / cases: what the tool adds beyond its HTTP client
process   the whole process, interpreter start and suite loading included
peak RSS  maximum resident memory of the tool's process (GNU time)"""


def main(argv: list[str] | None = None) -> int:
    p = figures.parser(__doc__, cases=2000, latency=0.05)
    p.add_argument("--big", type=int, default=20000, help="cases of the memory run (0: skip)")
    p.add_argument(
        "--skip-slow",
        action="store_true",
        help="skip the run with latency at concurrency 1 (cases x latency seconds)",
    )
    p.add_argument("--profile", action="store_true", help="profile the runs at 0 ms")
    args = p.parse_args(argv)
    with figures.workdir("bench-engine-", args.keep) as workdir:
        suite = make_suite(workdir / "suite", args.cases)
        spec_kb = sum(p.stat().st_size for p in suite.glob("*/SPEC.md")) / 10 / 1000
        print(
            f"secbench-tui engine benchmark: {case_count(suite)} cases (SPEC.md {spec_kb:.1f} kB"
            f" on average), loopback server in its own process; {figures.machine()}\n"
        )
        print(HEADER)
        ms = f"{args.latency * 1000:.0f} ms"
        plan = [("0 ms", 1, 0.0), ("0 ms", 16, 0.0), (ms, 16, args.latency)]
        if not args.skip_slow:
            plan.append((ms, 1, args.latency))
        for label, concurrency, latency in plan:
            name = f"{label}, c={concurrency}"
            db = workdir / f"{name.replace(' ', '_').replace(',', '')}.db"
            show(measure(name, suite, concurrency, latency, db))
        if args.profile:
            for concurrency in (1, 16):
                profile(suite, workdir, concurrency)
        if args.big:
            big = make_suite(workdir / "big", args.big)
            db = workdir / "big.db"
            show(measure("big run, c=16", big, 16, 0.0, db, floor=False))
            total = grow_database(db, 3)
            show(measure("big, into 80k-result db", big, 16, 0.0, db, "--force", floor=False))
            with closing(sqlite3.connect(db)) as conn:
                final = conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
            print(
                f"\n(before the last run the database held {total} results; after, {final};"
                f" file {db.stat().st_size / 1e6:.0f} MB)"
            )
        print(LEGEND)
    return 0


if __name__ == "__main__":
    sys.exit(main())
