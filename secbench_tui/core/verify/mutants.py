"""Mutants of good cases: each removes or weakens one guard, so verify can be tested itself.

A good case is proven when its scenario's data and property cannot tell it from a flaw-free
handler. A mutant deletes one guard (a WHERE/ON conjunct, a plpgsql `IF ... THEN RAISE`
block, a SQLAlchemy filter argument, an `if ...: raise HTTPException`, a role dependency),
widens a boundary (`<` to `<=`) or drops a LIMIT cap. If verify still proves the mutant
"good", the scenario's parameter sets or property miss that guard: the survivor names the
case and the line, so the suite author knows where to add data.

SQL is parsed with pglast (PostgreSQL's own parser) and the changed statement deparsed;
plpgsql bodies with pglast's plpgsql parser; Python with `ast`, edited by the node spans
it reports. Nothing here runs code: `runner` verifies the mutants like any case.
"""

from __future__ import annotations

import ast
import copy
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from secbench_tui.core.models import Case
from secbench_tui.core.verify.data import Scenario
from secbench_tui.core.verify.execution import Execution
from secbench_tui.core.verify.judge import CaseRun, judge
from secbench_tui.core.verify.models import MutantOutcome, MutantResult, Proof


class MutantKind(StrEnum):
    CONJUNCT = "conjunct"  # a WHERE/ON/HAVING conjunct deleted
    RAISE_BLOCK = "raise-block"  # a plpgsql IF ... THEN RAISE ... END IF deleted
    FILTER_ARG = "filter-arg"  # a SQLAlchemy where/filter argument deleted
    HTTP_GUARD = "http-guard"  # an `if ...: raise HTTPException(...)` deleted
    ROLE_DEPENDENCY = "role-dependency"  # Depends(require_roles(...)) -> any signed-in user
    BOUNDARY = "boundary"  # < to <=, > to >=
    LIMIT_CAP = "limit-cap"  # LEAST(:limit, 100) -> :limit, min(x, 100) -> x, le=100 dropped


@dataclass(frozen=True)
class Mutant:
    kind: MutantKind
    line: int  # 1-based line in the case's code block
    description: str  # what was removed or changed, one line
    code: str  # the whole mutated code block


# --- SQL -------------------------------------------------------------------------------------


def _pglast() -> Any:
    import pglast  # the verify extra

    return pglast


def _placeholders(text: str) -> tuple[str, dict[int, str]]:
    """`:name` -> `$k` padded to the same length, so node locations stay those of `text`."""
    pglast = _pglast()
    numbers: dict[str, int] = {}
    out = list(text)
    tokens = pglast.parser.scan(text)
    for prev, colon, word in zip([None, *tokens], tokens, tokens[1:], strict=False):
        name = text[word.start : word.end + 1]
        if colon.name != "ASCII_58" or word.start != colon.end + 1 or not name.isidentifier():
            continue
        if prev is not None and prev.name in ("ASCII_58", "ASCII_91"):  # a[1:n] slice
            continue
        number = numbers.setdefault(name, len(numbers) + 1)
        marker = f"${number}".ljust(len(name) + 1)
        if len(marker) > len(name) + 1:
            continue
        out[colon.start : word.end + 1] = list(marker)
    return "".join(out), {n: name for name, n in numbers.items()}


def _restore(text: str, names: dict[int, str]) -> str:
    """`$k` back to `:name` in deparsed SQL (by the scanner's PARAM tokens)."""
    if not names:
        return text
    pglast = _pglast()
    pieces: list[str] = []
    last = 0
    try:
        tokens = pglast.parser.scan(text)
    except Exception:  # a shortened description: leave it as it is
        return text
    for token in tokens:
        if token.name == "PARAM":
            number = int(text[token.start + 1 : token.end + 1])
            if number in names:
                pieces += [text[last : token.start], f":{names[number]}"]
                last = token.end + 1
    return "".join(pieces) + text[last:]


def _children(node: Any) -> Iterator[tuple[Any, str, int | None, Any]]:
    """(parent, attribute, index in a tuple or None, child) for each child node."""
    ast_mod = _pglast().ast
    for attr in getattr(node, "__slots__", ()):
        value = getattr(node, attr, None)
        if isinstance(value, ast_mod.Node):
            yield node, attr, None, value
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                if isinstance(item, ast_mod.Node):
                    yield node, attr, i, item


def _walk(node: Any) -> Iterator[tuple[Any, str, int | None, Any]]:
    for edge in _children(node):
        yield edge
        yield from _walk(edge[3])


def _locations(node: Any) -> list[int]:
    found = [node.location] if isinstance(getattr(node, "location", None), int) else []
    for _, _, _, child in _walk(node):
        loc = getattr(child, "location", None)
        if isinstance(loc, int) and loc >= 0:
            found.append(loc)
    return [x for x in found if x >= 0]


def _set(parent: Any, attr: str, index: int | None, value: Any) -> None:
    if index is None:
        setattr(parent, attr, value)
    else:
        items = list(getattr(parent, attr))
        if value is None:
            del items[index]
        else:
            items[index] = value
        setattr(parent, attr, tuple(items))


def _path(root: Any, target: Any) -> list[tuple[str, int | None]] | None:
    """Attribute path from `root` to the node `target` (by identity)."""
    for _parent, attr, index, child in _children(root):
        if child is target:
            return [(attr, index)]
        sub = _path(child, target)
        if sub is not None:
            return [(attr, index), *sub]
    return None


def _follow(root: Any, path: list[tuple[str, int | None]]) -> Any:
    node = root
    for attr, index in path[:-1]:
        value = getattr(node, attr)
        node = value if index is None else value[index]
    return node


def _line(text: str, location: int) -> int:
    return text.count("\n", 0, max(location, 0)) + 1


def _snippet(text: str, node: Any) -> str:
    from pglast.stream import RawStream

    try:
        shown = str(RawStream()(node))
    except Exception:  # a fragment the deparser cannot print alone (rare): name its kind
        shown = type(node).__name__
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _sql_edits(stmt: Any) -> Iterator[tuple[Any, MutantKind, str, Any, Any]]:
    """(node, kind, description-node, parent-edge, replacement) for each guard in `stmt`."""
    ast_mod = _pglast().ast
    enums = _pglast().enums
    for parent, attr, index, node in _walk(stmt):
        if isinstance(node, ast_mod.BoolExpr) and node.boolop == enums.BoolExprType.AND_EXPR:
            for i, arg in enumerate(node.args):
                rest = node.args[:i] + node.args[i + 1 :]
                repl = (
                    rest[0] if len(rest) == 1 else ast_mod.BoolExpr(boolop=node.boolop, args=rest)
                )
                yield arg, MutantKind.CONJUNCT, arg, (parent, attr, index), repl
        elif attr == "whereClause" and not (
            isinstance(node, ast_mod.BoolExpr) and node.boolop == enums.BoolExprType.AND_EXPR
        ):
            yield node, MutantKind.CONJUNCT, node, (parent, attr, index), None
        if isinstance(node, ast_mod.A_Expr) and node.kind == enums.A_Expr_Kind.AEXPR_OP:
            op = node.name[-1].sval if node.name else ""
            if op in ("<", ">"):
                wider = copy.deepcopy(node)
                wider.name = (*node.name[:-1], ast_mod.String(sval=op + "="))
                yield node, MutantKind.BOUNDARY, node, (parent, attr, index), wider
        if (
            isinstance(node, ast_mod.MinMaxExpr)
            and node.op == enums.MinMaxOp.IS_LEAST
            and any(isinstance(a, ast_mod.A_Const) for a in node.args)
        ):
            free = [a for a in node.args if not isinstance(a, ast_mod.A_Const)]
            if len(free) == 1:
                yield node, MutantKind.LIMIT_CAP, node, (parent, attr, index), free[0]
        if attr == "limitCount" and isinstance(node, ast_mod.A_Const):
            yield node, MutantKind.LIMIT_CAP, node, (parent, attr, index), None


def _deparse(stmt: Any) -> str:
    from pglast.stream import RawStream

    return str(RawStream()(stmt))


def _statement_mutants(
    text: str, start: int, end: int, stmt: Any
) -> Iterator[tuple[int, MutantKind, str, str]]:
    """(location, kind, description, new statement text) for each guard of one statement."""
    for node, kind, shown, (parent, attr, index), repl in list(_sql_edits(stmt)):
        path = _path(stmt, parent) if parent is not stmt else []
        if path is None:
            continue
        clone = copy.deepcopy(stmt)
        target_parent = _follow(clone, [*path, ("", None)]) if path else clone
        _set(target_parent, attr, index, copy.deepcopy(repl) if repl is not None else None)
        try:
            new = _deparse(clone)
        except Exception:  # the deparser refuses the edited tree: no mutant
            continue
        locs = _locations(node)
        where = min(locs) if locs else start
        verb = {
            MutantKind.CONJUNCT: "deleted",
            MutantKind.BOUNDARY: "widened",
            MutantKind.LIMIT_CAP: "dropped the cap of",
        }.get(kind, "changed")
        yield where, kind, f"{verb} `{_snippet(text, shown)}`", new


def _raise_blocks(body: str, tree: Any) -> Iterator[tuple[int, int, int, str]]:
    """(line in body, start, end, condition) of each `IF cond THEN RAISE ...; END IF;`."""
    pglast = _pglast()

    def visit(node: Any) -> Iterator[dict[str, Any]]:  # pglast's JSON parse tree
        if isinstance(node, dict):
            if "PLpgSQL_stmt_if" in node:
                yield node["PLpgSQL_stmt_if"]
            for value in node.values():
                yield from visit(value)
        elif isinstance(node, list):
            for value in node:
                yield from visit(value)

    tokens = pglast.parser.scan(body)
    line_starts = [0] + [i + 1 for i, ch in enumerate(body) if ch == "\n"]
    for stmt in visit(tree):
        then = stmt.get("then_body") or []
        raises = any(
            "PLpgSQL_stmt_raise" in s and s["PLpgSQL_stmt_raise"].get("elog_level", 21) >= 21
            for s in then
        )
        if not raises or stmt.get("elsif_list") or stmt.get("else_body"):
            continue
        lineno = int(stmt.get("lineno", 0))
        if not 1 <= lineno <= len(line_starts):
            continue
        first = next(
            (
                i
                for i, t in enumerate(tokens)
                if t.name == "IF_P" and t.start >= line_starts[lineno - 1]
            ),
            None,
        )
        if first is None:
            continue
        depth, i = 1, first + 1
        while i < len(tokens) and depth:
            tok = tokens[i]
            if tok.name == "END_P" and i + 1 < len(tokens) and tokens[i + 1].name == "IF_P":
                depth -= 1
                i += 1
            elif tok.name == "IF_P":
                depth += 1
            i += 1
        semi = next((t for t in tokens[i:] if t.name == "ASCII_59"), None)
        if depth or semi is None:
            continue
        start = line_starts[lineno - 1]
        end = body.find("\n", semi.end)
        end = len(body) if end < 0 else end + 1
        cond = stmt.get("cond", {}).get("PLpgSQL_expr", {}).get("query", "")
        yield lineno, start, end, " ".join(str(cond).split())


def _plpgsql_exprs(tree: Any) -> Iterator[str]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key == "PLpgSQL_expr" and isinstance(value, dict) and "query" in value:
                yield str(value["query"])
            else:
                yield from _plpgsql_exprs(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from _plpgsql_exprs(value)


def _function_mutants(
    text: str, start: int, end: int, stmt: Any
) -> Iterator[tuple[int, MutantKind, str, str]]:
    """Mutants inside a function body: whole-text replacements of the statement."""
    pglast = _pglast()
    opts = {o.defname: o.arg for o in (stmt.options or ())}
    language = getattr(opts.get("language"), "sval", "sql")
    body_arg = opts.get("as")
    body = body_arg[0].sval if isinstance(body_arg, tuple) and body_arg else None
    source = text[start:end]
    if body is None:
        return
    offset = source.find(body)
    if offset < 0:
        return

    def replace(new_body: str) -> str:
        return source[:offset] + new_body + source[offset + len(body) :]

    if language == "sql":
        for where, kind, what, new_body in sql_mutants(body):
            yield start + offset + where, kind, what, replace(new_body)
        return
    if language != "plpgsql":
        return
    try:
        tree = pglast.parse_plpgsql(source)
    except Exception:
        return
    for _lineno, b_start, b_end, cond in _raise_blocks(body, tree):
        yield (
            start + offset + b_start,
            MutantKind.RAISE_BLOCK,
            f"deleted `IF {cond} THEN RAISE ...`",
            replace(body[:b_start] + body[b_end:]),
        )
    seen: set[str] = set()
    for query in _plpgsql_exprs(tree):
        at = body.find(query)
        if at < 0 or query in seen:
            continue
        seen.add(query)
        candidates = (
            [query]
            if query.lstrip()[:6].upper() in ("SELECT", "UPDATE", "DELETE", "INSERT", "WITH")
            else []
        )
        for sql in candidates:
            for where, kind, what, new_query in sql_mutants(sql):
                new_body = body[:at] + new_query + body[at + len(query) :]
                yield start + offset + at + where, kind, what, replace(new_body)
        if not candidates and "LEAST" in query.upper():
            for where, kind, what, new_expr in sql_mutants(f"SELECT {query}"):
                if kind is MutantKind.LIMIT_CAP and new_expr.startswith("SELECT "):
                    new_body = body[:at] + new_expr[len("SELECT ") :] + body[at + len(query) :]
                    yield start + offset + at + max(where - 7, 0), kind, what, replace(new_body)


def sql_mutants(text: str) -> list[tuple[int, MutantKind, str, str]]:
    """(location in `text`, kind, description, mutated text) for each guard in SQL `text`."""
    pglast = _pglast()
    marked, names = _placeholders(text)
    try:
        stmts = pglast.parse_sql(marked)
    except Exception:  # not SQL pglast can read: no mutant, never a crash
        return []
    out: list[tuple[int, MutantKind, str, str]] = []
    for raw in stmts:
        start = raw.stmt_location or 0
        end = start + raw.stmt_len if raw.stmt_len else len(marked)
        stmt = raw.stmt
        if isinstance(stmt, pglast.ast.CreateFunctionStmt):
            found = _function_mutants(marked, start, end, stmt)
        else:
            found = _statement_mutants(marked, start, end, stmt)
        for where, kind, what, new_stmt in found:
            mutated = text[:start] + _restore(new_stmt, names) + text[end:]  # same offsets
            out.append((where, kind, _restore(what, names), mutated))
    return out


# --- Python ----------------------------------------------------------------------------------

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


def mutants_of(code: str, language: str) -> list[Mutant]:
    """Every mutant of a case's code block (`language`: sql or python), in line order."""
    if language == "python":
        found = python_mutants(code)
    else:
        found = [
            Mutant(kind, _line(code, where), what, new)
            for where, kind, what, new in sql_mutants(code)
        ]
    unique: dict[str, Mutant] = {}
    for m in found:
        if m.code != code:
            unique.setdefault(m.code, m)
    return sorted(unique.values(), key=lambda m: (m.line, m.kind.value))


# --- verifying mutants -----------------------------------------------------------------------


def code_language(case: Case) -> str:
    """`python` for a Python app's handler, else `sql` (the markdown block's language)."""
    try:
        text = Path(case.test_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    return "python" if "```python" in text or "```py\n" in text else "sql"


def _code_line(case: Case) -> int:
    """Line of the case file where its code block starts (0 when it cannot be found)."""
    try:
        text = Path(case.test_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return 0
    at = text.find(case.code)
    return text.count("\n", 0, at) if at >= 0 else 0


class Mutation:
    """Makes the mutants of each good case, verifies them beside the real runs, and keeps the
    results and the time they took (apart from the verify time of the suite itself)."""

    def __init__(self) -> None:
        self.results: list[MutantResult] = []
        self.seconds = 0.0

    def check(
        self,
        execute: Callable[[Case, Scenario], tuple[Execution, ...]],
        scenario: Scenario,
        group: list[Case],
        runs: list[CaseRun],
    ) -> list[MutantResult]:
        started = time.monotonic()
        goods = [r for r in runs if r.expected == "good"]
        found: list[MutantResult] = []
        for case in group:
            if case.expected != "good":
                continue
            base = _code_line(case)
            for mutant in mutants_of(case.code, code_language(case)):
                found.append(self._one(execute, scenario, case, goods, mutant, base))
        self.results.extend(found)
        self.seconds += time.monotonic() - started
        return found

    def _one(
        self,
        execute: Callable[[Case, Scenario], tuple[Execution, ...]],
        scenario: Scenario,
        case: Case,
        goods: list[CaseRun],
        mutant: Mutant,
        base: int,
    ) -> MutantResult:
        def result(outcome: MutantOutcome, detail: str = "") -> MutantResult:
            return MutantResult(
                case.app,
                scenario.name,
                case.case_id,
                mutant.kind.value,
                mutant.line,
                base + mutant.line,
                mutant.description,
                outcome,
                detail,
            )

        declared = scenario.equivalent(case.case_id, mutant.line, mutant.kind.value)
        mutated = replace(case, code=mutant.code)
        run = CaseRun(case.app, f"{case.case_id}#mutant", "good", execute(mutated, scenario))
        others = [g for g in goods if g.case_id != case.case_id] or goods
        proof = judge([*others, run], scenario)[-1]
        error = next((ex.error for ex in run.executions if ex.error is not None), None)
        if proof.proof is Proof.PROVEN:
            if declared is not None:
                return result(MutantOutcome.EQUIVALENT, declared.reason)
            return result(MutantOutcome.SURVIVED)
        if error is not None:
            return result(MutantOutcome.BROKEN, error)
        return result(MutantOutcome.CAUGHT, proof.detail)
