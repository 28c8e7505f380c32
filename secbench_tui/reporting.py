"""`--report` and `--export`: results already in the database, written as files.

The command line and the terminal app's export screen both come through `write_outputs`, so
a report made from either is the same file. Nothing here asks a model anything.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from secbench_tui.config import Settings
from secbench_tui.core.results.exports import EXPORTERS
from secbench_tui.core.results.report.data import ReportError
from secbench_tui.core.results.report.files import report_path, write_text_atomic
from secbench_tui.core.results.report.gathering import gather
from secbench_tui.core.results.report.rendering import render_html
from secbench_tui.core.store.database import Store
from secbench_tui.errors import say_error
from secbench_tui.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from secbench_tui.results_db import DatabaseError, open_results


class OutputError(OSError):
    """A report or export file that cannot be written; the message names the path and the fix."""


def write_file(target: Path, text: str, flag: str) -> None:
    """Write `text` to `target` for `flag` (`--out`, `--summary-json`), or raise `OutputError`.

    A folder the user named is not created (as for `--summary-json`: a typo in a path should
    not leave new folders behind); the default reports folder is.
    """
    if flag != "report" and not target.parent.is_dir():
        raise OutputError(
            f"{flag} {target}: folder {target.parent} does not exist; create it or pick "
            "another path"
        )
    try:
        write_text_atomic(target, text)
    except OSError as exc:
        reason = "it is a folder" if target.is_dir() else (exc.strerror or str(exc))
        raise OutputError(
            f"{flag} {target}: cannot write it ({reason}); pick another path or check the "
            "folder's permissions"
        ) from exc


@dataclass
class Outputs:
    """What was written: the report's path, the export's path (None: written to a stream)."""

    report: Path | None = None
    export: Path | None = None


async def write_outputs(
    store: Store,
    *,
    report: bool,
    export: str | None,
    out: Path | None,
    runs: Sequence[int] | None,
    models: Sequence[str] | None,
    reports_dir: Path,
    stream: TextIO | None = None,
) -> Outputs:
    """Write the HTML report and/or one export of the selected runs.

    The report goes to `reports_dir/report_YYYY-MM-DD_HH-MM-SS.html` (local time), or to
    `out` when no export is asked for. An export goes to `out`, or to `stream` without one.
    Raises `ReportError` when there is nothing to report, `OSError` when a file cannot be
    written.
    """
    if export is not None and export not in EXPORTERS:
        raise ReportError(f"--export {export}: unknown format; use {', '.join(EXPORTERS)}")
    data = await gather(store, runs, models)
    outputs = Outputs()
    if report:
        to_out = out is not None and export is None
        target = out if out is not None and to_out else report_path(reports_dir)
        write_file(target, render_html(data), "--out" if to_out else "report")
        outputs.report = target
    if export == "json":  # the exact messages of every result, each text once
        rows = [row for c in data.runs for row in getattr(c, "all_rows", c.rows)]
        data.requests, data.request_texts = await store.requests_for_export(rows)
    if export is not None:
        text = EXPORTERS[export](data)
        if out is None:
            (stream or sys.stdout).write(text)
        else:
            write_file(out, text, "--out")
            outputs.export = out
    return outputs


async def _export_main(
    settings: Settings,
    report: bool,
    export: str | None,
    out: Path | None,
    runs: list[int] | None,
    models: list[str] | None,
) -> int:
    try:
        store = await open_results(settings.db, create=False, runs=runs or ())
    except DatabaseError as exc:
        say_error(exc)
        return exc.exit_code
    try:
        outputs = await write_outputs(
            store,
            report=report,
            export=export,
            out=out,
            runs=runs,
            models=models,
            reports_dir=settings.reports_dir,
        )
    except ReportError as exc:  # --runs, --models or --db select nothing: a usage error
        say_error(exc)
        return EXIT_USAGE
    except OutputError as exc:
        say_error(exc)
        return EXIT_FAILED
    except OSError as exc:
        where = exc.filename or out or settings.reports_dir
        say_error(
            f"cannot write {where}: {exc.strerror or exc}; "
            "pick another --out path or check the folder's permissions",
        )
        return EXIT_FAILED
    finally:
        await store.close()
    # With an export on stdout, paths go to stderr so the exported data stays clean.
    paths_to = sys.stderr if export is not None and out is None else sys.stdout
    for path in (outputs.report, outputs.export):
        if path is not None:
            print(path, file=paths_to, flush=True)
    return EXIT_OK


def export_main(
    settings: Settings,
    report: bool,
    export: str | None,
    out: Path | None,
    runs: list[int] | None,
    models: list[str] | None,
) -> int:
    """Entry point of `--report` and `--export`: 0 when written; 2 when --db, --runs or
    --models select nothing, 1 when a file cannot be written, 3 when --db is unusable (as
    for every command: `results_db`), with a message."""
    return asyncio.run(_export_main(settings, report, export, out, runs, models))
