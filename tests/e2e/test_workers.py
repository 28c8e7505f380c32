"""Workers on one run in PostgreSQL (issue 36): the real command, several processes at once.

Each test makes a fresh database on the test process's PostgreSQL (pgserver) and starts
`secbench-tui --no-ui --worker --db postgresql://...` as separate processes against a
loopback model that counts every request: every case is stored exactly once and asked once;
a worker killed with SIGKILL loses nothing, the others finish its cases once its leases run
out; a model limited to N requests a second, sharing its rate, reaches 0.9 N with no more
rate limits than one process alone meets.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import RETRY_BACKOFF, cli_env, wait_for, write_suite
from tests.e2e.postgres_stores import fresh_database, query
from tests.e2e.server import LoopbackServer, ReceivedRequest, expected_verdict, rate_limited

pytestmark = [pytest.mark.long, pytest.mark.xdist_group("postgres-store")]
MODEL = "openai/gpt-4o-mini"


def worker_args(base_url: str, db: str, cases: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "secbench_tui",
        "--no-ui",
        "--model",
        MODEL,
        "--base-url",
        base_url,
        "--db",
        db,
        "--cases",
        str(cases),
        "--retry-backoff",
        str(RETRY_BACKOFF),
        *extra,
    ]


def start(folder: Path, args: list[str], name: str) -> subprocess.Popen[str]:
    folder.mkdir(parents=True, exist_ok=True)
    out = open(folder / f"{name}.out", "w", encoding="utf-8")  # noqa: SIM115 - owned by Popen
    return subprocess.Popen(
        args, cwd=folder, env=cli_env("sk-or-test"), stdout=out, stderr=subprocess.STDOUT, text=True
    )


def finish(procs: list[subprocess.Popen[str]], folder: Path, timeout: float = 180) -> None:
    for proc in procs:
        proc.wait(timeout=timeout)
    outputs = {p.name: p.read_text() for p in folder.glob("*.out")}
    assert all(p.returncode == 0 for p in procs), outputs


def stored(db: str) -> list[tuple[Any, ...]]:
    return query(db, "SELECT run_id, case_id, repeat FROM evaluations ORDER BY id")


def asked(server: LoopbackServer) -> dict[str, int]:
    counts: dict[str, int] = {}
    for request in server.completions():
        marker = request.prompt.split("<<case:", 1)[1].split(">>", 1)[0]
        counts[marker] = counts.get(marker, 0) + 1
    return counts


def test_three_workers_store_every_case_once_and_ask_none_twice(
    tmp_path: Path, pg_url: str
) -> None:
    db = fresh_database(pg_url)
    cases = write_suite(tmp_path / "suite", {"shop": ["good", "bad"] * 12})
    with LoopbackServer(delay=0.05) as server:
        args = worker_args(
            server.base_url, db, tmp_path / "suite", "--worker", "--concurrency", "2"
        )
        procs = [start(tmp_path / "out", args, f"worker-{n}") for n in range(3)]
        finish(procs, tmp_path / "out")
        counts = asked(server)
    rows = stored(db)
    assert len({run for run, _, _ in rows}) == 1, "the three workers made one run"
    assert sorted(case for _, case, _ in rows) == sorted(c.case_id for c in cases)
    assert counts == {c.marker.strip("<>").removeprefix("case:"): 1 for c in cases}
    assert query(db, "SELECT status FROM runs") == [("completed",)]
    assert query(db, "SELECT COUNT(*) FROM queue WHERE state != 'done'") == [(0,)]
    # every worker that took part ended and left no lease behind
    assert query(db, "SELECT COUNT(*) FROM workers WHERE ended_at IS NULL") == [(0,)]


def test_a_worker_killed_mid_run_loses_nothing(tmp_path: Path, pg_url: str) -> None:
    db = fresh_database(pg_url)
    cases = write_suite(tmp_path / "suite", {"shop": ["good", "bad"] * 10})
    with LoopbackServer(delay=0.2) as server:
        args = worker_args(
            server.base_url, db, tmp_path / "suite", "--worker", "--concurrency", "2",
            "--lease", "2",
        )  # fmt: skip
        victim = start(tmp_path / "out", args, "victim")

        def holds_cases() -> bool:
            try:
                found = query(
                    db,
                    "SELECT COUNT(*) FROM queue q JOIN workers w ON w.id = q.worker_id"
                    " WHERE w.pid = %s AND q.state = 'leased'",
                    victim.pid,
                )
            except Exception:  # the tables are not made yet
                return False
            done = query(db, "SELECT COUNT(*) FROM queue WHERE state = 'done'")
            return bool(found[0][0]) and bool(done[0][0])

        wait_for(holds_cases, "the first worker to hold cases and store some")
        others = [start(tmp_path / "out", args, f"worker-{n}") for n in range(2)]
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
        finish(others, tmp_path / "out")
    rows = stored(db)
    assert sorted(case for _, case, _ in rows) == sorted(c.case_id for c in cases)
    assert query(db, "SELECT status FROM runs") == [("completed",)]
    killed = query(
        db, "SELECT COUNT(*) FROM workers WHERE pid = %s AND ended_at IS NULL", victim.pid
    )
    assert killed == [(1,)], "the killed worker never said goodbye: its leases ran out instead"


class LimitedModel:
    """A loopback model that answers `rate` requests a second (a token bucket of one
    second's requests) and refuses the rest with 429 and `Retry-After: 1`."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.tokens = rate
        self.at = time.monotonic()
        self.refused = 0
        self.answered: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, request: ReceivedRequest) -> Any:
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.rate, self.tokens + (now - self.at) * self.rate)
            self.at = now
            if self.tokens >= 1:
                self.tokens -= 1
                self.answered.append(now)
                return expected_verdict(request)
            self.refused += 1
        return rate_limited(retry_after=1)

    @property
    def throughput(self) -> float:
        """Requests answered a second, from the first answer to the last."""
        span = self.answered[-1] - self.answered[0]
        return (len(self.answered) - 1) / span


RATE = 10.0


def test_three_workers_share_one_rate_limit(tmp_path: Path, pg_url: str) -> None:
    write_suite(tmp_path / "suite", {"shop": ["good", "bad"] * 25})
    alone = LimitedModel(RATE)
    with LoopbackServer(default=alone, delay=0.05) as server:
        one = fresh_database(pg_url)
        proc = start(
            tmp_path / "alone",
            worker_args(server.base_url, one, tmp_path / "suite", "--concurrency", "4"),
            "alone",
        )
        finish([proc], tmp_path / "alone")
    shared = LimitedModel(RATE)
    with LoopbackServer(default=shared, delay=0.05) as server:
        db = fresh_database(pg_url)
        args = worker_args(
            server.base_url, db, tmp_path / "suite", "--worker", "--concurrency", "4",
            "--rate", f"{RATE:g}",
        )  # fmt: skip
        procs = [start(tmp_path / "out", args, f"worker-{n}") for n in range(3)]
        finish(procs, tmp_path / "out")
    assert len(stored(db)) == 50
    assert shared.refused <= alone.refused, (shared.refused, alone.refused)
    assert shared.throughput >= 0.9 * RATE, shared.throughput


def test_workers_share_the_requests_in_flight_the_model_allows(tmp_path: Path, pg_url: str) -> None:
    db = fresh_database(pg_url)
    write_suite(tmp_path / "suite", {"shop": ["good", "bad"] * 10})
    with LoopbackServer(delay=0.1) as server:
        args = worker_args(
            server.base_url, db, tmp_path / "suite", "--worker", "--concurrency", "8",
            "--shared-concurrency", "2", "--lease", "3",
        )  # fmt: skip
        procs = [start(tmp_path / "out", args, f"worker-{n}") for n in range(2)]
        finish(procs, tmp_path / "out")
        most = server.max_in_flight
    assert len(stored(db)) == 20
    # two of 8 each would be 16; the first alone holds 2, the second joins with its share
    # of 1 and the first takes its own share of 1 at its next heartbeat: 3 at the very most
    assert most <= 3, most
