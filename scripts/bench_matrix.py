"""Do two models take about the time of one? (a benchmark, not a test)

Runs the real command (`python -m secbench_tui --no-ui`) against the loopback OpenAI-compatible
server (scripts/harness/loopback.py, in its own process) answering after `--latency` seconds,
at `--concurrency` per model: first one model, then two models in one command (each with its
own concurrency, as rate limits are per model). Prints both whole-process times and their
ratio; the target is at most 1.35x. The one-model run is the baseline, taken in the same
script run on the same machine.

Usage: python scripts/bench_matrix.py [--cases 40] [--latency 0.3] [--concurrency 2]
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scripts.harness import figures  # noqa: E402
from scripts.harness.loopback import Loopback  # noqa: E402
from scripts.harness.processes import run_tool  # noqa: E402
from scripts.harness.suites import write_suite  # noqa: E402

MODELS = ("openai/gpt-4o-mini", "anthropic/claude-3.5-haiku")
TARGET = 1.35


def main(argv: list[str] | None = None) -> int:
    p = figures.parser(__doc__, cases=40, latency=0.3, concurrency=2)
    args = p.parse_args(argv)
    with figures.workdir("bench-matrix-", args.keep) as work, Loopback(args.latency) as server:
        suite = write_suite(work / "suite", {"app": ["good", "bad"] * (args.cases // 2)})
        took = []
        for n in (1, 2):
            (work / f"r{n}").mkdir()
            _, m = run_tool(
                server.base_url, suite, work / f"r{n}" / "results.db", args.concurrency,
                models=MODELS[:n], max_retries=None,
            )  # fmt: skip
            took.append(m.elapsed)
    one, two = took
    ideal = args.cases * args.latency / args.concurrency
    print(
        f"{args.cases} cases, {args.latency * 1000:.0f} ms per request, "
        f"concurrency {args.concurrency} per model (ideal per model {ideal:.1f} s); "
        f"{figures.machine()}"
    )
    print(f"one model:  {one:6.2f} s (whole process)")
    print(f"two models: {two:6.2f} s (whole process, one command)")
    ratio = two / one
    verdict = "met" if ratio <= TARGET else "NOT met"
    print(f"ratio:      {ratio:6.2f}x (target <= {TARGET}x): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
