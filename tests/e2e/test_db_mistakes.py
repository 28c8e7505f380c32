"""One mistake with `--db` or `--runs`, one exit code and one message, whichever command met it.

Every command that opens the results database goes through `results_db.open_results`. Each
test runs `python -m secbench_tui` as a subprocess on a real SQLite file (or on something that
is not one) and checks the exit code, the message, and that nothing on disk was touched.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import REPO_ROOT, cli_env, runs

EXIT_USAGE = 2  # secbench_tui.exit_codes
EXIT_ABORTED = 3
SUITE = REPO_ROOT / "tests" / "fixtures" / "suite"
OFFLINE = ("--model", "baseline/random", "--cases", str(SUITE), "--limit", "2")
COMMANDS = {
    "run": ("--no-ui", *OFFLINE),
    "dry-run": ("--dry-run", *OFFLINE),
    "report": ("--report",),
    "export": ("--export", "csv"),
    "rescore": ("--rescore",),
}
READERS = ("report", "export", "rescore")  # a database that is not there holds nothing to read


def secbench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secbench_tui", *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def said(result: subprocess.CompletedProcess[str]) -> str:
    """The error line every command writes (`errors.say_error`)."""
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("secbench-tui: error: ")]
    return line.removeprefix("secbench-tui: error: ")


@pytest.mark.parametrize("name", READERS)
def test_a_db_that_is_not_there_is_a_usage_error_for_every_command_that_reads(
    tmp_path: Path, name: str
) -> None:
    for db in (tmp_path / "nope.db", tmp_path / "no-such-folder" / "nope.db"):
        result = secbench(tmp_path, *COMMANDS[name], "--db", str(db))
        assert result.returncode == EXIT_USAGE, (name, result.stderr)
        assert said(result).startswith(f"--db {db}: no such database; run an evaluation first")
        assert not db.exists() and not db.parent.joinpath("nope.db-wal").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no file, no reports folder


@pytest.mark.parametrize("name", ["run", "dry-run"])
def test_a_db_in_a_folder_that_is_not_there_is_a_usage_error_for_a_run_and_its_dry_run(
    tmp_path: Path, name: str
) -> None:
    db = tmp_path / "typo" / "r.db"
    result = secbench(tmp_path, *COMMANDS[name], "--db", str(db))
    assert result.returncode == EXIT_USAGE, result.stderr
    assert said(result) == (
        f"--db {db}: folder {db.parent} does not exist; create it or pick another path"
    )
    assert not db.parent.exists()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_db_that_is_a_folder_is_a_usage_error_for_every_command(
    tmp_path: Path, name: str
) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    result = secbench(tmp_path, *COMMANDS[name], "--db", str(folder))
    assert result.returncode == EXIT_USAGE, (name, result.stderr)
    assert said(result) == (
        f"--db {folder}: is a folder; give the path of a file in it, e.g. {folder}/results.db"
    )
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_file_that_is_not_a_database_exits_3_for_every_command_and_is_left_as_it_was(
    tmp_path: Path, name: str
) -> None:
    notes = tmp_path / "notes.db"
    text = b"my notes, not a database\n" * 200
    notes.write_bytes(text)
    result = secbench(tmp_path, *COMMANDS[name], "--db", str(notes))
    assert result.returncode == EXIT_ABORTED, (name, result.stderr)
    assert said(result).startswith(f"--db {notes}: not a secbench-tui database or damaged")
    assert said(result).endswith("pick another --db path")
    assert notes.read_bytes() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding runs 1 and 2 (offline, no key)."""
    db = tmp_path_factory.mktemp("recorded") / "r.db"
    for _ in range(2):
        done = secbench(db.parent, *COMMANDS["run"], "--force", "--db", str(db))
        assert done.returncode == 0, done.stderr
    assert [r["id"] for r in runs(db)] == [1, 2]
    return db


@pytest.mark.parametrize("name", READERS)
def test_runs_that_name_no_run_exit_2_for_every_command_that_takes_them(
    recorded: Path, tmp_path: Path, name: str
) -> None:
    before = recorded.read_bytes()
    result = secbench(tmp_path, *COMMANDS[name], "--db", str(recorded), "--runs", "2,99,7")
    assert result.returncode == EXIT_USAGE, (name, result.stderr)
    assert said(result) == f"--runs: no run 7, 99 in {recorded}; runs there: 1-2"
    assert result.stdout == ""  # nothing rescored, reported or exported
    assert recorded.read_bytes() == before
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("name", READERS)
def test_runs_it_holds_are_read_by_every_command_that_takes_them(
    recorded: Path, tmp_path: Path, name: str
) -> None:
    """The check above can pass only by refusing: the same command with runs that exist."""
    out = ("--out", str(tmp_path / "x")) if name in ("report", "export") else ()
    result = secbench(tmp_path, *COMMANDS[name], "--db", str(recorded), "--runs", "2", *out)
    assert result.returncode == 0, (name, result.stderr)
    assert "error" not in result.stderr


@pytest.mark.parametrize("name", READERS)
@pytest.mark.parametrize("flag", ["--runs", "--models"])
@pytest.mark.parametrize("value", ["", " , "])
def test_a_selection_that_names_nothing_exits_2_for_every_command_that_takes_it(
    recorded: Path, tmp_path: Path, name: str, flag: str, value: str
) -> None:
    """`--runs "$IDS"` with IDS empty selected no run, and so read every run: a report of
    them all, or every result rescored. It names no run: a usage error, as a run not there."""
    before = recorded.read_bytes()
    result = secbench(tmp_path, *COMMANDS[name], "--db", str(recorded), f"{flag}={value}")
    assert result.returncode == EXIT_USAGE, (name, result.stderr)
    takes = "run ids, e.g. 3,4" if flag == "--runs" else "model names, e.g. a/x,b/y"
    assert said(result) == f"{flag}: takes {takes}"
    assert result.stdout == ""
    assert recorded.read_bytes() == before
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("name", READERS)
def test_models_that_name_no_run_exit_2_for_every_command_that_takes_them(
    recorded: Path, tmp_path: Path, name: str
) -> None:
    """`--rescore` took `--models` and read every run all the same, exiting 0."""
    before = recorded.read_bytes()
    result = secbench(tmp_path, *COMMANDS[name], "--db", str(recorded), "--models", "nope/x")
    assert result.returncode == EXIT_USAGE, (name, result.stderr)
    assert (
        said(result) == f"--models: no runs of nope/x in {recorded}; models there: baseline/random"
    )
    assert result.stdout == ""
    assert recorded.read_bytes() == before


def test_rescore_reads_only_the_runs_of_the_models_named(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    for model in ("baseline/random", "baseline/always-bad"):
        offline = [model if arg == "baseline/random" else arg for arg in COMMANDS["run"]]
        done = secbench(tmp_path, *offline, "--db", str(db))
        assert done.returncode == 0, done.stderr

    def rescored(*selection: str) -> str:
        result = secbench(tmp_path, "--rescore", "--db", str(db), *selection)
        assert result.returncode == 0, result.stderr
        return result.stdout.split(" with ")[0]

    assert rescored() == "rescored 4 results"
    assert rescored("--models", "baseline/always-bad") == "rescored 2 results"
    assert rescored("--models", "baseline/always-bad", "--runs", "1") == "rescored 0 results"
    assert rescored("--models", "baseline/always-bad,baseline/random") == "rescored 4 results"
