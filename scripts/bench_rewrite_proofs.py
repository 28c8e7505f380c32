"""Benchmark proofs kept: `--rewrites all --dry-run` on the bundled suite, twice, with one
cache folder (target: the second under a tenth of the first).

The first dry run proves every variant on an embedded PostgreSQL and keeps each decision; the
second, over the unchanged suite, reads them back and starts no server. Both are the real
command in a fresh process (an offline baseline model: nothing is asked of the network), so
the ratio is same stack, same machine, same run. Prints the figures; asserts nothing.

    python scripts/bench_rewrite_proofs.py [--apps purchase-order] [--relations all]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scripts.harness.processes import bench_env, measure  # noqa: E402
from secbench_tui.config import bundled_cases_dir  # noqa: E402

TARGET_RATIO = 0.1


def dry_run(folder: Path, relations: str, apps: str | None) -> list[str]:
    args = [sys.executable, "-m", "secbench_tui", "--no-ui", "--model", "baseline/always-bad"]
    args += ["--cases", str(bundled_cases_dir()), "--db", str(folder / "results.db")]
    args += ["--rewrites", relations, "--dry-run", *(["--apps", apps] if apps else [])]
    return args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--relations", default="all", help="--rewrites (default: all)")
    parser.add_argument("--apps", default=None, help="--apps (default: every app)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="secbench-bench-proofs-") as scratch:
        folder = Path(scratch)
        env = bench_env(XDG_CACHE_HOME=str(folder / "cache"))
        args = dry_run(folder, options.relations, options.apps)
        first = measure(args, folder, env)
        second = measure(args, folder, env)
    for name, measured in (("first", first), ("second", second)):
        said = next((x for x in measured.stdout.splitlines() if x.startswith("rewrites:")), "")
        print(f"{name} dry run: {measured.elapsed:.1f} s wall, {measured.cpu:.1f} s cpu: {said}")
    ratio = second.elapsed / first.elapsed
    verdict = "met" if ratio < TARGET_RATIO else "NOT met"
    print(f"second / first: {ratio:.3f} (target < {TARGET_RATIO}: {verdict})")


if __name__ == "__main__":
    main()
