"""Mutants of Python handlers: an `if ...: raise HTTPException`, a SQLAlchemy filter
argument, a role dependency, a boundary or a cap removed or weakened, one at a time; SQL in
`text("...")` calls gets the SQL mutants.

Python is parsed with `ast` and edited by the node spans it reports. Each mutant names its
guard by its text as `ast.unparse` writes it (`normal_python`). Nothing here runs code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from secbench_tui.core.verify.models import Mutant, MutantKind
from secbench_tui.core.verify.sql_mutants import sql_mutants

FILTER_METHODS = {"where", "filter", "filter_by", "having"}
PY = "python"  # the syntax of a guard written in Python


class _Source:
    """Python source edited by the spans `ast` reports (columns are UTF-8 byte offsets)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode()
        self.starts = [0]
        for i, byte in enumerate(self.data):
            if byte == 10:
                self.starts.append(i + 1)

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def segment(self, node: ast.AST) -> str:
        a, b = self.span(node)
        return self.data[a:b].decode()

    def replace(self, start: int, end: int, new: str) -> str:
        return (self.data[:start] + new.encode() + self.data[end:]).decode()


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."


def normal_python(text: str) -> str:
    """A guard's Python text as `ast.unparse` writes it back (an expression, or a keyword
    argument `le=100`); other text with its whitespace collapsed."""
    collapsed = " ".join(text.split())
    try:
        tree = ast.parse(f"_({collapsed})", mode="eval")
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return collapsed
    call = tree.body
    if not isinstance(call, ast.Call) or len(call.args) + len(call.keywords) != 1:
        return collapsed
    if call.args:
        return ast.unparse(call.args[0])
    keyword = call.keywords[0]
    value = ast.unparse(keyword.value)
    return f"{keyword.arg}={value}" if keyword.arg else f"**{value}"


def _raises_http(stmts: list[ast.stmt]) -> bool:
    for stmt in stmts:
        if isinstance(stmt, ast.Raise) and stmt.exc is not None:
            call = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
            name = call.id if isinstance(call, ast.Name) else getattr(call, "attr", "")
            if name == "HTTPException":
                return True
    return False


def _blocks(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def _http_guards(src: _Source, tree: ast.AST) -> Iterator[Mutant]:
    for block in _blocks(tree):
        for stmt in block:
            if isinstance(stmt, ast.If) and not stmt.orelse and _raises_http(stmt.body):
                start = src.offset(stmt.lineno, 0)
                end_line = stmt.end_lineno or stmt.lineno
                end = src.starts[end_line] if end_line < len(src.starts) else len(src.data)
                indent = " " * stmt.col_offset
                keep = f"{indent}pass\n" if len(block) == 1 else ""
                guard = ast.unparse(stmt.test)
                what = f"deleted `if {_short(guard)}: raise HTTPException`"
                mutated = src.replace(start, end, keep)
                yield Mutant(MutantKind.HTTP_GUARD, stmt.lineno, what, mutated, guard, PY)


def _filter_args(src: _Source, tree: ast.AST) -> Iterator[Mutant]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        method = func.attr if isinstance(func, ast.Attribute) else None
        is_and = isinstance(func, ast.Name) and func.id == "and_"
        if method not in FILTER_METHODS and not is_and:
            continue
        items: list[ast.AST] = [*node.args, *(k for k in node.keywords if k.arg)]
        if len(items) == 1 and isinstance(func, ast.Attribute):
            a, b = src.span(node)
            keep = src.segment(func.value)
            guard = normal_python(src.segment(items[0]))
            what = f"deleted `.{method}({_short(guard)})`"
            line: int = items[0].lineno  # type: ignore[attr-defined]
            yield Mutant(MutantKind.FILTER_ARG, line, what, src.replace(a, b, keep), guard, PY)
            continue
        for i, item in enumerate(items):
            a, b = src.span(item)
            if i + 1 < len(items):
                b = src.span(items[i + 1])[0]
            else:
                a = src.span(items[i - 1])[1]
            guard = normal_python(src.segment(item))
            what = f"deleted `{_short(guard)}` from `{method or 'and_'}(...)`"
            yield Mutant(MutantKind.FILTER_ARG, item.lineno, what, src.replace(a, b, ""), guard, PY)  # type: ignore[attr-defined]


def _role_dependencies(src: _Source, tree: ast.AST) -> Iterator[Mutant]:
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id != "Depends" or not node.args:
            continue
        inner = node.args[0]
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name):
            if inner.func.id.startswith("require_"):
                a, b = src.span(inner)
                guard = ast.unparse(inner)
                what = f"`{_short(guard)}` -> any signed-in user"
                mutated = src.replace(a, b, "get_current_user")
                yield Mutant(MutantKind.ROLE_DEPENDENCY, inner.lineno, what, mutated, guard, PY)


def _boundaries(src: _Source, tree: ast.AST) -> Iterator[Mutant]:
    wider = {ast.Lt: "<=", ast.Gt: ">="}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        op = type(node.ops[0])
        if op not in wider:
            continue
        left_end = src.span(node.left)[1]
        right_start = src.span(node.comparators[0])[0]
        text = src.data[left_end:right_start].decode()
        symbol = "<" if op is ast.Lt else ">"
        at = text.find(symbol)
        if at < 0:
            continue
        pos = left_end + len(text[:at].encode())
        guard = ast.unparse(node)
        what = f"widened `{_short(guard)}` to {wider[op]}"
        mutated = src.replace(pos, pos + 1, wider[op])
        yield Mutant(MutantKind.BOUNDARY, node.lineno, what, mutated, guard, PY)


def _limit_caps(src: _Source, tree: ast.AST) -> Iterator[Mutant]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id == "min" and len(node.args) == 2:
            free = [a for a in node.args if not isinstance(a, ast.Constant)]
            if len(free) == 1:
                a, b = src.span(node)
                guard = ast.unparse(node)
                what = f"dropped the cap of `{_short(guard)}`"
                mutated = src.replace(a, b, src.segment(free[0]))
                yield Mutant(MutantKind.LIMIT_CAP, node.lineno, what, mutated, guard, PY)
        for kw in node.keywords:
            if kw.arg in ("le", "lt") and isinstance(kw.value, ast.Constant):
                a, b = src.span(kw)
                items: list[ast.AST] = [*node.args, *node.keywords]
                pos = items.index(kw)
                if pos > 0:
                    a = src.span(items[pos - 1])[1]
                elif pos + 1 < len(items):
                    b = src.span(items[pos + 1])[0]
                guard = normal_python(src.segment(kw))
                what = f"dropped `{_short(guard)}`"
                mutated = src.replace(a, b, "")
                yield Mutant(MutantKind.LIMIT_CAP, kw.value.lineno, what, mutated, guard, PY)


def _sql_strings(src: _Source, tree: ast.AST) -> Iterator[Mutant]:
    """SQL in `text("...")` calls: the SQL mutants, written back as a Python string."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id != "text" or len(node.args) != 1:
            continue
        arg = node.args[0]
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            continue
        a, b = src.span(arg)
        for edit in sql_mutants(arg.value):
            line = arg.lineno + arg.value.count("\n", 0, edit.location)
            mutated = src.replace(a, b, repr(edit.text))
            yield Mutant(edit.kind, line, edit.description, mutated, edit.guard, "sql")


def python_mutants(code: str) -> list[Mutant]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    src = _Source(code)
    found: list[Mutant] = []
    for make in (
        _http_guards,
        _filter_args,
        _role_dependencies,
        _boundaries,
        _limit_caps,
        _sql_strings,
    ):
        found.extend(make(src, tree))
    return found
