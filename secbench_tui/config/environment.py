"""Where settings come from besides the flags: the environment and `.env`, and the bundled
suite's folder."""

from __future__ import annotations

import os
from pathlib import Path

from dotenv import dotenv_values


def bundled_cases_dir() -> Path:
    """The suite shipped inside the package, from any working directory or install."""
    return Path(__file__).parents[1] / "cases"  # installed as files, as prompts/ is


def is_bundled_suite(cases_dir: Path) -> bool:
    """Is `cases_dir` the suite shipped with the tool (whose code verify runs unasked)?"""
    try:
        return cases_dir.resolve() == bundled_cases_dir().resolve()
    except OSError:
        return False


def load_env(dotenv_path: Path | None = None) -> dict[str, str]:
    """The environment with `.env` (from the working directory) beneath it."""
    values: dict[str, str] = {}
    path = dotenv_path or Path(".env")
    if path.is_file():
        values.update({k: v for k, v in dotenv_values(path).items() if v is not None})
    values.update(os.environ)
    return values
