"""Where a report is written: a timestamped name that never overwrites, written atomically."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path


def report_path(directory: Path, now: datetime | None = None) -> Path:
    """`reports/report_YYYY-MM-DD_HH-MM-SS.html` in local time; a suffix if that file exists."""
    stamp = (now or datetime.now()).strftime("%Y-%m-%d_%H-%M-%S")
    path = directory / f"report_{stamp}.html"
    number = 2
    while path.exists():
        path = directory / f"report_{stamp}-{number}.html"
        number += 1
    return path


def write_text_atomic(path: Path, text: str) -> None:
    """Write through a temporary file, so a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
