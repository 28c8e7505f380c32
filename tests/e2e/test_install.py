"""A non-editable install finds its bundled suite, prompt and templates from any directory."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package built as a wheel and installed into a folder of its own (deps from here)."""
    work = tmp_path_factory.mktemp("install")
    source = work / "src"  # setuptools builds in the source tree: keep the checkout clean
    skip = (".git", ".venv", "build", "reports", "*.db", "__pycache__", ".*_cache", "tests")
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*skip))
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(work / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if build.returncode != 0:
        pytest.skip(f"cannot build a wheel offline here: {build.stderr[-300:]}")
    (wheel,) = (work / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for prompt in ("default", "step-by-step", "rule-by-rule", "attacker", "exploit"):
        assert f"secbench_tui/prompts/{prompt}.txt" in names
    assert any(n.startswith("secbench_tui/cases/purchase-order/") for n in names)
    assert any(n.startswith("secbench_tui/core/results/templates/") for n in names)
    assert not [n for n in names if n.startswith(("scripts/", "tests/"))]  # never shipped
    target = work / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return target


def run_installed(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("OPENROUTER_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "secbench_tui", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.long
def test_installed_package_runs_the_bundled_suite_offline(installed: Path, tmp_path: Path) -> None:
    result = run_installed(
        installed,
        tmp_path,
        "--model",
        "baseline/random",
        "--no-ui",
        "--db",
        "r.db",
        "--limit",
        "12",
    )
    assert result.returncode == 0, result.stderr
    rows = (
        sqlite3.connect(tmp_path / "r.db").execute("SELECT test_file FROM evaluations").fetchall()
    )
    assert len(rows) == 12
    assert all(str(installed) in path for (path,) in rows)  # read from the install, not the repo
    report = run_installed(installed, tmp_path, "--report", "--db", "r.db")
    assert report.returncode == 0, report.stderr
    path = tmp_path / report.stdout.strip().splitlines()[-1]
    assert path.is_file() and "baseline/random" in path.read_text(encoding="utf-8")
    every = run_installed(
        installed,
        tmp_path,
        "--model",
        "baseline/random",
        "--no-ui",
        "--db",
        "p.db",
        "--limit",
        "1",
        "--prompt",
        "all",
    )
    assert every.returncode == 0, every.stderr
    names = sqlite3.connect(tmp_path / "p.db").execute("SELECT prompt_name FROM runs").fetchall()
    assert sorted(n for (n,) in names) == [
        "attacker",
        "default",
        "exploit",
        "rule-by-rule",
        "step-by-step",
    ]
    lint = run_installed(installed, tmp_path, "--lint")
    assert lint.returncode == 0, lint.stdout + lint.stderr
