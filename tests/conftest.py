"""What every test shares: nothing outside its own folders, but one PostgreSQL per process.

The tests run in parallel (`pytest -n auto`), so none may write where another reads: the model
catalog the program caches under `$XDG_CACHE_HOME` goes to the test's own folder (inherited by
the commands the tests start), never to the user's `~/.cache`. The PostgreSQL of `pg_url` is
shared by the tests of one process (one xdist worker), one after another.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Module- and session-scoped fixtures run the program before any test's own folder
    exists: their cache goes to a folder of this test process, not to `~/.cache`."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("session-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` starts one worker more than there are processors: much of the tests' time
    is spent waiting (on PostgreSQL, the program run as a subprocess, tmux, chromium), and a
    third worker on 2 cores fills that time (docs/development.md, "How long they take", has
    the figures).
    The environment's `PYTEST_XDIST_AUTO_NUM_WORKERS` still decides when it is set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `long` first (in their own order): with `-n auto` the run then ends on
    short tests that fill both workers, not on one long test started last."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """One PostgreSQL (pgserver) for the test process, given to `--verify`, the rewrites' gate
    and the sandbox tests as `--pg-url`: starting one takes seconds, and each verification
    makes and drops databases and roles of its own, so they can share it (each xdist worker
    has its own). Tests of the command's own server (started and removed by `--verify`)
    leave `--pg-url` out. Its folder is under /tmp, not pytest's: as root, pgserver runs
    PostgreSQL as another user, who cannot enter pytest's private folders."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pgserver = pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")
    with tempfile.TemporaryDirectory(prefix="secbench-test-pg-") as folder:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pgserver.get_server(folder, cleanup_mode="delete")
        try:
            _throwaway(str(server.get_uri()))
            yield str(server.get_uri())
        finally:
            server.cleanup()


def _throwaway(uri: str) -> None:
    """The test server's writes do not wait for the disk, as the command's embedded server's
    do not (`core/verify/server.py`, THROWAWAY): its folder goes when the tests end."""
    import psycopg

    from secbench_tui.core.verify.server import THROWAWAY

    with psycopg.connect(uri, autocommit=True) as admin:
        for setting in THROWAWAY:
            admin.execute(f"ALTER SYSTEM SET {setting} = off")
        admin.execute("SELECT pg_catalog.pg_reload_conf()")
