"""Mutants of Python handlers: an `if ...: raise HTTPException`, a SQLAlchemy filter
argument, a role dependency, a boundary or a cap removed or weakened, one at a time; SQL in
`text("...")` calls gets the SQL mutants.

Python is parsed with `ast` and edited by the node spans it reports. Nothing here runs code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from secbench_tui.core.verify.models import Mutant, MutantKind
from secbench_tui.core.verify.sql_mutants import sql_mutants

FILTER_METHODS = {"where", "filter", "filter_by", "having"}


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
                what = f"deleted `if {_short(ast.unparse(stmt.test))}: raise HTTPException`"
                yield Mutant(
                    MutantKind.HTTP_GUARD, stmt.lineno, what, src.replace(start, end, keep)
                )


def _filter_args(src: _Source, tree: ast.AST) -> Iterator[Mutant]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        method = func.attr if isinstance(func, ast.Attribute) else None
        is_and = isinstance(func, ast.Name) and func.id == "and_"
        if method not in FILTER_METHODS and not is_and:
            continue
        args: list[ast.expr] = [*node.args, *(k.value for k in node.keywords if k.arg)]
        items: list[ast.AST] = [*node.args, *(k for k in node.keywords if k.arg)]
        if len(items) == 1 and isinstance(func, ast.Attribute):
            a, b = src.span(node)
            keep = src.segment(func.value)
            what = f"deleted `.{method}({_short(src.segment(args[0]))})`"
            yield Mutant(MutantKind.FILTER_ARG, items[0].lineno, what, src.replace(a, b, keep))  # type: ignore[attr-defined]
            continue
        for i, item in enumerate(items):
            a, b = src.span(item)
            if i + 1 < len(items):
                b = src.span(items[i + 1])[0]
            else:
                a = src.span(items[i - 1])[1]
            what = f"deleted `{_short(src.segment(item))}` from `{method or 'and_'}(...)`"
            yield Mutant(MutantKind.FILTER_ARG, item.lineno, what, src.replace(a, b, ""))  # type: ignore[attr-defined]


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
                what = f"`{_short(src.segment(inner))}` -> any signed-in user"
                mutated = src.replace(a, b, "get_current_user")
                yield Mutant(MutantKind.ROLE_DEPENDENCY, inner.lineno, what, mutated)


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
        what = f"widened `{_short(src.segment(node))}` to {wider[op]}"
        yield Mutant(MutantKind.BOUNDARY, node.lineno, what, src.replace(pos, pos + 1, wider[op]))


def _limit_caps(src: _Source, tree: ast.AST) -> Iterator[Mutant]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id == "min" and len(node.args) == 2:
            free = [a for a in node.args if not isinstance(a, ast.Constant)]
            if len(free) == 1:
                a, b = src.span(node)
                what = f"dropped the cap of `{_short(src.segment(node))}`"
                yield Mutant(
                    MutantKind.LIMIT_CAP, node.lineno, what, src.replace(a, b, src.segment(free[0]))
                )
        for kw in node.keywords:
            if kw.arg in ("le", "lt") and isinstance(kw.value, ast.Constant):
                a, b = src.span(kw)
                items: list[ast.AST] = [*node.args, *node.keywords]
                pos = items.index(kw)
                if pos > 0:
                    a = src.span(items[pos - 1])[1]
                elif pos + 1 < len(items):
                    b = src.span(items[pos + 1])[0]
                what = f"dropped `{_short(src.segment(kw))}`"
                yield Mutant(MutantKind.LIMIT_CAP, kw.value.lineno, what, src.replace(a, b, ""))


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
        for where, kind, what, new_sql in sql_mutants(arg.value):
            line = arg.lineno + arg.value.count("\n", 0, where)
            yield Mutant(kind, line, what, src.replace(a, b, repr(new_sql)))


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
