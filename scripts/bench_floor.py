"""Does the harness add anything? secbench-tui against a floor on the same stack.

The floor (`scripts/floor_loop.py`) is the least a harness on the tool's stack must do:
python-dotenv loaded at start, one `httpx.AsyncClient`, aiosqlite with the tool's SQLite
settings (WAL, `synchronous=NORMAL`, the busy timeout and checkpoint pages read from the tool
here), each reply and its verdict validated by a pydantic model, one committed row per case. It
sends the bodies the tool sent (captured at the loopback server, sent again with httpx's
`json=`; the script checks the bytes are the same). Tool and floor each run as their own
process against the same loopback OpenAI-compatible server (scripts/harness/loopback.py, a
process of its own), in interleaved rounds: each round runs the tool and the floor back to back
on every configuration, the order alternating from round to round, so both see the same
machine. Ratios (tool / floor) are taken within a round; the script prints their median and
range over the rounds, provider-like latency first:

- wall at `--latency` (100 ms, as a provider answers at best), concurrency 10 and 1: the run's
  own time (the tool's `wall_seconds`, first request to last stored result; the floor's first
  request to last commit). Concurrency 1 runs a tenth of the cases, to take as long;
- wall at 0 ms, concurrency 1 and 10: what the harness itself costs per case, magnified;
- processor time at 0 ms, concurrency 10: user + system of the whole process, every thread
  (from `wait4`), which other load on the machine moves much less than wall time;
- start-up: the whole process, interpreter start to exit, of a run of one case (at 0 ms);
- peak memory at `--latency`, concurrency 10: the maximum resident set by GNU time.

`--tool-root` runs the tool from another checkout (e.g. a commit before a change, extracted
with `git archive`), so two versions can be measured back to back on the same machine state.

Usage: python scripts/bench_floor.py [--cases 400] [--rounds 5] [--latency 0.1]
                                     [--tool-root DIR]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scripts.harness import figures  # noqa: E402
from scripts.harness.loopback import Loopback  # noqa: E402
from scripts.harness.processes import GNU_TIME, bench_env, measure, run_tool  # noqa: E402
from scripts.harness.suites import case_count, make_suite  # noqa: E402
from secbench_tui.core.store.connection import (  # noqa: E402  (the tool's own settings)
    BUSY_TIMEOUT_S,
    WAL_CHECKPOINT_PAGES,
)

FLOOR = REPO_ROOT / "scripts" / "floor_loop.py"


@dataclass(frozen=True)
class Config:
    label: str
    latency: float
    concurrency: int
    suite: str  # "many", "few" or "one"


@dataclass(frozen=True)
class Sample:
    wall: float  # the run's own time
    process: float  # the whole process
    cpu: float
    peak_mb: float | None


def configs(latency: float) -> list[Config]:
    ms = f"{latency * 1000:.0f} ms"
    return [
        Config(f"{ms} c=10", latency, 10, "many"),
        Config(f"{ms} c=1", latency, 1, "few"),
        Config("0 ms c=1", 0.0, 1, "many"),
        Config("0 ms c=10", 0.0, 10, "many"),
        Config("one case", 0.0, 1, "one"),
    ]


def goals(latency: float) -> list[tuple[str, str, str, float]]:
    """(figure, configuration, what of it, goal): provider-like latency first."""
    ms = f"{latency * 1000:.0f} ms"
    return [
        (f"wall {ms} c=10", f"{ms} c=10", "wall", 1.05),
        (f"wall {ms} c=1", f"{ms} c=1", "wall", 1.05),
        ("wall 0 ms c=1", "0 ms c=1", "wall", 1.5),
        ("wall 0 ms c=10", "0 ms c=10", "wall", 1.5),
        ("cpu 0 ms c=10", "0 ms c=10", "cpu", 1.6),
        ("start-up", "one case", "process", 1.4),
        (f"memory {ms} c=10", f"{ms} c=10", "peak_mb", 1.3),
    ]


def tool_sample(url: str, suite: Path, work: Path, concurrency: int, root: Path) -> Sample:
    db = Path(tempfile.mkdtemp(dir=work)) / "results.db"
    summary, m = run_tool(url, suite, db, concurrency, root=root)
    if summary["errors"] != 0 or summary["cases"] != case_count(suite):
        raise RuntimeError(f"the tool's run went wrong: {summary}")
    return Sample(float(summary["wall_seconds"]), m.elapsed, m.cpu, m.peak_mb)


def floor_sample(url: str, bodies: Path, work: Path, concurrency: int) -> Sample:
    db = Path(tempfile.mkdtemp(dir=work)) / "floor.db"
    args = [sys.executable, str(FLOOR), url, str(bodies), str(db), str(concurrency)]
    args += ["--busy-timeout-ms", str(round(BUSY_TIMEOUT_S * 1000))]
    args += ["--checkpoint-pages", str(WAL_CHECKPOINT_PAGES)]
    m = measure(args, db.parent, bench_env())
    return Sample(float(json.loads(m.stdout)["wall"]), m.elapsed, m.cpu, m.peak_mb)


def capture_bodies(suite: Path, work: Path, root: Path) -> Path:
    """The request bodies the tool sends for `suite`, one a line, checked to be the bytes
    httpx's `json=` writes for them (what the floor sends)."""
    with Loopback(0.0, keep_bodies=True) as server:
        tool_sample(server.base_url, suite, work, 1, root)
        bodies = server.bodies()
    for body in bodies:
        again = httpx.Request("POST", server.base_url, json=json.loads(body)).content
        if again != body or b"\n" in body:
            raise RuntimeError("the floor would not send the tool's bytes")
    out = work / f"{suite.name}.bodies"
    out.write_bytes(b"".join(b + b"\n" for b in bodies))
    return out


def main(argv: list[str] | None = None) -> int:
    p = figures.parser(__doc__, cases=400, rounds=5, latency=0.1)
    p.add_argument("--tool-root", type=Path, default=REPO_ROOT, help="the tool's checkout")
    args = p.parse_args(argv)
    root = args.tool_root.resolve()
    plan = configs(args.latency)
    with figures.workdir("bench-floor-", args.keep) as work:
        suites = {
            "many": make_suite(work / "many", args.cases),
            "few": make_suite(work / "few", max(1, args.cases // 10)),
            "one": make_suite(work / "one", 1),
        }
        bodies = {name: capture_bodies(s, work, root) for name, s in suites.items()}
        print(
            "secbench-tui against its floor on the same stack (httpx, aiosqlite, python-dotenv,"
            f" pydantic); the tool from {root}\n"
            f"measured: {args.rounds} interleaved rounds; {case_count(suites['many'])} cases,"
            f" {case_count(suites['few'])} at concurrency 1 with latency; loopback server in its"
            f" own process answering after {args.latency * 1000:.0f} ms and after 0 ms;"
            f" SQLite WAL, synchronous=NORMAL, busy timeout {BUSY_TIMEOUT_S:g} s, checkpoint"
            f" every {WAL_CHECKPOINT_PAGES} pages; peak memory "
            + ("by GNU time" if GNU_TIME else "NOT MEASURABLE HERE (no /usr/bin/time)")
            + f"\nmachine at the start: {figures.machine()}\n",
            flush=True,
        )
        rows: list[dict[str, tuple[Sample, Sample]]] = []
        with Loopback(args.latency) as slow, Loopback(0.0) as fast:
            # one untimed pair first: page cache, bytecode and the servers warmed for both
            tool_sample(fast.base_url, suites["one"], work, 1, root)
            floor_sample(fast.base_url, bodies["one"], work, 1)
            for r in range(args.rounds):
                row: dict[str, tuple[Sample, Sample]] = {}
                for c in plan:
                    url = (slow if c.latency else fast).base_url
                    order = ("tool", "floor") if (r + len(row)) % 2 == 0 else ("floor", "tool")
                    got: dict[str, Sample] = {}
                    for who in order:
                        if who == "tool":
                            got[who] = tool_sample(url, suites[c.suite], work, c.concurrency, root)
                        else:
                            got[who] = floor_sample(url, bodies[c.suite], work, c.concurrency)
                    row[c.label] = (got["tool"], got["floor"])
                rows.append(row)
                print(
                    f"round {r + 1}: "
                    + "  ".join(
                        f"{label} {t.wall:.2f}/{f.wall:.2f}s"
                        if label != "one case"
                        else f"start-up {t.process:.3f}/{f.process:.3f}s"
                        for label, (t, f) in row.items()
                    )
                    + "   (tool/floor)",
                    flush=True,
                )
        report(rows, args.latency, plan)
    return 0


def report(
    rows: list[dict[str, tuple[Sample, Sample]]], latency: float, plan: list[Config]
) -> None:
    print(f"\n{'figure':<20} {'tool / floor, median':<30} goal")
    met = True
    for name, label, what, goal in goals(latency):
        pairs = [(getattr(row[label][0], what), getattr(row[label][1], what)) for row in rows]
        if any(t is None or f is None for t, f in pairs):
            print(f"{name:<20} {'not measured':<30} <= {goal:.2f}x")
            continue
        ratios = [t / f for t, f in pairs]
        ok = statistics.median(ratios) <= goal
        met &= ok
        print(f"{name:<20} {figures.spread(ratios):<30} <= {goal:.2f}x {'met' if ok else 'MISSED'}")
    print("\nthe figures themselves, medians (tool / floor):")
    for c in plan:
        t = [row[c.label][0] for row in rows]
        f = [row[c.label][1] for row in rows]
        wall = "process" if c.suite == "one" else "wall"
        print(
            f"{c.label:<12} {wall} {med(t, wall):.3f}/{med(f, wall):.3f} s"
            f"  cpu {med(t, 'cpu'):.3f}/{med(f, 'cpu'):.3f} s"
            + (
                f"  memory {med(t, 'peak_mb'):.0f}/{med(f, 'peak_mb'):.0f} MB"
                if t[0].peak_mb is not None
                else ""
            )
        )
    print(f"\nmachine at the end: {figures.machine()}")
    print("all goals met" if met else "some goals missed")


def med(samples: list[Sample], what: str) -> float:
    return statistics.median(float(getattr(s, what)) for s in samples)


if __name__ == "__main__":
    sys.exit(main())
