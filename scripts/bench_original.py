"""Benchmark adopting a database the original security-bench wrote.

Writes a results.db as the original's final version does (rows of 240 cases x N prompts x M
models, request and response bodies like OpenRouter's), then times: a baseline of reading
every row's columns once with plain sqlite3; the first `Store.open` (copy beside it, columns
added, every row imported); a second open (nothing to do); and an open after the original
appended one more prompt's worth of rows. Prints the figures and the ratios to the baseline
taken in the same run; asserts nothing.

    python scripts/bench_original.py [--prompts 6] [--models 1]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scripts.harness import original_db as original  # noqa: E402
from scripts.harness.original_db import Row  # noqa: E402
from secbench_tui.core.store.database import Store  # noqa: E402

CASES = 240


def rows(model: str, prompt: str) -> list[Row]:
    code = "SELECT o.id, o.total FROM orders o WHERE o.id = :id AND o.tenant_id = :tenant;\n" * 6
    return [
        Row(
            test_file=f"/home/u/security-bench/tests/app-{n % 3}/case-{n:03d}.md",
            model=model,
            expected="bad" if n % 2 else "good",
            actual="bad" if n % 3 else "good",
            prompt=prompt,
            code=code + f"-- {n}",
            served_model=f"{model}-2024",
            provider="OpenAI",
            prompt_tokens=900 + n,
            completion_tokens=120,
            cost=0.0002,
            explanation="The query filters by tenant, but the caller's role is not checked. " * 4,
        )
        for n in range(CASES)
    ]


async def opened(db: Path) -> float:
    start = time.perf_counter()
    store = await Store.open(db, on_notice=lambda text: None)
    await store.close()
    return time.perf_counter() - start


def baseline(db: Path) -> float:
    start = time.perf_counter()
    with closing(sqlite3.connect(db)) as conn:
        for _ in conn.execute(original.READ_ALL):
            pass
    return time.perf_counter() - start


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--models", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "results.db"
        original.create(db)
        for m in range(args.models):
            for p in range(args.prompts):
                original.append(db, rows(f"vendor/model-{m}", f"prompt-{p}.txt"))
        total = CASES * args.prompts * args.models
        size = db.stat().st_size / 1e6
        base = baseline(db)
        first = await opened(db)
        again = await opened(db)
        original.append(db, rows("vendor/model-0", "later.txt"))
        later = await opened(db)
        print(f"original database: {total:,} rows, {size:.1f} MB")
        print(f"baseline, read every row once with sqlite3: {base * 1000:8.1f} ms")
        for label, took in (
            ("first open (copy, adopt, import all)", first),
            ("second open (nothing new)", again),
            (f"open after the original appended {CASES} rows", later),
        ):
            print(f"{label:<46} {took * 1000:8.1f} ms  {took / base:6.1f}x baseline")


if __name__ == "__main__":
    asyncio.run(main())
