"""Flags whose value cannot work are refused before anything is written or sent: exit 2, one
line `secbench-tui: error: --flag: ...` naming the flag, neutralised, nothing recorded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import FAKE_KEY, cli_env, run_cli, write_suite
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


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        (["--seed", "abc"], "--seed: must be a whole number (got 'abc')"),
        (["--runs", "x"], "--runs: takes run ids, e.g. 3,4"),
        (["--verify-deadline", "nan"], "--verify-deadline: 'nan': the number of seconds must be a"),
        (["--timeout", "nan"], "--timeout: must be a finite number (got 'nan')"),
        (["--temperature", "nan"], "--temperature: must be a finite number (got 'nan')"),
        (["--retry-backoff", "inf"], "--retry-backoff: must be a finite number (got 'inf')"),
        (["--stop-grace", "inf"], "--stop-grace: must be a finite number (got 'inf')"),
        (["--stop-grace", "1e6"], "--stop-grace: give 600 or less (got '1e6')"),
        (["--concurrency", "0"], "--concurrency: give 1 or more (got '0')"),
        (
            ["--concurrency", "\u0661\u0662"],
            "--concurrency: must be a whole number (got '\u0661\u0662')",
        ),
        (["--runs", "\u0661"], "--runs: takes run ids, e.g. 3,4"),
        (["--tasks", "\u0661"], "--tasks: takes task numbers 1-5, e.g. 1,3"),
        (
            ["--verify-deadline", "\u0661\u0662"],
            "--verify-deadline: '\u0661\u0662' is not a number of seconds",
        ),
        (["--timeout", "0"], "--timeout: give a number above 0 (got '0')"),
        (["--bogus"], "unrecognized arguments: --bogus; see secbench-tui --help"),
    ],
)
def test_every_bad_flag_gets_one_error_line_of_one_shape(
    tmp_path: Path, flag: list[str], said: str
) -> None:
    """argparse's own errors (a type, an unknown flag) come as the settings' do: one line,
    the flag first, no usage block; a bound says the fix and the value given, and NaN or
    infinity is named as such, never as breaking a bound it does not break."""
    db = tmp_path / "r.db"
    result = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--model", "baseline/random", "--no-ui"]
        + ["--limit", "1", "--db", str(db), *flag],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == EXIT_USAGE, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"secbench-tui: error: {said}"), line
    assert not db.exists()


@pytest.mark.parametrize(
    "command",
    [
        ["--model", "baseline/random", "--no-ui", "--limit", "1"],
        ["--model", "baseline/random", "--dry-run", "--limit", "1"],
        ["--report"],
        ["--rescore"],
    ],
)
def test_a_dotenv_file_that_is_not_utf8_is_named_with_the_fix(
    tmp_path: Path, command: list[str]
) -> None:
    """A `.env` saved as UTF-16 (what `echo ... > .env` writes in Windows PowerShell) is
    refused in one line naming the file and the fix, for every command that reads it, never
    with python-dotenv's traceback."""
    (tmp_path / ".env").write_text("OPENROUTER_API_KEY=sk-or-v1-abc\n", encoding="utf-16")
    db = tmp_path / "r.db"
    result = subprocess.run(
        [sys.executable, "-m", "secbench_tui", *command, "--db", str(db)],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == EXIT_USAGE, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("secbench-tui: error: .env: cannot read it (not UTF-8 text"), line
    assert "save it as UTF-8" in line
    assert not db.exists()


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        (["--repeats", "99999999999999999999"], "--repeats: give 1000 or less"),
        (["--repeats", "1001"], "--repeats: give 1000 or less (got '1001')"),
    ],
)
def test_a_number_too_large_to_run_is_refused_before_any_work(
    tmp_path: Path, flag: list[str], said: str
) -> None:
    """`--repeats 99999999999999999999` planned one piece of work per case and repeat: the
    dry run took every gigabyte of the machine before it could say anything."""
    db = tmp_path / "r.db"
    result = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--model", "baseline/random", "--dry-run"]
        + ["--limit", "1", "--db", str(db), *flag],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == EXIT_USAGE, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"secbench-tui: error: {said}"), line
    assert not db.exists()


@pytest.mark.parametrize("where", ["environment", ".env"])
def test_a_bad_value_from_the_environment_is_named_by_its_variable(
    tmp_path: Path, where: str
) -> None:
    """`OPENROUTER_BASE_URL=garbage` was said as `--base-url: ...`, a flag the user never
    gave: the error names the variable, as it does the API key's, so the fix is found."""
    extra = {}
    if where == ".env":
        (tmp_path / ".env").write_text("OPENROUTER_BASE_URL=garbage\n", encoding="utf-8")
    else:
        extra["OPENROUTER_BASE_URL"] = "garbage"
    result = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--model", "baseline/random", "--dry-run"],
        cwd=tmp_path,
        env=cli_env(**extra),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == EXIT_USAGE, result.stderr
    (line,) = result.stderr.splitlines()
    assert line == (
        "secbench-tui: error: OPENROUTER_BASE_URL: 'garbage' is not an http(s) URL; "
        "give the API root, e.g. http://127.0.0.1:11434/v1"
    )
    given = subprocess.run(  # the flag given names the flag, over the variable
        [sys.executable, "-m", "secbench_tui", "--model", "baseline/random", "--dry-run"]
        + ["--base-url", "ftp://x"],
        cwd=tmp_path,
        env=cli_env(**extra),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert given.returncode == EXIT_USAGE, given.stderr
    assert given.stderr.startswith("secbench-tui: error: --base-url: 'ftp://x' is not an http(s)")


@pytest.mark.parametrize("dotenv", ["utf-16", "bad base url"])
def test_the_fix_command_names_a_bad_dotenv_and_variable_as_a_run_does(
    tmp_path: Path, dotenv: str
) -> None:
    """`secbench-tui fix` reads `.env` too: a file that is not UTF-8 and a bad value in it
    get the run's one line naming the file or the variable, never a traceback."""
    if dotenv == "utf-16":
        (tmp_path / ".env").write_text("OPENROUTER_API_KEY=sk-or-v1-abc\n", encoding="utf-16")
        said = "secbench-tui: error: .env: cannot read it (not UTF-8 text"
    else:
        (tmp_path / ".env").write_text("OPENROUTER_BASE_URL=garbage\n", encoding="utf-8")
        said = "secbench-tui: error: OPENROUTER_BASE_URL: 'garbage' is not an http(s) URL"
    (tmp_path / "suite").mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "fix", "--cases", "suite", "--model", "m/x"],
        cwd=tmp_path,
        env=cli_env(FAKE_KEY),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == EXIT_USAGE, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(said), line
    assert sorted(p.name for p in tmp_path.iterdir()) == [".env", "suite"]
