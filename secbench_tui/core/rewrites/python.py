"""Python relations: meaning-preserving edits made on libcst's concrete syntax tree.

libcst keeps everything it is not asked to change (comments, quotes, line breaks), so each
variant differs from its original only by its relation. A handler's parameters are its HTTP
contract (path, query and body names) and are never renamed; neither are attributes, keyword
arguments or names the function does not assign itself.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from functools import lru_cache

import libcst as cst
from libcst.metadata import FunctionScope, MetadataWrapper, ScopeProvider

from secbench_tui.core.rewrites.sql import NotApplicable

NEUTRAL = ("value", "item", "found", "current_row", "record", "entry", "obj", "data_row")
MISLEADING_HANDLERS = (
    "secure_tenant_scoped_handler",
    "authorized_owner_only_view",
    "sanitized_access_checked",
)


@lru_cache(maxsize=512)
def _parsed(code: str) -> cst.Module:
    return cst.parse_module(code)


def _module(code: str) -> cst.Module:
    """The code's tree, parsed once for every relation that rewrites it: libcst's trees are
    immutable (a transformer returns a new one), so they can be shared."""
    try:
        return _parsed(code)
    except cst.ParserSyntaxError as exc:
        raise NotApplicable(f"libcst cannot parse it: {exc.message}") from exc


def comment_above(code: str, text: str) -> str:
    lines = [f"# {line}".rstrip() for line in text.splitlines()]
    return "\n".join(lines) + "\n" + code


@lru_cache(maxsize=512)
def _names_in(module: cst.Module) -> frozenset[str]:
    """Every name the module uses (cached per tree, which `_module` shares)."""
    found: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    module.visit(Collect())
    return frozenset(found)


class _RenameNodes(cst.CSTTransformer):
    def __init__(self, targets: dict[int, str]) -> None:
        self.targets = targets  # id(Name node) -> new name

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.targets.get(id(original_node))
        return updated_node.with_changes(value=new) if new else updated_node


def local_rename(code: str, rng: random.Random) -> str:
    module = _module(code)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    scopes = wrapper.resolve(ScopeProvider)
    taken = _names_in(module)
    pool = [n for n in NEUTRAL if n not in taken]
    rng.shuffle(pool)
    targets: dict[int, str] = {}
    seen: set[int] = set()
    for scope in {id(s): s for s in scopes.values() if isinstance(s, FunctionScope)}.values():
        if not isinstance(scope, FunctionScope):
            continue
        names = sorted({a.name for a in scope.assignments if a.scope is scope})
        for name in names:
            assignments = [a for a in scope.assignments[name] if a.scope is scope]
            nodes = [getattr(a, "node", None) for a in assignments]
            if any(not isinstance(n, cst.Name) for n in nodes):
                continue  # a parameter, an import or a nested def: part of a contract
            if name in taken and name in {a.name for s in [scope.parent] for a in s.assignments}:
                continue
            if not pool:
                break
            new = pool.pop()
            for assignment in assignments:
                for node in [assignment.node, *(r.node for r in assignment.references)]:  # type: ignore[attr-defined]
                    if isinstance(node, cst.Name) and id(node) not in seen:
                        targets[id(node)] = new
                        seen.add(id(node))
    if not targets:
        raise NotApplicable("no local variable to rename")
    return module.visit(_RenameNodes(targets)).code


class _Uncomment(cst.CSTTransformer):
    def __init__(self) -> None:
        self.changed = False

    def leave_EmptyLine(
        self, original_node: cst.EmptyLine, updated_node: cst.EmptyLine
    ) -> cst.EmptyLine | cst.RemovalSentinel:
        if updated_node.comment is not None:
            self.changed = True
            return cst.RemoveFromParent()
        return updated_node

    def leave_TrailingWhitespace(
        self, original_node: cst.TrailingWhitespace, updated_node: cst.TrailingWhitespace
    ) -> cst.TrailingWhitespace:
        if updated_node.comment is not None:
            self.changed = True
            return updated_node.with_changes(comment=None, whitespace=cst.SimpleWhitespace(""))
        return updated_node

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body = list(updated_node.body)
        first = body[0] if body else None
        if (
            isinstance(first, cst.SimpleStatementLine)
            and len(first.body) == 1
            and isinstance(first.body[0], cst.Expr)
            and isinstance(first.body[0].value, cst.SimpleString | cst.ConcatenatedString)
        ):
            self.changed = True
            rest = body[1:] or [cst.SimpleStatementLine(body=[cst.Pass()])]
            return updated_node.with_changes(body=rest)
        return updated_node


def comments_removed(code: str, rng: random.Random) -> str:
    module = _module(code)
    remover = _Uncomment()
    new = module.visit(remover)
    if not remover.changed:
        raise NotApplicable("no comment or docstring to remove")
    return new.code


class _Reindent(cst.CSTTransformer):
    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return updated_node.with_changes(indent=None)


def layout(code: str, rng: random.Random) -> str:
    """Another indentation width, and a blank line after every statement of a function."""
    module = _module(code)
    width = "  " if module.default_indent != "  " else "    "
    new = module.visit(_Reindent()).with_changes(default_indent=width)
    if rng.random() < 0.5:
        new = new.with_changes(
            header=[*new.header, cst.EmptyLine()], footer=[*new.footer, cst.EmptyLine()]
        )
    return new.code


class _RenameFunction(cst.CSTTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return (
            updated_node.with_changes(value=self.new)
            if updated_node.value == self.old
            else updated_node
        )


def misleading_function_name(code: str, rng: random.Random) -> str:
    module = _module(code)
    functions = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    if not functions:
        raise NotApplicable("no top-level function to rename")
    old = functions[0].name.value
    taken = _names_in(module)
    new = next((n for n in rng.sample(MISLEADING_HANDLERS, 3) if n not in taken), None)
    if new is None:
        raise NotApplicable("every misleading name is taken")
    return module.visit(_RenameFunction(old, new)).code


DEAD_HELPERS = (
    "def _page_size(value: int) -> int:\n    return max(1, min(value, 100))\n",
    "def _normalised(text: str) -> str:\n    return text.strip().lower()\n",
    "def _as_cents(amount: float) -> int:\n    return int(round(amount * 100))\n",
)


def dead_helper(code: str, rng: random.Random) -> str:
    module = _module(code)
    helper = cst.parse_statement(rng.choice(DEAD_HELPERS))
    assert isinstance(helper, cst.FunctionDef)
    if helper.name.value in _names_in(module):
        raise NotApplicable("the helper's name is taken")
    helper = helper.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    body: Sequence[cst.BaseStatement] = [*module.body, helper]
    if rng.random() < 0.5:
        first = module.body[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        body = [helper.with_changes(leading_lines=[]), first, *module.body[1:]]
    return module.with_changes(body=body).code


class _SplitWhere(cst.CSTTransformer):
    def __init__(self) -> None:
        self.changed = False

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        func = updated_node.func
        args = updated_node.args
        if not (isinstance(func, cst.Attribute) and func.attr.value in {"where", "filter"}):
            return updated_node
        if len(args) < 2 or any(a.keyword is not None or a.star for a in args):
            return updated_node
        self.changed = True
        call: cst.BaseExpression = func.value
        for arg in args:
            call = cst.Call(
                func=cst.Attribute(value=call, attr=cst.Name(func.attr.value)),
                args=[arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)],
            )
        return call


def where_split(code: str, rng: random.Random) -> str:
    module = _module(code)
    splitter = _SplitWhere()
    new = module.visit(splitter)
    if not splitter.changed:
        raise NotApplicable("no .where(a, b) with two conditions or more")
    return new.code


RELATIONS: dict[str, Callable[[str, random.Random], str]] = {
    "local-rename": local_rename,
    "layout": layout,
    "comments-removed": comments_removed,
    "misleading-function-name": misleading_function_name,
    "dead-helper": dead_helper,
    "where-split": where_split,
}
