"""Where settings come from besides the flags: the environment and `.env`, and the bundled
suite's folder."""

from __future__ import annotations

import os
from pathlib import Path

from dotenv import dotenv_values

from secbench_tui.errors import UsageError


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
    """The environment with `.env` (from the working directory) beneath it.

    A `.env` that cannot be read (not UTF-8, as Windows PowerShell's `echo KEY=... > .env`
    writes it, or unreadable) raises `UsageError` naming it and the fix."""
    values: dict[str, str] = {}
    path = dotenv_path or Path(".env")
    if path.is_file():
        try:
            found = dotenv_values(path)
        except UnicodeDecodeError as exc:
            raise UsageError(
                f"{path}: cannot read it (not UTF-8 text: byte {exc.object[exc.start]:#04x} at "
                f"position {exc.start}); save it as UTF-8, or remove it"
            ) from None
        except OSError as exc:
            raise UsageError(
                f"{path}: cannot read it ({exc.strerror or exc}); make it readable, or remove it"
            ) from None
        values.update({k: v for k, v in found.items() if v is not None})
    values.update(os.environ)
    return values
