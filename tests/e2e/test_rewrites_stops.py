"""Ctrl+C and SIGTERM while `--rewrites` proves its variants on the embedded PostgreSQL.

Issue 30, item 6: Ctrl+C was ignored while variants were proved (two presses ignored, then
every request sent, exit 0), and SIGTERM ended the command with no message and left the
embedded PostgreSQL and its folders running. Here the real command proves variants of a case
whose every execution sleeps, on the embedded server it starts itself, and is signalled while
a statement of the proving runs: it must exit with its code and a message, send no request to
the model's server, and leave no server process and no folder behind. Needs the verify extra.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import textwrap
import warnings
from pathlib import Path

import pytest

from tests.e2e.harness import cli_args, cli_env
from tests.e2e.server import LoopbackServer, answer
from tests.e2e.test_verify_sandbox import _backends_of, _ours, _wait_for

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")

pytestmark = pytest.mark.long  # PostgreSQL work: started first

FIXTURES = """
CREATE TABLE notes (id int PRIMARY KEY, owner int NOT NULL, body text NOT NULL);
INSERT INTO notes VALUES (1, 1, 'mine'), (2, 2, 'theirs');
"""
SCENARIO = """# Parameters
{"user": 1}
{"user": 2}

# Property
```sql
SELECT r.row FROM result r JOIN notes n ON n.id = (r.row->>'id')::int WHERE n.owner <> :user
```
"""
# Each execution sleeps (well within the deadline): proving its variants takes minutes.
SLOW = """
-- the caller's notes
SELECT n.id, n.body
FROM notes n
WHERE n.owner = :user AND pg_sleep(4) IS NOT NULL
"""


def _running_a_case(temp: str) -> bool:
    """A backend of the case role is running a statement (its title ends in its command)."""
    return any(t.rstrip().endswith(" SELECT") for t in _backends_of(temp, "_case "))


def _suite(root: Path) -> Path:
    app = root / "suite" / "notes"
    (app / "verify").mkdir(parents=True)
    (app / "SPEC.md").write_text("# Prompt\nNotes belong to their owner.\n", encoding="utf-8")
    (app / "verify" / "fixtures.sql").write_text(FIXTURES, encoding="utf-8")
    (app / "verify" / "mine.md").write_text(SCENARIO, encoding="utf-8")
    code = textwrap.dedent(SLOW).strip()
    (app / "mine-01-good.md").write_text(
        f"# Code\n```sql\n{code}\n```\n\n# Expected\ngood\n", encoding="utf-8"
    )
    return root / "suite"


@pytest.mark.parametrize(
    "signals",
    [(signal.SIGINT,), (signal.SIGTERM,), (signal.SIGINT, signal.SIGINT)],
    ids=["sigint", "sigterm", "sigint-twice"],
)
def test_a_stop_while_rewrites_are_proved_sends_nothing_and_leaves_nothing(
    tmp_path: Path, signals: tuple[int, ...]
) -> None:
    suite = _suite(tmp_path)
    db = tmp_path / "results.db"
    # under /tmp itself, and not writable by others (pgserver's PostgreSQL runs as another
    # user when the tests run as root; platformdirs refuses a TMPDIR others may write to)
    with (
        LoopbackServer(default=lambda _request: answer("good")) as server,
        tempfile.TemporaryDirectory(prefix="secbench-test-stop-") as temp,
    ):
        os.chmod(temp, 0o755)
        args = cli_args(server.base_url, db, suite, "--rewrites", "layout,comments-removed")
        proc = subprocess.Popen(
            args,
            cwd=tmp_path,
            env=cli_env("sk-test", TMPDIR=temp),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_for(lambda: bool(_ours(temp)), "the embedded PostgreSQL")
            _wait_for(lambda: _running_a_case(temp), "a statement of the proving")
        finally:
            for sig in signals:
                proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)

        code = 143 if signals[0] == signal.SIGTERM else 130
        assert proc.returncode == code, err
        assert "Traceback" not in err
        if len(signals) == 1:
            assert "before any request was sent" in err, err
            assert "embedded PostgreSQL are removed" in err, err
        assert server.request_count == 0  # nothing was asked of the model, then or later
        assert _ours(temp) == []  # no server process
        assert [p.name for p in Path(temp).iterdir() if p.name.startswith("secbench")] == []
