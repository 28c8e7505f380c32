"""Which files a suite may send: only those that resolve inside the suite folder.

A symlink in a suite (to `~/.ssh/id_rsa`, say) would otherwise have its target's content sent
to a model and stored in the database. Loaders skip such files with a warning naming them.
"""

from __future__ import annotations

from pathlib import Path


def outside_reason(path: Path, root: Path) -> str | None:
    """Why `path` must not be read as part of the suite at `root`, or None when it may."""
    try:
        target = path.resolve()
        inside = target.is_relative_to(root.resolve())
    except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable folder
        return f"cannot resolve it ({exc})"
    if inside:
        return None
    return f"it resolves to {target}, outside the suite folder {root}"
