"""How much time and memory secbench-tui itself adds to a run (a benchmark, not a test).

Runs the real command (`python -m secbench_tui --no-ui`) against the loopback OpenRouter
server (tests/e2e/server.py, in its own process so the two do not share a GIL) and prints:

- overhead per case with no server delay, at concurrency 1 and 16, over >= 2,000 cases
  (the run's own wall time divided by the cases: everything the tool does per case, plus the
  loopback server's sub-millisecond answer, so it is an upper bound);
- the same runs with the server adding 50 ms to every request, next to the ideal
  (cases x delay / concurrency);
- peak memory (max RSS of the tool's process) of each run, and of a 20,000-case run, then of
  a second 20,000-case run into a database that already holds 80,000 results (100,000 after).

Usage: python scripts/bench_engine.py [--cases 2000] [--big 20000] [--skip-slow] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tests.e2e.harness import cli_env, write_suite  # noqa: E402

SERVER = REPO_ROOT / "tests" / "e2e" / "server.py"
MODEL = "openai/gpt-4o-mini"


@dataclass
class Measure:
    label: str
    cases: int
    concurrency: int
    delay: float
    wall: float  # the run, as the engine timed it (after start-up and suite loading)
    process: float  # the whole process, start to exit
    peak_mb: float
    requests: int
    floor: float | None = None  # the same requests from bare httpx, no engine, no database

    @property
    def ideal(self) -> float:
        return self.cases * self.delay / self.concurrency

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


class Server:
    """The loopback server in a child process."""

    def __init__(self, delay: float, keep_bodies: bool = False) -> None:
        keep = ["--keep-bodies"] if keep_bodies else []
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER), "--delay", str(delay), "--until-stdin-closes", *keep],
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
        import urllib.request

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


def bare_httpx(base_url: str, prompt: str, cases: int, concurrency: int) -> float:
    """Seconds for `cases` requests from `concurrency` workers on one httpx client, and no more.

    The floor the tool is measured against: the same HTTP client, the same request, no engine,
    no parsing, no database.
    """
    import asyncio

    import httpx

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


def make_suite(root: Path, cases: int) -> Path:
    """`cases` cases in 10 apps, each app with a SPEC.md as large as the bundled ones.

    The bundled apps' `# Prompt` sections run to about 11 kB and are sent with every case,
    so a benchmark with a one-line SPEC.md would flatter memory and JSON costs.
    """
    apps = 10
    per_app = cases // apps
    verdicts = {
        f"app{a:02d}": ["good" if i % 2 else "bad" for i in range(per_app)] for a in range(apps)
    }
    write_suite(root, verdicts)
    bundled = sorted((REPO_ROOT / "secbench_tui" / "cases").glob("*/SPEC.md"))
    if bundled:
        for n, app in enumerate(sorted(verdicts)):
            shutil.copyfile(bundled[n % len(bundled)], root / app / "SPEC.md")
    return root


def run_tool(
    base_url: str, suite: Path, db: Path, concurrency: int, *extra: str, profile: Path | None = None
) -> tuple[dict[str, object], float, float]:
    """(summary, process seconds, peak RSS in MB) of one real run."""
    summary = db.with_suffix(".summary.json")
    prefix = [sys.executable]
    if profile is not None:
        prefix += ["-m", "cProfile", "-o", str(profile)]
    args = [
        *prefix,
        "-m",
        "secbench_tui",
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
        "--summary-json",
        str(summary),
        "--max-retries",
        "0",
        *extra,
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(
        args, cwd=db.parent, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise RuntimeError(f"the run failed ({proc.returncode}): {err[-2000:]}")
    data = json.loads(summary.read_text(encoding="utf-8"))
    return data, elapsed, usage.ru_maxrss / 1024


def measure(
    label: str,
    suite: Path,
    cases: int,
    concurrency: int,
    delay: float,
    workdir: Path,
    *extra: str,
    db: Path | None = None,
    floor: bool = True,
) -> Measure:
    server = Server(delay)
    try:
        db = db or workdir / f"{label.replace(' ', '_').replace(',', '')}.db"
        data, elapsed, peak = run_tool(server.base_url, suite, db, concurrency, *extra)
        requests = server.requests()
        bare = bare_httpx(server.base_url, a_prompt(suite), cases, concurrency) if floor else None
    finally:
        server.stop()
    assert data["cases"] == cases, f"{label}: {data['cases']} results for {cases} cases"
    assert data["errors"] == 0, f"{label}: {data['errors']} errors"
    wall = float(data["wall_seconds"])  # type: ignore[arg-type]
    return Measure(label, cases, concurrency, delay, wall, elapsed, peak, requests, bare)


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
    f"{'run':<24} {'cases':>6} {'conc':>4} {'delay':>6} {'wall':>8} {'ideal':>8} {'vs ideal':>8}"
    f" {'ms/case':>8} {'httpx':>8} {'own ms':>7} {'process':>8} {'peak RSS':>9}"
)


def show(m: Measure) -> None:
    ideal = f"{m.ideal:7.2f}s" if m.delay else "       -"
    ratio = f"{(m.wall / m.ideal - 1) * 100:+7.1f}%" if m.delay else "       -"
    floor = f"{m.floor:7.2f}s" if m.floor is not None else "       -"
    own = f"{m.own_ms:7.3f}" if m.own_ms is not None else "      -"
    print(
        f"{m.label:<24} {m.cases:>6} {m.concurrency:>4} {m.delay * 1000:>4.0f}ms"
        f" {m.wall:7.2f}s {ideal} {ratio} {m.per_case_ms:8.3f} {floor} {own}"
        f" {m.process:7.2f}s {m.peak_mb:7.1f}MB",
        flush=True,
    )


def profile(suite: Path, workdir: Path, concurrency: int) -> None:
    import pstats

    server = Server(0.0)
    out = workdir / f"profile-c{concurrency}.prof"
    try:
        run_tool(
            server.base_url, suite, workdir / f"profile-c{concurrency}.db", concurrency, profile=out
        )
    finally:
        server.stop()
    print(f"\n--- profile, concurrency {concurrency}: top 30 by own time ---")
    pstats.Stats(str(out)).sort_stats("tottime").print_stats(30)
    print(f"--- profile, concurrency {concurrency}: top 30 by cumulative time ---")
    pstats.Stats(str(out)).sort_stats("cumulative").print_stats(30)


LEGEND = """
wall      the run as the engine timed it (RunStarted to RunFinished)
ideal     cases x delay / concurrency
ms/case   (wall - ideal) / cases: the tool, httpx and the loopback server together
httpx     the same number of requests, same concurrency, from bare httpx (no engine, no database)
own ms    (wall - httpx) / cases: what the tool adds beyond its HTTP client
process   the whole process, interpreter start and suite loading included
peak RSS  maximum resident memory of the tool's process"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--cases", type=int, default=2000)
    p.add_argument("--big", type=int, default=20000, help="cases of the memory run (0: skip)")
    p.add_argument("--delay", type=float, default=0.05)
    p.add_argument(
        "--skip-slow",
        action="store_true",
        help="skip the delayed run at concurrency 1 (cases x delay seconds)",
    )
    p.add_argument("--profile", action="store_true", help="profile the no-delay runs")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = p.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="bench-engine-"))
    try:
        suite = make_suite(workdir / "suite", args.cases)
        cases = len(list(suite.glob("*/*.md"))) - 10
        spec_kb = sum(p.stat().st_size for p in suite.glob("*/SPEC.md")) / 10 / 1000
        print(
            f"secbench-tui engine benchmark: {cases} cases (SPEC.md {spec_kb:.1f} kB on average),"
            " loopback server in its own process,"
            f" {os.cpu_count()} CPUs, Python {sys.version.split()[0]}\n"
        )
        print(HEADER)
        plan = [
            ("no delay", 1, 0.0),
            ("no delay", 16, 0.0),
            (f"{args.delay * 1000:.0f} ms", 16, args.delay),
        ]
        if not args.skip_slow:
            plan.append((f"{args.delay * 1000:.0f} ms", 1, args.delay))
        for label, concurrency, delay in plan:
            show(measure(f"{label}, c={concurrency}", suite, cases, concurrency, delay, workdir))
        if args.profile:
            for concurrency in (1, 16):
                profile(suite, workdir, concurrency)
        if args.big:
            big = make_suite(workdir / "big", args.big)
            n = len(list(big.glob("*/*.md"))) - 10
            db = workdir / "big.db"
            show(measure("big run, c=16", big, n, 16, 0.0, workdir, db=db, floor=False))
            total = grow_database(db, 3)
            second = measure(
                "big, into 80k-result db", big, n, 16, 0.0, workdir, "--force", db=db, floor=False
            )
            show(second)
            with closing(sqlite3.connect(db)) as conn:
                final = conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
            print(
                f"\n(before the last run the database held {total} results; after, {final};"
                f" file {db.stat().st_size / 1e6:.0f} MB)"
            )
        print(LEGEND)
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
