"""The headless path never imports Textual or Rich: `--no-ui` must not pay for them.

Each check runs in a fresh interpreter, since this test process has Textual loaded.

httpx imports its own command line (`httpx._main`) when click, pygments and rich are installed,
and that loads Rich; it is not our import. The Rich checks therefore block `httpx._main` (as
the core could, see the report) and then require that nothing else loads Rich.
"""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import secbench_tui.core

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = ("textual", "rich")

# Runs the real command line, then reports the forbidden modules loaded by the time it ends.
BLOCK_HTTPX_CLI = "import sys; sys.modules['httpx._main'] = None"
WRAPPER = """
import atexit, sys
{block}
def report():
    loaded = sorted(m for m in sys.modules if m.split('.')[0] in {forbidden!r})
    sys.stderr.write('LOADED=' + ','.join(loaded) + '\\n')
atexit.register(report)
sys.argv = ['secbench-tui'] + {argv!r}
import runpy
runpy.run_module('secbench_tui', run_name='__main__')
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("OPENROUTER_API_KEY", None)
    return env


def _run_no_ui(tmp_path: Path, forbidden: tuple[str, ...], block: str) -> list[str]:
    argv = [
        "--no-ui",
        "--model",
        "baseline/random",
        "--db",
        str(tmp_path / "results.db"),
        "--cases",
        str(REPO / "tests" / "fixtures" / "suite"),
    ]
    code = WRAPPER.format(forbidden=set(forbidden), argv=argv, block=block)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Run 1 completed" in done.stdout
    return [line for line in done.stderr.splitlines() if line.startswith("LOADED=")]


def test_no_ui_run_never_loads_textual(tmp_path: Path) -> None:
    assert _run_no_ui(tmp_path, ("textual",), "") == ["LOADED="]


def test_no_ui_run_loads_rich_only_through_the_httpx_cli(tmp_path: Path) -> None:
    assert _run_no_ui(tmp_path, FORBIDDEN, BLOCK_HTTPX_CLI) == ["LOADED="]


def test_no_ui_import_time_shows_no_textual(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "secbench_tui",
            "--no-ui",
            "--model",
            "baseline/always-bad",
            "--cases",
            str(REPO / "tests" / "fixtures" / "suite"),
            "--db",
            str(tmp_path / "r.db"),
        ],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    imported = [
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    ]
    assert "secbench_tui.headless" in imported  # the log is real and complete
    assert not [m for m in imported if m.split(".")[0] == "textual"]


VERIFY_EXTRA = ("psycopg", "pgserver", "fastapi", "sqlalchemy")


def test_every_core_module_imports_without_textual_or_rich() -> None:
    modules = sorted(
        info.name
        for info in pkgutil.walk_packages(secbench_tui.core.__path__, "secbench_tui.core.")
    )
    assert "secbench_tui.core.run.catalog" in modules and "secbench_tui.core.run.engine" in modules
    for module in modules:
        code = (
            f"{BLOCK_HTTPX_CLI}; import importlib\n"
            f"try:\n    importlib.import_module({module!r})\n"
            "except ModuleNotFoundError as exc:\n"  # the verify extra may be absent
            f"    if exc.name.split('.')[0] not in {VERIFY_EXTRA!r}: raise\n"
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}); "
            "print(','.join(bad))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=_env(),
            cwd=REPO,
            timeout=60,
        )
        assert done.returncode == 0, f"{module}: {done.stderr}"
        assert done.stdout.strip() == "", f"{module} imports {done.stdout.strip()}"
