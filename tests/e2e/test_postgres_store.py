"""The store on PostgreSQL (issue 36): the same run gives the same report and exports there as
on SQLite, and `--migrate-db` copies a store into PostgreSQL and back without changing one
exported figure, idempotently."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from secbench_tui.core.store.location import PostgresUrl
from tests.e2e.harness import cli_env, run_cli, write_suite
from tests.e2e.postgres_stores import fresh_database, query
from tests.e2e.server import LoopbackServer, garbage, rate_limited

pytestmark = [pytest.mark.long, pytest.mark.xdist_group("postgres-store")]


def command(folder: Path, *args: str) -> str:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "secbench_tui", *args],
        cwd=folder,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def exports(folder: Path, db: str) -> dict[str, str]:
    found = {}
    for kind in ("json", "csv", "junit"):
        out = folder / f"export.{kind}"
        command(folder, "--export", kind, "--db", db, "--out", str(out))
        found[kind] = out.read_text(encoding="utf-8")
    report = folder / "report.html"
    command(folder, "--report", "--db", db, "--out", str(report))
    found["report"] = report.read_text(encoding="utf-8")
    return found


# What differs between two runs of the same cases, or between two stores' names: when a row
# was written, how long its request took, when the export was made, and where from.
VOLATILE_JSON = {"timestamp", "latency_ms", "generated_at", "database", "started_at"}
VOLATILE_JSON |= {"finished_at", "wall_seconds", "duration_seconds"}


def _steady(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _steady(v)
            for k, v in value.items()
            if k not in VOLATILE_JSON and not k.startswith("latency")
        }
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def steady_csv(text: str) -> list[dict[str, str]]:
    rows = list(csv.DictReader(io.StringIO(text)))
    return [
        {k: v for k, v in row.items() if k not in VOLATILE_JSON and not k.startswith("latency")}
        for row in rows
    ]


def steady_junit(text: str) -> str:
    return re.sub(r' (timestamp|time)="[^"]*"', "", text)


def test_the_same_run_exports_the_same_on_sqlite_and_postgresql(
    tmp_path: Path, pg_url: str
) -> None:
    write_suite(tmp_path / "suite", {"shop": ["good", "bad"] * 4, "bank": ["bad", "good"] * 3})
    made: dict[str, dict[str, str]] = {}
    server = LoopbackServer().start()  # one endpoint for both: the same base URL recorded
    for name, db in (("sqlite", str(tmp_path / "results.db")), ("pg", fresh_database(pg_url))):
        server.reset()
        server.script("<<case:shop-0002>>", garbage())  # an unparsed reply
        server.script("<<case:bank-0001>>", rate_limited(retry_after=0))  # a retry
        result = run_cli(
            server.base_url, tmp_path / "results.db", tmp_path / "suite", "--db", db,
            "--repeats", "2", key="sk-or-test",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        folder = tmp_path / name
        folder.mkdir()
        made[name] = exports(folder, db)
    server.stop()
    sqlite, pg = made["sqlite"], made["pg"]
    assert _steady(json.loads(pg["json"])) == _steady(json.loads(sqlite["json"]))
    assert steady_csv(pg["csv"]) == steady_csv(sqlite["csv"])
    assert steady_junit(pg["junit"]) == steady_junit(sqlite["junit"])


def test_migrate_db_round_trips_a_store_in_every_exported_figure(
    tmp_path: Path, pg_url: str
) -> None:
    write_suite(tmp_path / "suite", {"shop": ["good", "bad"] * 5})
    source = tmp_path / "results.db"
    with LoopbackServer() as server:
        server.script("<<case:shop-0003>>", garbage())
        for model in ("openai/gpt-4o-mini", "anthropic/claude-3.5-haiku"):
            result = run_cli(
                server.base_url, source, tmp_path / "suite", model=model, key="sk-or-test"
            )
            assert result.returncode == 0, result.stderr
    pg = fresh_database(pg_url)
    first = command(tmp_path, "--migrate-db", str(source), pg)
    assert "copied 2 runs" in first and "20 evaluations" in first
    again = command(tmp_path, "--migrate-db", str(source), pg)
    assert "copied 0 runs" in again, "a second copy adds nothing"
    back = tmp_path / "back.db"
    command(tmp_path, "--migrate-db", pg, str(back))
    for name, db in (("sqlite", str(source)), ("pg", pg), ("back", str(back))):
        (tmp_path / name).mkdir()
        found = exports(tmp_path / name, db)
        found["json"] = json.dumps(
            {
                k: v
                for k, v in json.loads(found["json"]).items()
                if k not in ("generated_at", "database")
            }
        )
        shown = str(PostgresUrl(db)) if name == "pg" else db  # the store as the report names it
        report = found["report"].replace(f"<code>{shown}</code>", "<code>DB</code>")
        found["report"] = re.sub(r"Generated \S+ \S+ UTC", "Generated", report)
        if name == "sqlite":
            expected = found
        else:
            assert found["json"] == expected["json"], name
            assert found["csv"] == expected["csv"], name
            assert found["junit"] == expected["junit"], name
            assert found["report"] == expected["report"], name
    assert query(pg, "SELECT COUNT(*) FROM evaluations") == [(20,)]
    # the next run on the copy gets the next id, not one the copy already holds
    with LoopbackServer() as server:
        result = run_cli(
            server.base_url, source, tmp_path / "suite", "--db", pg, "--force", key="sk-or-test"
        )
        assert result.returncode == 0, result.stderr
    assert query(pg, "SELECT MAX(id) FROM runs") == [(3,)]


def test_migrate_db_refuses_a_target_that_holds_other_results(tmp_path: Path) -> None:
    import subprocess
    import sys

    write_suite(tmp_path / "suite", {"shop": ["good", "bad"]})
    with LoopbackServer() as server:
        for db in ("a.db", "b.db"):
            result = run_cli(
                server.base_url, tmp_path / db, tmp_path / "suite", "--force", key="sk-or-test"
            )
            assert result.returncode == 0, result.stderr
    done = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--migrate-db", "a.db", "b.db"],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "already holds other results" in done.stderr
