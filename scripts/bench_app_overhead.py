"""The terminal app's overhead on a run: the same run in the app and headless, as a ratio.

    python scripts/bench_app_overhead.py [--cases 80] [--latency 0.2] [--concurrency 4]
                                         [--rounds 3] [--tool-root DIR]

Both runs ask the loopback OpenAI-compatible server (scripts/harness/loopback.py, in its own
process, answering after `--latency` seconds) the first `--cases` cases of the bundled suite,
each into a fresh database (nothing reused), with the tool from the checkout `--tool-root` (by
default this one). The figure compared is the run's own wall time as the
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
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scripts.harness import MODEL, figures  # noqa: E402
from scripts.harness.loopback import Loopback  # noqa: E402
from scripts.harness.processes import bench_env  # noqa: E402

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
            sys.executable, "-m", "secbench_tui", "--no-ui", "--model", MODEL,
            "--base-url", base_url, "--db", str(work / "headless.db"), "--limit",
            str(args.cases), "--concurrency", str(args.concurrency), "--summary-json",
            str(summary),
        ],
        check=True, capture_output=True, cwd=work,
        env=bench_env(args.tool_root, OPENROUTER_API_KEY="sk-bench", HOME=str(work)),
    )  # fmt: skip
    return float(json.loads(summary.read_text())["wall_seconds"])


def in_app(base_url: str, work: Path, args: argparse.Namespace) -> float:
    out = subprocess.run(
        [sys.executable, "-c", APP_PROBE, str(work / "app.db"), base_url, str(args.cases),
         str(args.concurrency)],
        check=True, capture_output=True, text=True, cwd=work,
        env=bench_env(args.tool_root, HOME=str(work)),
    )  # fmt: skip
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = figures.parser(__doc__, cases=80, rounds=3, latency=0.2, concurrency=4, keep=False)
    p.add_argument("--tool-root", type=Path, default=REPO_ROOT, help="the tool's checkout")
    args = p.parse_args(argv)
    times: dict[str, list[float]] = {"headless": [], "app": []}
    ratios: list[float] = []
    with Loopback(args.latency) as server:
        for n in range(args.rounds):
            order = (("headless", headless), ("app", in_app))
            for name, run in order if n % 2 == 0 else order[::-1]:
                with tempfile.TemporaryDirectory() as tmp:
                    times[name].append(run(server.base_url, Path(tmp), args))
            ratios.append(times["app"][-1] / times["headless"][-1])
            print(f"round {n + 1}: headless {times['headless'][-1]:.2f} s, app "
                  f"{times['app'][-1]:.2f} s, ratio {ratios[-1]:.3f}", flush=True)  # fmt: skip
    head, app = statistics.median(times["headless"]), statistics.median(times["app"])
    print(
        f"{args.cases} cases, {args.latency:g} s per request, concurrency {args.concurrency},"
        f" the tool from {args.tool_root.resolve()}:"
    )
    print(f"median run wall: headless {head:.2f} s, app {app:.2f} s")
    median = statistics.median(ratios)
    print(
        f"app / headless, within a round: median {median:.3f} (range {min(ratios):.3f}-"
        f"{max(ratios):.3f}; load average {figures.load()}; goal at most 1.05)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
