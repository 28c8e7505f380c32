"""The floor secbench-tui is measured against: a bare loop of httpx and aiosqlite.

It sends the request bodies the tool sent (read from a file, one JSON body a line, byte for
byte), with the tool's client settings (one `httpx.AsyncClient`, as many connections as
workers, the same headers), reads each reply as JSON, and commits one row per case into SQLite
with the tool's settings (WAL, `synchronous=NORMAL`, `wal_autocheckpoint=10000`): what any
harness must do at the least.
Nothing else: no suite, no retries, no scoring, no display.

Run by `scripts/bench_floor.py` in its own process, so that its start-up and peak memory are
measured the same way as the tool's. Prints one JSON line: `{"wall": seconds, "cases": n}`,
the wall time from the first request to the last commit.

Usage: python scripts/floor_loop.py BASE_URL BODIES_FILE DB CONCURRENCY
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import aiosqlite
import httpx


async def main(base_url: str, bodies_path: str, db_path: str, concurrency: int) -> None:
    with open(bodies_path, "rb") as f:
        bodies = [line.rstrip(b"\n") for line in f if line.strip()]
    db = await aiosqlite.connect(db_path)
    await db.execute("PRAGMA journal_mode=WAL")
    await db.execute("PRAGMA synchronous=NORMAL")
    await db.execute("PRAGMA wal_autocheckpoint=10000")  # the tool's; at 1 page per row, no
    # checkpoint falls inside the timed loop either way
    await db.execute(
        "CREATE TABLE IF NOT EXISTS results (id INTEGER PRIMARY KEY, n INTEGER, reply TEXT)"
    )
    await db.commit()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer floor"}
    url = base_url.rstrip("/") + "/chat/completions"
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(60, connect=15),
        limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
    ) as client:
        todo = iter(enumerate(bodies))

        async def worker() -> None:
            for n, body in todo:
                response = await client.post(url, content=body, headers=headers)
                data = json.loads(response.text)
                reply = data["choices"][0]["message"]["content"]
                await db.execute("INSERT INTO results (n, reply) VALUES (?, ?)", (n, reply))
                await db.commit()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    await db.close()
    print(json.dumps({"wall": wall, "cases": len(bodies)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
