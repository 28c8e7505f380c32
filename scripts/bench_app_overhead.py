"""The terminal app's overhead on a run: the same run in the app and headless, as a ratio.

    python scripts/bench_app_overhead.py [--cases 80] [--delay 0.2] [--concurrency 4] [--rounds 3]

Both runs ask the loopback OpenRouter server (tests/e2e/server.py, in its own process, with
`--delay` seconds on every request) the first `--cases` cases of the bundled suite, each into
a fresh database (nothing reused). The figure compared is the run's own wall time as the
engine records it in its summary (from its first request to its end), so process start and
imports are left out of both: headless from `--summary-json`, the app (driven headless by
Textual's `run_test`, a real event loop drawing every event) from its run screen. Each round
runs both, the order alternating from round to round; the ratio is taken within a round (both
saw the same machine) and the median ratio is printed with its range and the load average.
Target: at most 1.05. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

APP_PROBE = """
import asyncio, sys
from pathlib import Path
from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens.run import RunScreen

async def main():
    settings = Settings(model="openai/gpt-4o-mini", db=Path(sys.argv[1]), base_url=sys.argv[2],
                        limit=int(sys.argv[3]), concurrency=int(sys.argv[4]), api_key="sk-bench")
    app = make_app(settings, offline_catalog=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.5)
        await pilot.press("ctrl+r")
        while not isinstance(app.screen, RunScreen) or app.screen.finished is None:
            await asyncio.sleep(0.05)  # not pilot.pause: that draws the screen each time
        print(app.screen.finished.summary.wall_seconds)

asyncio.run(main())
"""


def headless(base_url: str, work: Path, args: argparse.Namespace) -> float:
    summary = work / "summary.json"
    subprocess.run(
        [
            sys.executable, "-m", "secbench_tui", "--no-ui", "--model", "openai/gpt-4o-mini",
            "--base-url", base_url, "--db", str(work / "headless.db"), "--limit",
            str(args.cases), "--concurrency", str(args.concurrency), "--summary-json",
            str(summary),
        ],
        check=True, capture_output=True, cwd=work,
        env={"OPENROUTER_API_KEY": "sk-bench", "PATH": "/usr/bin:/bin", "HOME": str(work)},
    )  # fmt: skip
    return float(json.loads(summary.read_text())["wall_seconds"])


def in_app(base_url: str, work: Path, args: argparse.Namespace) -> float:
    out = subprocess.run(
        [sys.executable, "-c", APP_PROBE, str(work / "app.db"), base_url, str(args.cases),
         str(args.concurrency)],
        check=True, capture_output=True, text=True, cwd=work,
        env={"PATH": "/usr/bin:/bin", "HOME": str(work), "PYTHONPATH": str(REPO),
             "XDG_CACHE_HOME": str(work / "cache")},
    )  # fmt: skip
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--cases", type=int, default=80)
    p.add_argument("--delay", type=float, default=0.2)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    server = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "e2e" / "server.py"), "--delay", str(args.delay),
         "--until-stdin-closes"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().split()[1]
        times: dict[str, list[float]] = {"headless": [], "app": []}
        ratios: list[float] = []
        for n in range(args.rounds):
            order = (("headless", headless), ("app", in_app))
            for name, run in order if n % 2 == 0 else order[::-1]:
                with tempfile.TemporaryDirectory() as tmp:
                    times[name].append(run(base_url, Path(tmp), args))
            ratios.append(times["app"][-1] / times["headless"][-1])
            print(f"round {n + 1}: headless {times['headless'][-1]:.2f} s, app "
                  f"{times['app'][-1]:.2f} s, ratio {ratios[-1]:.3f}", flush=True)  # fmt: skip
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=10)
    head, app = statistics.median(times["headless"]), statistics.median(times["app"])
    print(f"{args.cases} cases, {args.delay:g} s per request, concurrency {args.concurrency}:")
    print(f"median run wall: headless {head:.2f} s, app {app:.2f} s")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    median = statistics.median(ratios)
    print(
        f"app / headless, within a round: median {median:.3f} (range {min(ratios):.3f}-"
        f"{max(ratios):.3f}; load average {load}; goal at most 1.05)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
