"""Does the harness add anything? secbench-tui against the floor of httpx and SQLite.

The floor (`scripts/floor_loop.py`) is a bare loop of httpx and aiosqlite with the tool's
SQLite settings (WAL, `synchronous=NORMAL`, one committed row per case), sending the bytes the
tool sent. Both run as their own processes against the same loopback server
(tests/e2e/server.py, in a third process, answering at once), in interleaved rounds: each
round runs the tool and the floor back to back on every configuration, the order alternating
from round to round, so that both see the same machine. Ratios are taken within a round; the
script prints their median and their range over the rounds:

- wall, concurrency 1 and 10: the run's own time (the tool's `wall_seconds`, from its first
  request to its last stored result; the floor's first request to its last commit);
- start-up: the whole process, interpreter start to exit, for a suite of one case;
- peak memory: the maximum resident set of the process, for the concurrency-10 run, as GNU
  time (/usr/bin/time) reports it (a child's own ru_maxrss carries this script's memory in).

The floor imports httpx as any program does, and httpx then imports its own command line
(`httpx._main`, with click, pygments and rich) when those are installed, as they are beside
Textual; the tool keeps that import out. For reference the script also runs the one-case
floor with that import kept out the same way, and prints the start-up ratios against it
(not a goal: the floor the issue names is the plain loop).

Wall-clock ratios swing with whatever else runs on the machine; the processor time each
process used (user + system, every thread, from `wait4`) swings much less, so the script also
prints the same ratios of processor time ("cpu"), whole process, for the two 500-case runs and
the one-case start-up.

Usage: python scripts/bench_floor.py [--cases 500] [--rounds 7]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scripts.bench_engine import MODEL, Server, make_suite  # noqa: E402
from tests.e2e.harness import cli_env, write_suite  # noqa: E402

FLOOR = REPO_ROOT / "scripts" / "floor_loop.py"


def bench_env() -> dict[str, str]:
    """The command's environment, with bytecode cached as an installed program has it (pip
    compiles what it installs; PYTHONDONTWRITEBYTECODE, set in CI, would make every start
    compile the tool's own modules again, and the floor has almost none)."""
    env = cli_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


GOALS = {"wall c=1": 1.2, "wall c=10": 1.2, "start-up": 1.2, "peak memory": 1.2}
CPU_FIGURES = {"cpu c=1": "c=1", "cpu c=10": "c=10", "cpu start-up": "one"}


@dataclass
class Sample:
    wall: float  # the run's own time
    process: float  # the whole process
    peak_mb: float
    cpu: float  # processor seconds of the whole process (user + system, all threads)


# GNU time reports the peak resident set of the command alone. The child's own `ru_maxrss`
# (from wait4) is not that: Linux carries the high-water mark of the process that forked it
# into the child across exec, so every child of this script reported at least this script's
# own ~50 MB (both tool and floor "51 MB"). GNU time, a 2 MB process, starts the command.
GNU_TIME = shutil.which("time", path="/usr/bin:/bin")


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float, str]:
    """Run to the end; (elapsed seconds, peak RSS in MB, processor seconds, stdout). Output
    goes to files, so a process that writes more than a pipe holds never waits for this one
    to read."""
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
        peak_kb = float(peak_f.read().split()[-1]) if GNU_TIME else usage.ru_maxrss
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{args[1:3]} failed ({code}): {err[-2000:]}")
    return elapsed, peak_kb / 1024, usage.ru_utime + usage.ru_stime, out


def run_tool(base_url: str, suite: Path, work: Path, concurrency: int) -> Sample:
    db = Path(tempfile.mkdtemp(dir=work)) / "results.db"
    summary = db.with_suffix(".json")
    args = [
        sys.executable,
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
        "--max-retries",
        "0",
        "--summary-json",
        str(summary),
    ]
    elapsed, peak, cpu, _ = _run(args, db.parent, bench_env())
    data = json.loads(summary.read_text(encoding="utf-8"))
    assert data["errors"] == 0, data
    return Sample(float(data["wall_seconds"]), elapsed, peak, cpu)


def run_floor(
    base_url: str, bodies: Path, work: Path, concurrency: int, without_httpx_cli: bool = False
) -> Sample:
    db = Path(tempfile.mkdtemp(dir=work)) / "floor.db"
    args = [sys.executable, str(FLOOR), base_url, str(bodies), str(db), str(concurrency)]
    if without_httpx_cli:  # the floor with httpx's command line kept out, as the tool does
        argv = [str(FLOOR), base_url, str(bodies), str(db), str(concurrency)]
        code = (
            "import runpy, sys; sys.modules['httpx._main'] = None; "
            f"sys.argv = {argv!r}; runpy.run_path({str(FLOOR)!r}, run_name='__main__')"
        )
        args = [sys.executable, "-c", code]
    elapsed, peak, cpu, out = _run(args, db.parent, bench_env())
    return Sample(float(json.loads(out)["wall"]), elapsed, peak, cpu)


def capture_bodies(suite: Path, work: Path, name: str) -> Path:
    """The request bodies the tool sends for `suite`, byte for byte, one a line."""
    server = Server(0.0, keep_bodies=True)
    try:
        run_tool(server.base_url, suite, work, 1)
        root = server.base_url.rsplit("/api/v1", 1)[0]
        with urllib.request.urlopen(f"{root}/_bodies") as response:  # noqa: S310 - loopback
            bodies = [base64.b64decode(b) for b in json.load(response)["bodies"]]
    finally:
        server.stop()
    assert all(b"\n" not in b for b in bodies), "a body with a newline cannot go one a line"
    out = work / f"{name}.bodies"
    out.write_bytes(b"".join(b + b"\n" for b in bodies))
    return out


def one_case_suite(root: Path) -> Path:
    write_suite(root, {"app00": ["bad"]})
    spec = next(iter(sorted((REPO_ROOT / "secbench_tui" / "cases").glob("*/SPEC.md"))), None)
    if spec is not None:
        shutil.copyfile(spec, root / "app00" / "SPEC.md")
    return root


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):5.2f}x  (range {min(values):.2f}-{max(values):.2f})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--cases", type=int, default=500)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = p.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-floor-"))
    try:
        suite = make_suite(work / "suite", args.cases)
        single = one_case_suite(work / "single")
        cases = len(list(suite.glob("*/*.md"))) - 10
        bodies = capture_bodies(suite, work, "suite")
        single_bodies = capture_bodies(single, work, "single")
        print(
            f"secbench-tui against its floor: {cases} cases, {args.rounds} interleaved rounds,"
            f" loopback server at 0 ms in its own process, {os.cpu_count()} CPUs,"
            f" Python {sys.version.split()[0]}; peak memory "
            + ("by GNU time\n" if GNU_TIME else "NOT MEASURABLE HERE (no /usr/bin/time)\n"),
            flush=True,
        )
        ratios: dict[str, list[float]] = {name: [] for name in (*GOALS, *CPU_FIGURES)}
        bare: dict[str, list[float]] = {"start-up": [], "cpu start-up": []}
        server = Server(0.0)
        try:
            url = server.base_url
            # one untimed pair first: page cache, bytecode and the server warmed for both
            run_tool(url, single, work, 1)
            run_floor(url, single_bodies, work, 1)
            run_floor(url, single_bodies, work, 1, without_httpx_cli=True)
            for r in range(args.rounds):
                tool_first = r % 2 == 0
                row: dict[str, tuple[Sample, Sample]] = {}
                for label, s, b, c in (
                    ("c=1", suite, bodies, 1),
                    ("c=10", suite, bodies, 10),
                    ("one", single, single_bodies, 1),
                ):
                    if tool_first:
                        tool = run_tool(url, s, work, c)
                        floor = run_floor(url, b, work, c)
                    else:
                        floor = run_floor(url, b, work, c)
                        tool = run_tool(url, s, work, c)
                    row[label] = (tool, floor)
                # for reference: the one-case floor with httpx's command line kept out
                no_cli = run_floor(url, single_bodies, work, 1, without_httpx_cli=True)
                bare["start-up"].append(row["one"][0].process / no_cli.process)
                bare["cpu start-up"].append(row["one"][0].cpu / no_cli.cpu)
                ratios["wall c=1"].append(row["c=1"][0].wall / row["c=1"][1].wall)
                ratios["wall c=10"].append(row["c=10"][0].wall / row["c=10"][1].wall)
                ratios["start-up"].append(row["one"][0].process / row["one"][1].process)
                ratios["peak memory"].append(row["c=10"][0].peak_mb / row["c=10"][1].peak_mb)
                for name, label in CPU_FIGURES.items():
                    ratios[name].append(row[label][0].cpu / row[label][1].cpu)
                t1, f1 = row["c=1"]
                t10, f10 = row["c=10"]
                one_t, one_f = row["one"]
                print(
                    f"round {r + 1}: c=1 {t1.wall:.2f}s/{f1.wall:.2f}s"
                    f"  c=10 {t10.wall:.2f}s/{f10.wall:.2f}s"
                    f"  start-up {one_t.process:.3f}s/{one_f.process:.3f}s"
                    f"  memory {t10.peak_mb:.0f}/{f10.peak_mb:.0f} MB   (tool/floor)",
                    flush=True,
                )
        finally:
            server.stop()
        print(f"\n{'figure':<14} {'tool / floor, median':<34} goal")
        met = True
        for name, goal in GOALS.items():
            ok = statistics.median(ratios[name]) <= goal
            met &= ok
            print(
                f"{name:<14} {spread(ratios[name]):<34} <= {goal:.1f}x {'met' if ok else 'MISSED'}"
            )
        print("\nprocessor time of the whole process (less sensitive to other load):")
        for name in CPU_FIGURES:
            print(f"{name:<14} {spread(ratios[name])}")
        print("\nfor reference, start-up against the floor with httpx's command line kept out:")
        for name, values in bare.items():
            print(f"{name:<14} {spread(values)}")
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"\nload average at the end: {load} (1, 5, 15 min; {os.cpu_count()} CPUs)")
        print("all goals met" if met else "some goals missed")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
