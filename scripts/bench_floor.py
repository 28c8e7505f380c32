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
with `git archive`); given twice, both versions run in the same rounds beside the floor, their
bodies are checked to be the same bytes, and the second is also compared with the first.

Usage: python scripts/bench_floor.py [--cases 400] [--rounds 5] [--latency 0.1]
                                     [--tool-root DIR [--tool-root DIR]]
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


def capture_bodies(suite: Path, work: Path, tools: dict[str, Path]) -> Path:
    """The request bodies the tool sends for `suite`, one a line, checked to be the bytes
    httpx's `json=` writes for them (what the floor sends), and the same from every tool."""
    sent: dict[str, list[bytes]] = {}
    for name, root in tools.items():
        with Loopback(0.0, keep_bodies=True) as server:
            tool_sample(server.base_url, suite, work, 1, root)
            sent[name] = server.bodies()
    bodies = next(iter(sent.values()))
    if any(other != bodies for other in sent.values()):
        raise RuntimeError(f"the tools sent different bodies for {suite.name}")
    for body in bodies:
        again = httpx.Request("POST", server.base_url, json=json.loads(body)).content
        if again != body or b"\n" in body:
            raise RuntimeError("the floor would not send the tool's bytes")
    out = work / f"{suite.name}.bodies"
    out.write_bytes(b"".join(b + b"\n" for b in bodies))
    return out


def main(argv: list[str] | None = None) -> int:
    p = figures.parser(__doc__, cases=400, rounds=5, latency=0.1)
    p.add_argument(
        "--tool-root",
        type=Path,
        action="append",
        help="a checkout of the tool to measure (default: this one); give it twice to measure"
        " two versions in the same rounds",
    )
    args = p.parse_args(argv)
    tools = {label(root): root.resolve() for root in args.tool_root or [REPO_ROOT]}
    plan = configs(args.latency)
    with figures.workdir("bench-floor-", args.keep) as work:
        suites = {
            "many": make_suite(work / "many", args.cases),
            "few": make_suite(work / "few", max(1, args.cases // 10)),
            "one": make_suite(work / "one", 1),
        }
        bodies = {name: capture_bodies(s, work, tools) for name, s in suites.items()}
        print(
            "secbench-tui against its floor on the same stack (httpx, aiosqlite, python-dotenv,"
            " pydantic); the tool from "
            + ", ".join(f"{root} ({name})" for name, root in tools.items())
            + f"\nmeasured: {args.rounds} interleaved rounds, the order rotating;"
            f" {case_count(suites['many'])} cases, {case_count(suites['few'])} at concurrency 1"
            f" with latency; loopback server in its own process answering after"
            f" {args.latency * 1000:.0f} ms and after 0 ms; SQLite WAL, synchronous=NORMAL,"
            f" busy timeout {BUSY_TIMEOUT_S:g} s, checkpoint every {WAL_CHECKPOINT_PAGES} pages;"
            " peak memory "
            + ("by GNU time" if GNU_TIME else "NOT MEASURABLE HERE (no /usr/bin/time)")
            + f"\nmachine at the start: {figures.machine()}\n",
            flush=True,
        )
        rows: list[dict[str, dict[str, Sample]]] = []
        with Loopback(args.latency) as slow, Loopback(0.0) as fast:
            # one untimed run of each first: page cache, bytecode and the servers warmed
            for root in tools.values():
                tool_sample(fast.base_url, suites["one"], work, 1, root)
            floor_sample(fast.base_url, bodies["one"], work, 1)
            for r in range(args.rounds):
                row: dict[str, dict[str, Sample]] = {}
                for c in plan:
                    url = (slow if c.latency else fast).base_url
                    who = [*tools, FLOOR_LABEL]
                    turn = (r + len(row)) % len(who)
                    row[c.label] = {}
                    for name in who[turn:] + who[:turn]:
                        if name == FLOOR_LABEL:
                            got = floor_sample(url, bodies[c.suite], work, c.concurrency)
                        else:
                            got = tool_sample(
                                url, suites[c.suite], work, c.concurrency, tools[name]
                            )
                        row[c.label][name] = got
                rows.append(row)
                print(f"round {r + 1}: {round_line(row, [*tools, FLOOR_LABEL])}", flush=True)
        for name in tools:
            report(rows, name, args.latency, plan)
        if len(tools) > 1:
            compare(rows, list(tools), plan)
        print(f"\nmachine at the end: {figures.machine()}")
    return 0


FLOOR_LABEL = "floor"


def label(root: Path) -> str:
    return "tool" if root.resolve() == REPO_ROOT else root.resolve().name


def round_line(row: dict[str, dict[str, Sample]], names: list[str]) -> str:
    """One round's times, each configuration's in the order of `names` (not the run order)."""
    parts = []
    for c, samples in row.items():
        what = "process" if c == "one case" else "wall"
        times = "/".join(f"{getattr(samples[n], what):.2f}" for n in names)
        parts.append(f"{'start-up' if c == 'one case' else c} {times}s")
    return "  ".join(parts) + f"   ({'/'.join(names)})"


def report(
    rows: list[dict[str, dict[str, Sample]]], tool: str, latency: float, plan: list[Config]
) -> None:
    print(f"\n{'figure':<20} {tool + ' / floor, median':<30} goal")
    met = True
    for name, c, what, goal in goals(latency):
        pairs = [(getattr(row[c][tool], what), getattr(row[c][FLOOR_LABEL], what)) for row in rows]
        if any(t is None or f is None for t, f in pairs):
            print(f"{name:<20} {'not measured':<30} <= {goal:.2f}x")
            continue
        ratios = [t / f for t, f in pairs]
        ok = statistics.median(ratios) <= goal
        met &= ok
        print(f"{name:<20} {figures.spread(ratios):<30} <= {goal:.2f}x {'met' if ok else 'MISSED'}")
    print("all goals met" if met else "some goals missed")
    print(f"the figures themselves, medians ({tool} / floor):")
    for c in plan:
        t = [row[c.label][tool] for row in rows]
        f = [row[c.label][FLOOR_LABEL] for row in rows]
        wall = "process" if c.suite == "one" else "wall"
        memory = f"  memory {med(t, 'peak_mb'):.0f}/{med(f, 'peak_mb'):.0f} MB"
        print(
            f"  {c.label:<12} {wall} {med(t, wall):.3f}/{med(f, wall):.3f} s"
            f"  cpu {med(t, 'cpu'):.3f}/{med(f, 'cpu'):.3f} s"
            + (memory if t[0].peak_mb is not None else "")
        )


def compare(rows: list[dict[str, dict[str, Sample]]], tools: list[str], plan: list[Config]) -> None:
    """The second tool against the first, within each round (before and after a change)."""
    first, second = tools[0], tools[1]
    print(f"\n{second} / {first}, within each round, median (range):")
    for c in plan:
        wall = "process" if c.suite == "one" else "wall"
        for what in (wall, "cpu"):
            ratios = [
                getattr(r[c.label][second], what) / getattr(r[c.label][first], what) for r in rows
            ]
            print(f"  {c.label:<12} {what:<8} {figures.spread(ratios)}")


def med(samples: list[Sample], what: str) -> float:
    return statistics.median(float(getattr(s, what)) for s in samples)


if __name__ == "__main__":
    sys.exit(main())
