"""Which files a suite may send: only those that resolve inside the suite folder.

A symlink in a suite (to `~/.ssh/id_rsa`, say) would otherwise have its target's content sent
to a model and stored in the database. Loaders skip such files with a warning naming them.
"""

from __future__ import annotations

from pathlib import Path


def outside_reason(
    path: Path, root: Path, resolved_dirs: dict[Path, Path] | None = None
) -> str | None:
    """Why `path` must not be read as part of the suite at `root`, or None when it may.

    `resolved_dirs` lets one load of a suite resolve each folder once: a file that is not a
    symlink then costs one `lstat`, not one per component of its path. Keep it to one load:
    a folder replaced by a link after it was cached would not be seen.
    """
    cache: dict[Path, Path] = {} if resolved_dirs is None else resolved_dirs
    try:
        target = _resolved(path, cache)
        inside = target.is_relative_to(_resolved_dir(root, cache))
    except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable folder
        return f"cannot resolve it ({exc})"
    if inside:
        return None
    return f"it resolves to {target}, outside the suite folder {root}"


def _resolved_dir(folder: Path, cache: dict[Path, Path]) -> Path:
    found = cache.get(folder)
    if found is None:
        found = cache[folder] = folder.resolve()
    return found


def _resolved(path: Path, cache: dict[Path, Path]) -> Path:
    """`path.resolve()`, from its folder's cached resolution when it is no link itself."""
    if path.is_symlink() or path.name in ("", ".", ".."):
        return path.resolve()
    return _resolved_dir(path.parent, cache) / path.name
