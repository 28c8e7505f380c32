"""The one place that writes `secbench-tui: error: ...` to stderr.

Every front end without a screen (the command line, `--no-ui`, `--report`/`--export`, `--lint`,
`--verify`) says a usage or run-level error through `say_error`, so each such line looks the
same and is neutralised the same way: a message may quote a file name or a server's words.
"""

from __future__ import annotations

import sys
from typing import TextIO

from secbench_tui.core.untrusted import inert

PROG = "secbench-tui"


def error_line(message: object) -> str:
    """`secbench-tui: error: <message>`, with no control character of the message left live."""
    return f"{PROG}: error: {inert(message)}"


def say_error(message: object, stream: TextIO | None = None) -> None:
    """Write the error line to stderr (or `stream`)."""
    print(error_line(message), file=stream or sys.stderr, flush=True)


class UsageError(Exception):
    """Bad settings or input: the message names the flag or file and the fix (exit 2)."""
