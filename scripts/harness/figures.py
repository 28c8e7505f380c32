"""The flags every benchmark shares, its scratch folder, and how its figures are printed.

A benchmark compares against a baseline taken in the same run, in interleaved rounds, and
prints the median of the per-round ratios with their range, and the machine it ran on (CPUs,
Python, load average): figures taken on a busy machine say little, and the reader must see
when they were.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


def parser(
    doc: str | None,
    *,
    cases: int | None = None,
    rounds: int | None = None,
    latency: float | None = None,
    concurrency: int | None = None,
    keep: bool = True,
) -> argparse.ArgumentParser:
    """The benchmark's parser, described by its docstring, with each common flag whose default
    is given, and `--keep` (its scratch folder) unless `keep` is False."""
    p = argparse.ArgumentParser(
        description=doc.splitlines()[0] if doc else None,
        epilog="\n".join(doc.splitlines()[1:]) if doc else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if cases is not None:
        p.add_argument("--cases", type=int, default=cases, help=f"cases (default {cases})")
    if rounds is not None:
        p.add_argument(
            "--rounds", type=int, default=rounds, help=f"interleaved rounds (default {rounds})"
        )
    if latency is not None:
        p.add_argument(
            "--latency",
            type=float,
            default=latency,
            help=f"seconds the loopback server waits before each answer (default {latency:g})",
        )
    if concurrency is not None:
        p.add_argument(
            "--concurrency",
            type=int,
            default=concurrency,
            help=f"requests in flight (default {concurrency})",
        )
    if keep:
        p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    return p


@contextmanager
def workdir(prefix: str, keep: bool = False) -> Iterator[Path]:
    """A scratch folder, removed at the end unless `keep` (then its path is printed)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    finally:
        if keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def spread(values: Sequence[float], unit: str = "x") -> str:
    """`median (range low-high)`."""
    return f"{statistics.median(values):5.2f}{unit}  (range {min(values):.2f}-{max(values):.2f})"


def load() -> str:
    """The load average over 1, 5 and 15 minutes."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def machine() -> str:
    """The machine, as a figure's reader needs it."""
    return (
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average {load()}"
        " (1, 5, 15 min)"
    )
