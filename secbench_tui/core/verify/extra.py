"""What `--verify` needs installed, said one way by the CLI, the app and the server's error.

It imports nothing, so a front end can name the fix when the import of the verifier fails."""

from __future__ import annotations

INSTALL = "pip install -e '.[verify]'"
HINT = f"{INSTALL} in the project's folder (from PyPI: pip install 'secbench-tui[verify]')"


def missing(exc: ImportError | None = None) -> str:
    """`--verify needs the verify extra (no module psycopg): pip install -e '.[verify]' ...`"""
    what = f" (no module {exc.name})" if exc is not None and exc.name else ""
    return f"--verify needs the verify extra{what}: {HINT}"
