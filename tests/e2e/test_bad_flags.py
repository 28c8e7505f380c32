"""Flags whose value cannot work are refused before anything is written or sent: exit 2, one
line `secbench-tui: error: --flag: ...` naming the flag, neutralised, nothing recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.harness import FAKE_KEY, run_cli, write_suite
from tests.e2e.server import LoopbackServer

EXIT_USAGE = 2


@pytest.mark.parametrize(
    ("tail", "why"),
    [
        ("\x1b[2J", "Invalid non-printable ASCII character in URL"),
        (":99999", "Port out of range"),
    ],
)
def test_a_base_url_the_client_would_refuse_is_refused_up_front(
    tmp_path: Path, server: LoopbackServer, tail: str, why: str
) -> None:
    write_suite(tmp_path / "suite", {"app": ["bad", "good"]})
    db = tmp_path / "r.db"
    host = server.base_url.split("//", 1)[1].split(":", 1)[0]
    url = f"http://{host}{tail}/" if tail.startswith(":") else server.base_url + tail

    result = run_cli(url, db, tmp_path / "suite", key=FAKE_KEY)

    assert result.returncode == EXIT_USAGE, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("secbench-tui: error: --base-url: ") and why in line
    assert "\x1b" not in result.stderr + result.stdout
    assert not db.exists()
    assert server.completions() == []
