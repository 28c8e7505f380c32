"""SQL relations: meaning-preserving edits made on sqlglot's PostgreSQL syntax tree.

Every relation that edits the tree renders it again with sqlglot, so its variant's layout is
sqlglot's (the `layout` relation is exactly that re-rendering; compare a relation's flip rate
with `layout`'s to see what the relation adds). Bound parameters (`:current_org_id`) are the
SPEC's contract and are written back exactly as named. A statement sqlglot cannot model (a
`CREATE FUNCTION` with a plpgsql body, a `DO` block) is left alone: only the relations that
add a comment above the code apply to it.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import SqlglotError


class _Dialect(Postgres):
    """PostgreSQL, writing named parameters back as `:name` (sqlglot writes `%(name)s`)."""

    class Generator(Postgres.Generator):  # type: ignore[misc,valid-type]
        def placeholder_sql(self, expression: exp.Placeholder) -> str:
            return f":{expression.name}" if expression.this else "?"


class NotApplicable(Exception):
    """The relation has nothing to change in this code; the message says why."""


def parse(code: str) -> list[exp.Expr]:
    """The statements, or NotApplicable when sqlglot cannot model them as a tree."""
    try:
        statements = [s for s in sqlglot.parse(code, dialect=_Dialect) if s is not None]
    except SqlglotError as exc:
        raise NotApplicable(f"sqlglot cannot parse it: {str(exc).splitlines()[0]}") from exc
    if not statements:
        raise NotApplicable("no statement")
    for statement in statements:
        if isinstance(statement, exp.Command) or (
            isinstance(statement, exp.Create) and statement.kind in {"FUNCTION", "PROCEDURE"}
        ):
            raise NotApplicable("a plpgsql body or a command: left alone")
    return statements


def render(statements: list[exp.Expr], pretty: bool = True, comments: bool = True) -> str:
    text = ";\n\n".join(
        s.sql(dialect=_Dialect, pretty=pretty, comments=comments) for s in statements
    )
    return text + ";"


def _has_comments(code: str) -> bool:
    try:
        tokens = sqlglot.tokenize(code, dialect=_Dialect)
    except SqlglotError:
        return False
    return any(t.comments for t in tokens)


# --- renames -------------------------------------------------------------------------------

NEUTRAL = ("t", "r", "x", "q", "s", "v", "k", "m")
MISLEADING_ALIASES = (
    "authorized",
    "scoped",
    "sanitized",
    "verified",
    "tenant_safe",
    "trusted",
    "checked",
    "allowed",
)
MISLEADING_CTES = ("authorized_rows", "tenant_scoped", "sanitized_input", "verified_owner")


def _aliases(statement: exp.Expr) -> list[str]:
    """Table aliases in order of appearance, each once."""
    found: list[str] = []
    for alias in statement.find_all(exp.TableAlias):
        if isinstance(alias.parent, exp.Table | exp.Subquery) and alias.name:
            if alias.name not in found:
                found.append(alias.name)
    return found


def _cte_names(statement: exp.Expr) -> list[str]:
    return [cte.alias for cte in statement.find_all(exp.CTE) if cte.alias]


def _column_names(statement: exp.Expr) -> set[str]:
    return {c.name for c in statement.find_all(exp.Column)}


def _rename(statement: exp.Expr, mapping: dict[str, str], ctes: bool = False) -> None:
    """Rename aliases (or CTE names) and every reference to them: qualified columns,
    `alias.*`, and a bare row reference such as `to_jsonb(u)`."""
    for node in list(statement.walk()):
        if isinstance(node, exp.TableAlias) and node.name in mapping:
            node.set("this", exp.to_identifier(mapping[node.name]))
        elif isinstance(node, exp.Column):
            table = node.args.get("table")
            if table is not None and table.name in mapping:
                node.set("table", exp.to_identifier(mapping[table.name]))
            elif table is None and node.name in mapping and not isinstance(node.this, exp.Star):
                node.set("this", exp.to_identifier(mapping[node.name]))  # a row reference
        elif isinstance(node, exp.Table) and ctes:
            if not node.args.get("db") and node.name in mapping:
                node.set("this", exp.to_identifier(mapping[node.name]))
        elif isinstance(node, exp.Star) and isinstance(node.parent, exp.Column):
            continue


def _new_names(
    old: list[str], pool: tuple[str, ...], rng: random.Random, taken: set[str]
) -> dict[str, str]:
    choices = [p for p in pool if p not in taken and p not in old]
    rng.shuffle(choices)
    mapping: dict[str, str] = {}
    for n, name in enumerate(old):
        fresh = choices[n] if n < len(choices) else f"{pool[0]}{n + 1}"
        while fresh in taken or fresh in old or fresh in mapping.values():
            fresh += "_"
        mapping[name] = fresh
    return mapping


def alias_rename(code: str, rng: random.Random) -> str:
    statements = parse(code)
    changed = False
    for statement in statements:
        old = _aliases(statement)
        if not old:
            continue
        taken = _column_names(statement) | {t.name for t in statement.find_all(exp.Table)}
        _rename(statement, _new_names(old, NEUTRAL, rng, taken))
        changed = True
    if not changed:
        raise NotApplicable("no table alias to rename")
    return render(statements)


def misleading_names(code: str, rng: random.Random) -> str:
    statements = parse(code)
    changed = False
    for statement in statements:
        taken = _column_names(statement) | {t.name for t in statement.find_all(exp.Table)}
        ctes = _cte_names(statement)
        if ctes:
            cte_map = _new_names(ctes, MISLEADING_CTES, rng, taken)
            for cte in statement.find_all(exp.CTE):
                if cte.alias in cte_map:
                    cte.args["alias"].set("this", exp.to_identifier(cte_map[cte.alias]))
            _rename(statement, cte_map, ctes=True)
            taken |= set(cte_map.values())
            changed = True
        aliases = [a for a in _aliases(statement) if a not in ctes]
        if aliases:
            _rename(statement, _new_names(aliases, MISLEADING_ALIASES, rng, taken))
            changed = True
    if not changed:
        raise NotApplicable("no CTE or table alias to rename")
    return render(statements)


# --- predicates ----------------------------------------------------------------------------


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
        return _conjuncts(node.this)
    return [node]


def _and(parts: list[exp.Expr]) -> exp.Expr:
    wrapped = [exp.Paren(this=p) if isinstance(p, exp.Or) else p for p in parts]
    result = wrapped[0]
    for part in wrapped[1:]:
        result = exp.And(this=result, expression=part)
    return result


def conjunct_reorder(code: str, rng: random.Random) -> str:
    statements = parse(code)
    changed = False
    for statement in statements:
        for holder in list(statement.find_all(exp.Where, exp.Having, exp.Join)):
            key = "on" if isinstance(holder, exp.Join) else "this"
            condition = holder.args.get(key)
            if condition is None:
                continue
            parts = _conjuncts(condition)
            if len(parts) < 2:
                continue
            order = list(range(len(parts)))
            while order == sorted(order):
                rng.shuffle(order)
            holder.set(key, _and([parts[i].copy() for i in order]))
            changed = True
    if not changed:
        raise NotApplicable("no WHERE, HAVING or ON with two conditions or more")
    return render(statements)


def _equivalent_in(node: exp.Expr) -> exp.Expr | None:
    if isinstance(node, exp.In) and not node.args.get("query") and len(node.expressions) == 1:
        if not node.args.get("unnest") and not node.args.get("field"):
            return exp.EQ(this=node.this.copy(), expression=node.expressions[0].copy())
    if isinstance(node, exp.EQ) and isinstance(node.expression, exp.Literal):
        if not isinstance(node.this, exp.Literal):
            return exp.In(this=node.this.copy(), expressions=[node.expression.copy()])
    if isinstance(node, exp.Between) and not isinstance(node.parent, exp.Not):
        if node.args.get("symmetric"):  # either bound may be the lower: no two comparisons say it
            return None
        low, high = node.args["low"], node.args["high"]
        return exp.Paren(
            this=exp.And(
                this=exp.GTE(this=node.this.copy(), expression=low.copy()),
                expression=exp.LTE(this=node.this.copy(), expression=high.copy()),
            )
        )
    return None


def _comma_to_join(select: exp.Select) -> bool:
    """`FROM a, b WHERE a.x = b.y AND ...` -> `FROM a JOIN b ON a.x = b.y WHERE ...`."""
    joins = select.args.get("joins") or []
    where = select.args.get("where")
    changed = False
    for join in joins:
        if join.args.get("on") or join.args.get("using") or join.args.get("kind"):
            continue
        if join.args.get("side") or not isinstance(join.this, exp.Table) or where is None:
            continue
        alias = join.this.alias_or_name
        parts = _conjuncts(where.this)
        linking = [
            p
            for p in parts
            if alias in {c.table for c in p.find_all(exp.Column)}
            and len({c.table for c in p.find_all(exp.Column)}) > 1
        ]
        if not linking:
            continue
        rest = [p for p in parts if p not in linking]
        join.set("on", _and([p.copy() for p in linking]))
        if rest:
            where.set("this", _and([p.copy() for p in rest]))
        else:
            select.set("where", None)
            where = None
        changed = True
    return changed


def _join_to_comma(select: exp.Select) -> bool:
    """`FROM a JOIN b ON cond` (inner, the last join) -> `FROM a, b WHERE cond AND ...`."""
    joins = select.args.get("joins") or []
    if len(joins) != 1:
        return False
    join = joins[0]
    on = join.args.get("on")
    if on is None or join.args.get("side") or join.args.get("kind") not in (None, "", "INNER"):
        return False
    join.set("on", None)
    join.set("kind", None)
    where = select.args.get("where")
    parts = [on.copy()] + (_conjuncts(where.this) if where is not None else [])
    select.set("where", exp.Where(this=_and([p.copy() for p in parts])))
    return True


def equivalent_predicates(code: str, rng: random.Random) -> str:
    statements = parse(code)
    changed = False
    for statement in statements:
        for node in list(statement.find_all(exp.In, exp.EQ, exp.Between)):
            if isinstance(node, exp.EQ) and (
                node.find_ancestor(exp.Join) is not None  # join keys stay as they are
                or node.find_ancestor(exp.Where, exp.Having) is None  # SET a = 1 is no test
            ):
                continue
            replacement = _equivalent_in(node)
            if replacement is not None:
                node.replace(replacement)
                changed = True
        for select in list(statement.find_all(exp.Select)):
            if rng.random() < 0.5:
                changed = _comma_to_join(select) or _join_to_comma(select) or changed
            else:
                changed = _join_to_comma(select) or _comma_to_join(select) or changed
    if not changed:
        raise NotApplicable("no IN, =, BETWEEN or join to write another way")
    return render(statements)


# --- layout and comments -------------------------------------------------------------------


def layout(code: str, rng: random.Random) -> str:
    statements = parse(code)
    pretty = rng.random() < 0.5
    text = render(statements, pretty=pretty)
    if text.strip() == code.strip():
        text = render(statements, pretty=not pretty)
    return text


def comments_removed(code: str, rng: random.Random) -> str:
    if not _has_comments(code):
        raise NotApplicable("no comment to remove")
    return render(parse(code), comments=False)


def comment_above(code: str, text: str) -> str:
    """A `--` comment line above the code, the code itself unchanged."""
    lines = [f"-- {line}".rstrip() for line in text.splitlines()]
    return "\n".join(lines) + "\n" + code


RELATIONS: dict[str, Callable[[str, random.Random], str]] = {
    "alias-rename": alias_rename,
    "conjunct-reorder": conjunct_reorder,
    "layout": layout,
    "comments-removed": comments_removed,
    "misleading-names": misleading_names,
    "equivalent-predicates": equivalent_predicates,
}
