"""The headless path never imports Textual or Rich: `--no-ui` must not pay for them. Nor
does it load what only other commands use: jinja2 (the report), the parsers of --rewrites and
--verify: each costs every start its import. pydantic and python-dotenv it does load: the
settings and the verdict reply are pydantic models, and a `.env` file is read at every start.

Each check runs in a fresh interpreter, since this test process has Textual loaded; one
interpreter imports every core module in turn and looks at `sys.modules` after each.

httpx imports its own command line (`httpx._main`) when click, pygments and rich are installed,
and that loads Rich; it is httpx's import, not ours, and the program leaves it to httpx. The
checks that name Rich therefore block `httpx._main` in the interpreter they start, and then
require that nothing else loads Rich.
"""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import secbench_tui.core
from tests.e2e.server import LoopbackServer

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = ("textual", "rich")
# what a headless run, offline or against an endpoint, has no use for (see the docstring)
UNUSED = (
    *FORBIDDEN,
    "jinja2",
    "sqlglot",
    "libcst",
    "pglast",
    "psycopg",
    "pgserver",
)

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


def _run_no_ui(
    tmp_path: Path,
    forbidden: tuple[str, ...],
    block: str,
    model: str = "baseline/random",
    more: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> list[str]:
    argv = [
        "--no-ui",
        "--model",
        model,
        "--db",
        str(tmp_path / "results.db"),
        "--cases",
        str(REPO / "tests" / "fixtures" / "suite"),
        *more,
    ]
    code = WRAPPER.format(forbidden=set(forbidden), argv=argv, block=block)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=_env() | (env or {}),
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


def test_no_ui_run_loads_nothing_only_other_commands_use(tmp_path: Path) -> None:
    """Offline and against a real endpoint on 127.0.0.1 (the client, the catalog lookup, the
    replies' parsing): neither loads jinja2 or the parsers of other commands."""
    assert _run_no_ui(tmp_path, UNUSED, BLOCK_HTTPX_CLI) == ["LOADED="]
    with LoopbackServer() as server:
        remote = ("--base-url", server.base_url, "--limit", "2")
        (tmp_path / "remote").mkdir()
        env = {"OPENROUTER_API_KEY": "sk-test", "XDG_CACHE_HOME": str(tmp_path / "cache")}
        loaded = _run_no_ui(
            tmp_path / "remote", UNUSED, BLOCK_HTTPX_CLI, "openai/gpt-4o-mini", remote, env
        )
        assert loaded == ["LOADED="]
        assert server.request_count == 2 and server.catalog_requests == 1


def test_the_unused_check_names_what_a_run_loaded(tmp_path: Path) -> None:
    """The check above can fail: asked about python-dotenv, which every start loads to read
    a `.env` file, it names it."""
    (tmp_path / ".env").write_text("SECBENCH_TUI_UNUSED=1\n", encoding="utf-8")
    (loaded,) = _run_no_ui(tmp_path, (*UNUSED, "dotenv"), BLOCK_HTTPX_CLI)
    assert loaded.startswith("LOADED=dotenv")


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

# Imports every module of a package, in name order, in one fresh interpreter, and after each
# import names what is newly loaded from the forbidden packages: a module that pulls one in is
# named even when it is not the first to import it through another module. Prints JSON:
# {"modules": [...], "offenders": {module: [forbidden modules it loaded]}}.
IMPORT_EACH = """
import importlib, json, pkgutil, sys
{block}
package_name, extra = sys.argv[1], sys.argv[2:]
package = importlib.import_module(package_name)
package.__path__.extend(extra)  # a test plants a module here
modules = sorted(info.name for info in pkgutil.walk_packages(package.__path__, package_name + "."))

def forbidden():
    return {{m for m in sys.modules if m.split(".")[0] in {forbidden!r}}}

offenders = {{}}
seen = forbidden()
for module in modules:
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:  # the verify extra may be absent
        if (exc.name or "").split(".")[0] not in {verify!r}:
            raise
    loaded = forbidden() - seen
    if loaded:
        offenders[module] = sorted(loaded)
        seen |= loaded
print(json.dumps({{"modules": modules, "offenders": offenders}}))
"""


def _import_each(package: str, *extra: Path) -> dict[str, Any]:
    code = IMPORT_EACH.format(block=BLOCK_HTTPX_CLI, forbidden=FORBIDDEN, verify=VERIFY_EXTRA)
    done = subprocess.run(
        [sys.executable, "-c", code, package, *map(str, extra)],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_every_core_module_imports_without_textual_or_rich() -> None:
    found = _import_each("secbench_tui.core")
    expected = sorted(
        info.name
        for info in pkgutil.walk_packages(secbench_tui.core.__path__, "secbench_tui.core.")
    )
    assert found["modules"] == expected  # every module was imported, none skipped
    assert (
        "secbench_tui.core.run.catalog" in expected and "secbench_tui.core.run.engine" in expected
    )
    assert found["offenders"] == {}


def test_the_import_check_names_a_planted_core_module_that_loads_rich(tmp_path: Path) -> None:
    """The check above can fail: a module planted among the core's that imports a clean core
    module and then Rich is named, and so is one that loads Textual through another module."""
    (tmp_path / "numbers_pretty.py").write_text(
        "from secbench_tui.core import numbers\nimport rich.text\n", encoding="utf-8"
    )
    (tmp_path / "zz_view.py").write_text(
        "from secbench_tui.core import zz_widgets\n", encoding="utf-8"
    )
    (tmp_path / "zz_widgets.py").write_text("import textual\n", encoding="utf-8")
    found = _import_each("secbench_tui.core", tmp_path)
    assert "secbench_tui.core.numbers_pretty" in found["modules"]
    offenders = found["offenders"]
    assert set(offenders) == {"secbench_tui.core.numbers_pretty", "secbench_tui.core.zz_view"}
    assert "rich.text" in offenders["secbench_tui.core.numbers_pretty"]
    assert "textual" in offenders["secbench_tui.core.zz_view"]
