"""Mutants of SQL: each guard of a statement (a WHERE/ON/HAVING conjunct, a `<` or `>`, a
LIMIT cap, a plpgsql `IF ... THEN RAISE` block) removed or weakened, one at a time.

SQL is parsed with pglast (PostgreSQL's own parser) and the changed statement deparsed;
plpgsql bodies with pglast's plpgsql parser, and the SQL a plpgsql body builds in a string
literal (`EXECUTE format('SELECT ... WHERE po.%I > $1', ...)`) too: its format specifiers
stand in as identifiers while it is parsed. Each mutant names its guard by its text as the
deparser writes it (`normal_sql`): what an equivalence declaration names it by. Nothing here
runs code.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, NamedTuple

from secbench_tui.core.verify.models import MutantKind


class SqlEdit(NamedTuple):
    """One mutant of SQL text."""

    location: int  # character offset of the guard in the text
    kind: MutantKind
    guard: str  # the guard's text, normalised (`normal_sql`)
    description: str  # what was removed or changed, one line
    text: str  # the whole mutated text


def _pglast() -> Any:
    import pglast  # the verify extra

    return pglast


def _placeholders(text: str) -> tuple[str, dict[int, str]]:
    """`:name` -> `$k` padded to the same length, so node locations stay those of `text`."""
    pglast = _pglast()
    numbers: dict[str, int] = {}
    out = list(text)
    try:
        tokens = pglast.parser.scan(text)
    except Exception:  # not SQL the scanner can read: the parser will say so
        return text, {}
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


def line_of(text: str, location: int) -> int:
    """The 1-based line of a character offset."""
    return text.count("\n", 0, max(location, 0)) + 1


def _snippet(node: Any) -> str:
    """The node as the deparser writes it, whole (a fragment it cannot print: its kind)."""
    from pglast.stream import RawStream

    try:
        return str(RawStream()(node))
    except Exception:  # a fragment the deparser cannot print alone (rare): name its kind
        return type(node).__name__


def short(text: str) -> str:
    """A guard's text shortened for a description on one line."""
    return text if len(text) <= 80 else text[:77] + "..."


def normal_sql(text: str) -> str:
    """A guard's SQL text as PostgreSQL's parser reads it and its deparser writes it back, on
    one line (`o.org_id=:org` and `o.org_id = :org` are one guard); text the parser cannot
    read as one expression (a format specifier in dynamic SQL), with its whitespace collapsed."""
    collapsed = " ".join(text.split())
    pglast = _pglast()
    marked, names = _placeholders(collapsed)
    try:
        stmts = pglast.parse_sql(f"SELECT 1 WHERE {marked}")
    except Exception:  # not an expression pglast can read
        return collapsed
    if len(stmts) != 1 or stmts[0].stmt.whereClause is None:
        return collapsed
    shown = _snippet(stmts[0].stmt.whereClause)
    return " ".join(_restore(shown, names).split())


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
    """(location, kind, guard, new statement text) for each guard of one statement (the guard
    as the deparser writes it, placeholders still `$k`)."""
    for node, kind, shown, (parent, attr, index), repl in list(_sql_edits(stmt)):
        before = getattr(parent, attr)  # edited in place and put back: no copy of the tree
        _set(parent, attr, index, repl)
        try:
            new = _deparse(stmt)
        except Exception:  # the deparser refuses the edited tree: no mutant
            continue
        finally:
            setattr(parent, attr, before)
        locs = _locations(node)
        where = min(locs) if locs else start
        yield where, kind, _snippet(shown), new


_VERBS = {
    MutantKind.CONJUNCT: "deleted",
    MutantKind.BOUNDARY: "widened",
    MutantKind.LIMIT_CAP: "dropped the cap of",
}


def describe(kind: MutantKind, guard: str) -> str:
    if kind is MutantKind.RAISE_BLOCK:
        return f"deleted `IF {short(guard)} THEN RAISE ...`"
    return f"{_VERBS.get(kind, 'changed')} `{short(guard)}`"


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


def _function_mutants(text: str, start: int, end: int, stmt: Any) -> Iterator[SqlEdit]:
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
        for edit in sql_mutants(body):
            yield edit._replace(location=start + offset + edit.location, text=replace(edit.text))
        return
    if language != "plpgsql":
        return
    try:
        tree = pglast.parse_plpgsql(source)
    except Exception:
        return
    for _lineno, b_start, b_end, cond in _raise_blocks(body, tree):
        guard = normal_sql(cond)
        yield SqlEdit(
            start + offset + b_start,
            MutantKind.RAISE_BLOCK,
            guard,
            describe(MutantKind.RAISE_BLOCK, guard),
            replace(body[:b_start] + body[b_end:]),
        )
    for at, query, new_query, edit in _body_edits(_plpgsql_exprs(tree), body):
        new_body = body[:at] + new_query + body[at + len(query) :]
        yield edit._replace(location=start + offset + at + edit.location, text=replace(new_body))


def _body_edits(queries: Iterator[str], body: str) -> Iterator[tuple[int, str, str, SqlEdit]]:
    """(where the expression is in the body, it, it mutated, the edit) for each guard of the
    plpgsql body's SQL expressions: statements, `LEAST` caps and SQL built in string literals
    (the edit's location is within the expression)."""
    seen: set[str] = set()
    for query in queries:
        at = body.find(query)
        if at < 0 or query in seen:
            continue
        seen.add(query)
        statement = query.lstrip()[:6].upper() in ("SELECT", "UPDATE", "DELETE", "INSERT", "WITH")
        if statement:
            for edit in sql_mutants(query):
                yield at, query, edit.text, edit
        elif "LEAST" in query.upper():
            for edit in sql_mutants(f"SELECT {query}"):
                if edit.kind is MutantKind.LIMIT_CAP and edit.text.startswith("SELECT "):
                    where = max(edit.location - 7, 0)
                    yield at, query, edit.text[len("SELECT ") :], edit._replace(location=where)
        for edit in dynamic_mutants(query):
            yield at, query, edit.text, edit


def _format_spec(value: str, i: int) -> int:
    """The end of the `format()` specifier at `value[i]` (a `%`), or -1 when there is none:
    `%[position$][-][width]type`, width digits or `*` (with its own `n$`), type s, I or L."""
    j = i + 1

    def digits(k: int) -> int:
        while k < len(value) and value[k].isdigit():
            k += 1
        return k

    k = digits(j)
    if k > j and k < len(value) and value[k] == "$":
        j = k + 1
    if j < len(value) and value[j] == "-":
        j += 1
    if j < len(value) and value[j] == "*":
        j += 1
        k = digits(j)
        if k > j and k < len(value) and value[k] == "$":
            j = k + 1
    else:
        j = digits(j)
    return j + 1 if j < len(value) and value[j] in "sIL" else -1


def _format_markers(value: str) -> tuple[str, dict[str, str]] | None:
    """A `format()` string with each specifier as an identifier (`fmt__1__`), and the
    specifier of each; None when it holds `%%` or a `%` that is no specifier."""
    out: list[str] = []
    markers: dict[str, str] = {}
    i = 0
    while i < len(value):
        if value[i] != "%":
            out.append(value[i])
            i += 1
            continue
        end = _format_spec(value, i)
        if end < 0:
            return None
        marker = f"fmt__{len(markers) + 1}__"
        if marker in value:
            return None
        markers[marker] = value[i:end]
        out.append(marker)
        i = end
    return "".join(out), markers


def _unmark(text: str, markers: dict[str, str]) -> str:
    """The identifiers `_format_markers` put in, back to their specifiers (by the scanner's
    tokens, so a marker's letters inside a longer name or a string stay as they are)."""
    if not markers:
        return text
    pglast = _pglast()
    try:
        tokens = pglast.parser.scan(text)
    except Exception:  # a shortened description: leave it as it is
        return text
    pieces: list[str] = []
    last = 0
    for token in tokens:
        word = text[token.start : token.end + 1]
        if token.name == "IDENT" and word in markers:
            pieces += [text[last : token.start], markers[word]]
            last = token.end + 1
    return "".join(pieces) + text[last:]


def _line_offset(text: str, line: int) -> int:
    """Offset of the start of 0-based `line` in `text`."""
    at = 0
    for _ in range(line):
        at = text.index("\n", at) + 1
    return at


def dynamic_mutants(expression: str) -> Iterator[SqlEdit]:
    """Mutants of the SQL statements a plpgsql expression holds in plain string literals
    (`format('SELECT ... WHERE po.%I >= $1', ...)`, `'SELECT ...'`): each written back as a
    literal, its location that of the guard's line in the expression."""
    pglast = _pglast()
    try:
        tokens = pglast.parser.scan(expression)
    except Exception:
        return
    for token in tokens:
        source = expression[token.start : token.end + 1]
        if token.name != "SCONST" or len(source) < 2 or source[0] != "'" or source[-1] != "'":
            continue  # (E'...', $$...$$ and U&'...' strings are left alone)
        value = source[1:-1].replace("''", "'")
        if value.lstrip()[:6].upper() not in ("SELECT", "UPDATE", "DELETE", "INSERT", "WITH"):
            continue
        marked = _format_markers(value)
        if marked is None:
            continue
        text, markers = marked
        for edit in sql_mutants(text):
            new_value = _unmark(edit.text, markers)
            literal = "'" + new_value.replace("'", "''") + "'"
            line = text.count("\n", 0, edit.location)
            guard = normal_sql(_unmark(edit.guard, markers))
            yield SqlEdit(
                token.start + _line_offset(source, line),
                edit.kind,
                guard,
                describe(edit.kind, guard),
                expression[: token.start] + literal + expression[token.end + 1 :],
            )


def sql_mutants(text: str) -> list[SqlEdit]:
    """Each mutant of SQL `text`: one guard removed or weakened."""
    pglast = _pglast()
    marked, names = _placeholders(text)
    try:
        stmts = pglast.parse_sql(marked)
    except Exception:  # not SQL pglast can read: no mutant, never a crash
        return []
    out: list[SqlEdit] = []
    for raw in stmts:
        start = raw.stmt_location or 0
        end = start + raw.stmt_len if raw.stmt_len else len(marked)
        stmt = raw.stmt
        if isinstance(stmt, pglast.ast.CreateFunctionStmt):
            for edit in _function_mutants(marked, start, end, stmt):
                mutated = text[:start] + _restore(edit.text, names) + text[end:]
                out.append(edit._replace(text=mutated))
            continue
        for where, kind, shown, new_stmt in _statement_mutants(marked, start, end, stmt):
            mutated = text[:start] + _restore(new_stmt, names) + text[end:]  # same offsets
            guard = normal_sql(_restore(shown, names))
            out.append(SqlEdit(where, kind, guard, describe(kind, guard), mutated))
    return out
