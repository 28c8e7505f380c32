"""The floor secbench-tui is measured against: the least a harness on the same stack must do.

The same stack as the tool: python-dotenv loaded at start, one `httpx.AsyncClient` with as many
connections as workers, aiosqlite with the tool's SQLite settings (WAL, `synchronous=NORMAL`,
its busy timeout and its checkpoint pages, given on the command line by the benchmark, which
reads them from the tool), and each reply validated by a pydantic model, the verdict inside it
too. It sends the request bodies the tool sent (read from a file, one JSON body a line, sent
with httpx's `json=`: the same bytes) and commits one row per case. Nothing else: no suite, no
retries, no scoring beyond the verdict, no display.

Run by `scripts/bench_floor.py` in its own process, so that its start-up and peak memory are
measured the same way as the tool's. Prints one JSON line: `{"wall": seconds, "cases": n}`,
the wall time from the first request to the last commit.

Usage: python scripts/floor_loop.py BASE_URL BODIES DB CONCURRENCY
           [--busy-timeout-ms 5000] [--checkpoint-pages 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any, Literal

import aiosqlite
import httpx
from dotenv import load_dotenv
from pydantic import BaseModel


class Verdict(BaseModel):
    assessment: Literal["good", "bad"]
    explanation: str


class Message(BaseModel):
    content: str


class Choice(BaseModel):
    message: Message
    finish_reason: str | None = None


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    cost: float | None = None


class Reply(BaseModel):
    id: str
    model: str
    choices: list[Choice]
    usage: Usage | None = None


async def open_db(path: str, busy_timeout_ms: int, checkpoint_pages: int) -> aiosqlite.Connection:
    db = await aiosqlite.connect(path)
    await db.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
    await db.execute("PRAGMA journal_mode=WAL")
    await db.execute("PRAGMA synchronous=NORMAL")
    await db.execute(f"PRAGMA wal_autocheckpoint={checkpoint_pages}")
    await db.execute(
        "CREATE TABLE IF NOT EXISTS results (id INTEGER PRIMARY KEY, n INTEGER,"
        " assessment TEXT, explanation TEXT, reply TEXT, prompt_tokens INTEGER,"
        " completion_tokens INTEGER, cost REAL)"
    )
    await db.commit()
    return db


async def run(args: argparse.Namespace, bodies: list[Any]) -> float:
    db = await open_db(args.db, args.busy_timeout_ms, args.checkpoint_pages)
    url = args.base_url.rstrip("/") + "/chat/completions"
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(60, connect=15),
        limits=httpx.Limits(
            max_connections=args.concurrency, max_keepalive_connections=args.concurrency
        ),
    ) as client:
        todo = iter(enumerate(bodies))

        async def worker() -> None:
            for n, body in todo:
                response = await client.post(url, json=body)
                response.raise_for_status()
                reply = Reply.model_validate_json(response.content)
                text = reply.choices[0].message.content
                verdict = Verdict.model_validate_json(text)
                usage = reply.usage or Usage(prompt_tokens=0, completion_tokens=0)
                await db.execute(
                    "INSERT INTO results (n, assessment, explanation, reply, prompt_tokens,"
                    " completion_tokens, cost) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        n,
                        verdict.assessment,
                        verdict.explanation,
                        text,
                        usage.prompt_tokens,
                        usage.completion_tokens,
                        usage.cost,
                    ),
                )
                await db.commit()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        wall = time.perf_counter() - started
    await db.close()
    return wall


def main() -> None:
    load_dotenv()  # as any program configured by a .env file does at start
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("base_url")
    p.add_argument("bodies", help="a file of request bodies, one JSON body a line")
    p.add_argument("db")
    p.add_argument("concurrency", type=int)
    p.add_argument("--busy-timeout-ms", type=int, default=5000)
    p.add_argument("--checkpoint-pages", type=int, default=1000)
    args = p.parse_args()
    with open(args.bodies, "rb") as f:
        bodies = [json.loads(line) for line in f if line.strip()]
    wall = asyncio.run(run(args, bodies))
    print(json.dumps({"wall": wall, "cases": len(bodies)}), flush=True)


if __name__ == "__main__":
    main()
