"""Several processes opening the same new database at once: each must get a usable store.

Real processes on a real file: the race is between SQLite connections in different processes
(each reads the schema version, then waits for the write lock to migrate), which threads in one
interpreter would not reproduce faithfully.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from secbench_tui.core.store.database import SCHEMA_VERSION

OPENER = """
import asyncio, sys, time
from pathlib import Path
from secbench_tui.core.store.database import Store, StoreError

async def main() -> None:
    gate = Path(sys.argv[2])
    while not gate.exists():  # start together, as several runs launched by one script do
        time.sleep(0.001)
    try:
        store = await Store.open(sys.argv[1])
    except StoreError as exc:
        print(f"FAILED {exc}")
        return
    await store.close()
    print("OPENED")

asyncio.run(main())
"""

PROCESSES = 8
ROUNDS = 6  # one round in four or so failed before the version was read under the lock


def test_concurrent_first_opens_of_a_new_database_all_succeed(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        db = tmp_path / f"results-{round_}.db"
        gate = tmp_path / f"go-{round_}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPENER, str(db), str(gate)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(PROCESSES)
        ]
        time.sleep(0.3)  # let the interpreters start, so the gate releases them together
        gate.touch()
        outputs = [proc.communicate(timeout=60) for proc in procs]
        failures = [out + err for out, err in outputs if "OPENED" not in out]
        assert not failures, f"round {round_}: {failures[0]}"
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
            columns = [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
        assert columns.count("pid") == 1
