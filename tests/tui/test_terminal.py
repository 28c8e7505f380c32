"""The app in a real terminal (tmux): it draws, runs from the keyboard, and quits cleanly."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.e2e.harness import secret_url, write_hostile_suite, write_suite
from tests.e2e.server import (
    HOSTILE,
    LoopbackServer,
    answer,
    delayed,
    hostile_models,
    rate_limited,
)

REPO = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
    pytest.mark.long,  # seconds of waiting on a real terminal: started first, beside the rest
]


def open_terminal(
    tmp_path: Path, command: str, size: tuple[int, int] = (120, 40)
) -> tuple[list[str], str, Callable[..., str]]:
    """`command` in a tmux session of its own (120x40 unless `size`); returns (tmux argv,
    session, screen)."""
    name = f"secbench-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"  # parallel tests: one each
    tmux = ["tmux", "-L", name]  # a tmux server of its own: no clash with any other session
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": str(REPO),
        "TERM": "xterm-256color",
    }
    env.pop("OPENROUTER_API_KEY", None)
    # the pane's size must rule: pytest-xdist's workers set COLUMNS=80 and LINES=24, which the
    # app would otherwise take for the terminal's size (and hide its side panes)
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    subprocess.run(
        [
            *tmux,
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            str(size[0]),
            "-y",
            str(size[1]),
            "-c",
            str(tmp_path),
            command,
        ],
        check=True,
        env=env,
    )

    def screen(*keys: str) -> str:
        if keys:
            subprocess.run([*tmux, "send-keys", "-t", name, *keys], check=True)
        return subprocess.run(
            [*tmux, "capture-pane", "-p", "-t", name], capture_output=True, text=True, check=True
        ).stdout

    return tmux, name, screen


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Callable[..., str]]:
    command = (
        f"{sys.executable} -m secbench_tui --model baseline/always-bad "
        f"--cases {REPO / 'tests' / 'fixtures' / 'suite'} --db {tmp_path / 'r.db'}"
        f" --base-url http://127.0.0.1:9/api/v1; echo EXITED $?; sleep 30"
    )
    tmux, _, screen = open_terminal(tmp_path, command)
    try:
        yield screen
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def wait_for(screen: Callable[..., str], *texts: str, seconds: float = 120) -> str:
    """Read the terminal until every one of `texts` is on it: the state, not a fixed sleep.

    Bounded by time rather than by a count of reads, so a loaded machine (where each read and
    the app itself are slow) gets the same allowance as an idle one.
    """
    return wait_until(screen, lambda shown: all(t in shown for t in texts), repr(texts), seconds)


def wait_until(
    screen: Callable[..., str], holds: Callable[[str], bool], what: str, seconds: float = 120
) -> str:
    """Read the terminal until `holds` is true of what it shows (a condition over the whole
    screen, e.g. about several lines at once), bounded by time; `what` names it on failure."""
    deadline = time.monotonic() + seconds
    while True:
        shown = screen()
        if holds(shown):
            return shown
        if time.monotonic() > deadline:
            raise AssertionError(f"never seen: {what}; the terminal shows:\n{shown}")
        time.sleep(0.05)


def test_setup_run_and_quit_in_a_real_terminal(
    terminal: Callable[..., str], tmp_path: Path
) -> None:
    # each wait names everything the screen must show: a frame read half drawn is read again
    wait_for(terminal, "Model", "baseline/always-bad", "Suite", "^r Run")
    terminal("C-r")
    shown = wait_for(terminal, "Run 1 completed", "shop/list-orders-02 bad")
    assert "Traceback" not in shown
    terminal("q")
    shown = wait_for(terminal, "EXITED")
    assert "EXITED 0" in shown
    with sqlite3.connect(tmp_path / "r.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 5


def test_hostile_replies_leave_the_window_title_alone(tmp_path: Path) -> None:
    """Replies and names that carry OSC title sequences are shown, never obeyed: the title
    tmux keeps for the pane (`#T`, what the terminal window would show) stays as it was."""
    suite = tmp_path / "hostile"
    write_hostile_suite(suite)
    with LoopbackServer(models=hostile_models()) as server:
        server.script(None, match=lambda r: True, then=answer("bad", HOSTILE, provider=HOSTILE))
        # the pane sets a title first, which shows that tmux obeys OSC titles from this pane
        command = (
            "printf '\\033]2;title-before\\007'; "
            f"{sys.executable} -m secbench_tui --model openai/gpt-4o-mini --cases {suite}"
            f" --db {tmp_path / 'r.db'} --base-url {secret_url(server.port)}"
            "; echo EXITED $?; sleep 30"
        )
        tmux, name, screen = open_terminal(tmp_path, command)

        def title() -> str:
            return subprocess.run(
                [*tmux, "display", "-p", "-t", name, "#T"], capture_output=True, text=True
            ).stdout.strip()

        try:
            wait_for(screen, "Model", "^r Run")  # the footer names the key: it is bound
            assert title() == "title-before"
            screen("C-r")
            # a case named with a title sequence, shown inert; each wait names all the screen
            # must show, so a frame read half drawn is read again
            wait_for(screen, "Run 1 completed", "r Results", "pwned-title\\x07")
            assert title() == "title-before"
            screen("r")  # the results: the first result in full, raw reply included
            shown = wait_for(screen, "raw reply", "\\x1b]0;pwned-title")
            assert "Traceback" not in shown
            assert title() == "title-before"
            screen("q")
            wait_for(screen, "EXITED")
            assert title() == "title-before"
        finally:
            subprocess.run([*tmux, "kill-server"], capture_output=True)


def test_progress_follows_the_stored_results_while_one_case_hangs(tmp_path: Path) -> None:
    """One case gets no answer and another waits out a long Retry-After: the count on screen
    is what the database holds, and both cases show as in flight (the retrying one with its
    wait), instead of 0/12 until the slowest case answers."""
    cases = write_suite(tmp_path / "suite", {"shop": ["bad", "good"] * 6})
    hung, retrying = cases[0], cases[1]
    with LoopbackServer(models=hostile_models()) as server:
        server.script(hung.marker, delayed(120))
        server.script(retrying.marker, rate_limited(retry_after=90))
        command = (
            f"{sys.executable} -m secbench_tui --model openai/gpt-4o-mini"
            f" --cases {tmp_path / 'suite'} --db {tmp_path / 'r.db'} --concurrency 4"
            f" --base-url {server.base_url}; echo EXITED $?; sleep 30"
        )
        tmux, _, screen = open_terminal(tmp_path, command)
        try:
            wait_for(screen, "Model", "^r Run")
            screen("C-r")
            # both cases still asked show, the retrying one with its wait; the hung case holds
            # a slot, the other does not
            shown = wait_for(
                screen,
                "10/12",
                "in flight 1 · retrying 1",
                "next try in",
                hung.case_id,
                retrying.case_id,
            )
            with sqlite3.connect(tmp_path / "r.db") as conn:
                stored = conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
            assert stored == 10
            assert "Traceback" not in shown
        finally:
            subprocess.run([*tmux, "kill-server"], capture_output=True)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_a_live_matrix_shows_each_run_with_its_state_and_one_eta(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """Two models x two prompts: a model's second run waits for its slot (concurrency 1), so
    it shows `queued`, not `running 0/N`; one line gives the matrix's progress and ETA; the
    model names are whole where they fit, the case ids keep their app."""
    write_suite(tmp_path / "suite", {"orders-service": ["bad", "good"] * 10})
    with LoopbackServer() as server:
        # the first answers come at once, the rest wait until the test has seen the matrix in
        # progress: the queued runs stay queued however slowly a loaded machine draws
        server.hold_after(4)
        command = (
            f"{sys.executable} -m secbench_tui"
            " --model openai/gpt-4o-mini,anthropic/claude-3.5-haiku --prompt default,attacker"
            f" --cases {tmp_path / 'suite'} --db {tmp_path / 'r.db'} --concurrency 1"
            f" --base-url {server.base_url}; echo EXITED $?; sleep 30"
        )
        tmux, _, screen = open_terminal(tmp_path, command, size)
        try:
            wait_for(screen, "Model")
            screen("C-r")
            wait_for(screen, "matrix 4 runs:")
            # the second run of each model waits its turn: queued, with no clock of its own;
            # each condition is polled over whole frames (a frame read half drawn is read again)

            def queued_rows(shown: str) -> list[str]:
                return [line for line in shown.splitlines() if "│" in line and " queued " in line]

            wait_until(
                screen,
                lambda shown: (
                    "2 running, 2 queued" in shown
                    and len(queued_rows(shown)) == 2
                    and all(" - " in line for line in queued_rows(shown))
                    and "openai/gpt-4o-mini" in shown
                ),  # whole: there is room for it
                "two queued rows without a clock of their own, and the model named whole",
            )
            wait_until(  # one ETA for the matrix once answers come; a case id keeps its app
                screen,
                lambda shown: "ETA 0:" in shown and "orders-service/" in shown,
                "the matrix's ETA and a case id with its app",
            )
            server.release()
            shown = wait_for(screen, "4 done")
            assert "finished" in shown and "Traceback" not in shown
            with sqlite3.connect(tmp_path / "r.db") as conn:
                starts = [row[0] for row in conn.execute("SELECT started_at FROM runs ORDER BY id")]
                firsts = [
                    row[0]
                    for row in conn.execute(
                        "SELECT MIN(timestamp) FROM evaluations GROUP BY run_id ORDER BY run_id"
                    )
                ]
            # a run's start is its first request: never later than its first answer, and a
            # queued run's start is after the matrix opened (the first run's start)
            assert all(start <= first for start, first in zip(starts, firsts, strict=True))
            assert max(starts) > min(starts)
            # each run closed when its own last case was stored, not at the matrix's end
            for finished, last in ends(tmp_path / "r.db"):
                assert abs((finished - last).total_seconds()) < 1.0, (finished, last)
        finally:
            subprocess.run([*tmux, "kill-server"], capture_output=True)


def ends(db: Path) -> list[tuple[datetime, datetime]]:
    """Each run's `finished_at` and the time of its last stored result."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT r.finished_at, MAX(e.timestamp) FROM runs r JOIN evaluations e"
            " ON e.run_id = r.id GROUP BY r.id ORDER BY r.id"
        ).fetchall()
    assert rows and all(finished for finished, _ in rows)
    return [(_when(finished), _when(last)) for finished, last in rows]


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_quit_during_a_matrix_keeps_every_answered_case(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """A 2 x 2 matrix run to its end, then a 2 x 4 one quit midway (`q`, `y`): each run of
    the first was closed when its own last case was stored; back at the shell, every case the
    server answered is stored. How fast the quit is, is not asserted here (no timed
    assertions in tests)."""
    write_suite(tmp_path / "suite", {"orders-service": ["bad", "good"] * 6})
    db = tmp_path / "r.db"
    models = "openai/gpt-4o-mini,anthropic/claude-3.5-haiku"
    with LoopbackServer() as server:
        base = f"{sys.executable} -m secbench_tui --model {models} --cases {tmp_path / 'suite'}"
        base += f" --db {db} --concurrency 2 --base-url {server.base_url}"
        matrices = ("default,attacker", "default,attacker,rule-by-rule,step-by-step")
        tmux, _, screen = open_terminal(
            tmp_path, f"{base} --prompt {matrices[0]}; echo EXITED $?; sleep 30", size
        )
        try:
            wait_for(screen, "Model", "^r Run")
            screen("C-r")
            wait_for(screen, "4 done")
            screen("q")
            assert "EXITED 0" in wait_for(screen, "EXITED")
        finally:
            subprocess.run([*tmux, "kill-server"], capture_output=True)
        assert len(ends(db)) == 4
        for finished, last in ends(db):
            assert abs((finished - last).total_seconds()) < 1.0, (finished, last)
        before = _stored(db)
        server.hold_after(6)  # six answers, then the cases asked wait in flight
        tmux, _, screen = open_terminal(
            tmp_path, f"{base} --prompt {matrices[1]}; echo EXITED $?; sleep 30", size
        )
        try:
            wait_for(screen, "Model", "^r Run")
            screen("C-r")
            wait_for(screen, "matrix 8 runs:")
            wait_until(screen, lambda _: _stored(db) >= before + 6, "six answers stored")
            screen("q")
            wait_for(screen, "Stop and quit")
            screen("y")
            server.release()  # the cases in flight answer within their grace
            assert "EXITED 0" in wait_for(screen, "EXITED")
        finally:
            subprocess.run([*tmux, "kill-server"], capture_output=True)
    answered = [r for r in server.requests if r.is_completion]  # (two runs reuse answers)
    assert _stored(db, asked=True) == len(answered)
    assert before + 6 <= len(answered) < before + 4 * 12  # the four new runs unfinished


def _stored(db: Path, asked: bool = False) -> int:
    """Results stored; `asked`: those a model answered (not reused from an earlier run)."""
    where = " WHERE reused_from IS NULL" if asked else ""
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM evaluations" + where).fetchone()[0])
