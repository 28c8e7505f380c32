"""The program uses aiosqlite through its public API only.

aiosqlite's private names (its call queue `_tx`, `_execute`, `_running`, `_connection`,
`_conn`, `_thread` and the rest) change without notice between versions: code that read or
patched them once made the app hang on exit. Every module of the package is parsed (`ast`)
and searched for a use of any private name of aiosqlite's connection or cursor, on anything
but the module's own `self`/`cls`, by attribute or by name (`getattr(db, "_thread")`), and
for a class of aiosqlite's subclassed or patched.
"""

from __future__ import annotations

import ast
from pathlib import Path

import aiosqlite
import pytest

import secbench_tui

PACKAGE = Path(secbench_tui.__file__).parent


async def _private_names(tmp_path: Path) -> set[str]:
    """The private names of aiosqlite's connection and cursor: their classes' and those an
    open connection and cursor set on themselves."""
    names: set[str] = set()
    async with aiosqlite.connect(tmp_path / "probe.db") as db:
        async with db.execute("SELECT 1") as cursor:
            for obj in (db, cursor, aiosqlite.Connection, aiosqlite.Cursor):
                names.update(dir(obj))
                names.update(getattr(obj, "__dict__", {}))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _offences(tree: ast.AST, private: set[str]) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in private:
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("getattr", "setattr", "hasattr", "delattr"):
                for arg in node.args[1:2]:
                    if isinstance(arg, ast.Constant) and arg.value in private:
                        found.append(f"line {node.lineno}: {node.func.id}(..., {arg.value!r})")
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                if "aiosqlite" in ast.unparse(base):
                    found.append(f"line {node.lineno}: class {node.name}({ast.unparse(base)})")
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and "aiosqlite" in ast.unparse(target.value):
                    found.append(f"line {node.lineno}: {ast.unparse(target)} patched")
    return found


async def test_no_module_touches_a_private_name_of_aiosqlite(tmp_path: Path) -> None:
    private = await _private_names(tmp_path)
    assert {"_tx", "_execute", "_running", "_connection", "_conn", "_thread"} <= private
    offences = {}
    for module in sorted(PACKAGE.rglob("*.py")):
        found = _offences(ast.parse(module.read_text(encoding="utf-8")), private)
        if found:
            offences[str(module.relative_to(PACKAGE))] = found
    assert offences == {}


@pytest.mark.parametrize(
    "source",
    [
        "db._tx.put_nowait((f, run))",
        "db._execute = execute",
        "if not store.db._running: pass",
        "thread = getattr(self.db, '_thread', None)",
        "class Mine(aiosqlite.Connection): pass",
        "aiosqlite.Connection.close = close",
    ],
)
async def test_the_search_finds_what_it_forbids(tmp_path: Path, source: str) -> None:
    """What the store once did is found (the search can fail)."""
    assert _offences(ast.parse(source), await _private_names(tmp_path))
