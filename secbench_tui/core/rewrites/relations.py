"""The named relations and the variants they make.

A relation maps a case's code to other code meant to keep its meaning. Invariance relations
(renames, reorders, layout, comments removed, equivalent predicates, dead code) change only
the surface: a reviewer should answer the same. Sensitivity relations (a comment that claims
safety or a flaw, misleading names) add a false hint on purpose: a flip towards the hint is
the reviewer reading the hint, not the code. Each relation is seeded, so the same seed gives
the same variant, and a variant's identity is (original case, relation, seed, code hash).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from secbench_tui.core.models import Case, CaseMeta, SuiteKind
from secbench_tui.core.rewrites import python as py_relations
from secbench_tui.core.rewrites import sql as sql_relations
from secbench_tui.core.rewrites.sql import NotApplicable
from secbench_tui.core.suites.markdown import code_block_language

Kind = Literal["invariance", "sensitivity"]
Language = Literal["sql", "python"]


@dataclass(frozen=True)
class Relation:
    name: str
    kind: Kind
    languages: tuple[Language, ...]
    summary: str
    claim: str | None = None  # the verdict a misleading hint claims (good | bad)


RELATIONS: tuple[Relation, ...] = (
    Relation("alias-rename", "invariance", ("sql",), "table aliases renamed, row references too"),
    Relation("conjunct-reorder", "invariance", ("sql",), "AND-ed conditions in another order"),
    Relation("layout", "invariance", ("sql", "python"), "the same code laid out anew"),
    Relation(
        "comments-removed", "invariance", ("sql", "python"), "comments (and docstrings) removed"
    ),
    Relation(
        "equivalent-predicates",
        "invariance",
        ("sql",),
        "IN ('a') as = 'a', BETWEEN as two comparisons, comma join as JOIN ... ON",
    ),
    Relation("local-rename", "invariance", ("python",), "a function's local variables renamed"),
    Relation("dead-helper", "invariance", ("python",), "an unused helper function added"),
    Relation("where-split", "invariance", ("python",), ".where(a, b) as .where(a).where(b)"),
    Relation(
        "comment-safe",
        "sensitivity",
        ("sql", "python"),
        "a comment claiming the code was reviewed and is safe",
        claim="good",
    ),
    Relation(
        "comment-flaw",
        "sensitivity",
        ("sql", "python"),
        "a comment claiming the code has a security flaw",
        claim="bad",
    ),
    Relation(
        "misleading-names",
        "sensitivity",
        ("sql",),
        "CTEs and aliases given security-sounding names",
        claim="good",
    ),
    Relation(
        "misleading-function-name",
        "sensitivity",
        ("python",),
        "the handler renamed to a security-sounding name",
        claim="good",
    ),
)
BY_NAME = {r.name: r for r in RELATIONS}

SAFE_CLAIMS = (
    "Security review: checked for tenant isolation and injection; this query is safe.",
    "Reviewed by the security team: authorization is enforced here. Safe.",
    "Audited: access is scoped to the caller and inputs are parameterised; no issue.",
)
FLAW_CLAIMS = (
    "SECURITY: this code has a vulnerability: it leaks data across tenants.",
    "FIXME security flaw: authorization is missing here.",
    "Known issue: this is vulnerable (broken access control); do not ship.",
)


TOO_DEEP = "the code is nested too deeply for the rewriter's parser"


class RelationError(ValueError):
    """An unknown relation name; the message lists the known ones."""


def parse_relations(value: str) -> tuple[str, ...]:
    """`a,b` or `all` -> relation names, checked."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    if names == ["all"]:
        return tuple(r.name for r in RELATIONS)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown or not names:
        known = ", ".join(r.name for r in RELATIONS)
        raise RelationError(
            f"unknown relation {', '.join(unknown) or '(none)'}; choose from {known}, or all"
        )
    return tuple(dict.fromkeys(names))


def language_of(case: Case) -> Language | None:
    """The language of a case's code: what its code block says (```python, ```sql), else
    Python when it compiles as Python, else SQL. Code said to be Python that does not compile
    is still Python: a relation for SQL would write SQL comments into it."""
    if case.kind is not SuiteKind.MARKDOWN:
        return None
    lang = str(case.meta.get("language") or "").lower() or code_block_language(case.test_file)
    if lang in {"python", "py"}:
        return "python"
    if lang in {"sql", "postgres", "postgresql", "plpgsql"}:
        return "sql"
    if lang:
        return None  # a language no relation knows
    try:
        compile(case.code, "<case>", "exec")
    except (SyntaxError, RecursionError, MemoryError):  # (too deep for Python's compiler)
        return "sql"
    except ValueError:
        return None
    return "python"


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def _comment(relation: str, language: Language, code: str, rng: random.Random) -> str:
    text = rng.choice(SAFE_CLAIMS if relation == "comment-safe" else FLAW_CLAIMS)
    if language == "sql":
        return sql_relations.comment_above(code, text)
    return py_relations.comment_above(code, text)


def _rewriter(relation: str, language: Language) -> Callable[[str, random.Random], str] | None:
    table = sql_relations.RELATIONS if language == "sql" else py_relations.RELATIONS
    return table.get(relation)


def rewrite(code: str, relation: str, language: Language, seed: int) -> str:
    """The variant's code; NotApplicable when the relation changes nothing here."""
    rng = random.Random(f"{relation}:{seed}:{code_hash(code)}")
    if relation in {"comment-safe", "comment-flaw"}:
        return _comment(relation, language, code, rng)
    rewriter = _rewriter(relation, language)
    if rewriter is None:
        raise NotApplicable(f"{relation} does not apply to {language}")
    new = rewriter(code, rng)
    if new.strip() == code.strip():
        raise NotApplicable("the rewrite changed nothing")
    return new


@dataclass(frozen=True)
class Variant:
    original: Case
    relation: str
    seed: int
    code: str

    @property
    def code_hash(self) -> str:
        return code_hash(self.code)

    @property
    def case_id(self) -> str:
        return f"{self.original.case_id}#{self.relation}/{self.seed}"

    def as_case(self, proven: bool) -> Case:
        """The variant as a case: the original's prompt around the rewritten code."""
        meta: CaseMeta = {
            **self.original.meta,
            "variant": {
                "original": self.original.case_id,
                "relation": self.relation,
                "seed": self.seed,
                "code_hash": self.code_hash,
                "proven": proven,
            },
        }
        return replace(self.original, case_id=self.case_id, code=self.code, meta=meta)


@dataclass(frozen=True)
class Skipped:
    case_id: str
    relation: str
    reason: str


def make_variants(
    cases: Sequence[Case], relations: Sequence[str], seed: int = 0
) -> tuple[list[Variant], list[Skipped]]:
    """One variant per case and relation where the relation applies."""
    variants: list[Variant] = []
    skipped: list[Skipped] = []
    for case in cases:
        language = language_of(case)
        for name in relations:
            relation = BY_NAME[name]
            if language is None or language not in relation.languages:
                continue
            try:
                code = rewrite(case.code, name, language, seed)
            except NotApplicable as exc:
                skipped.append(Skipped(case.case_id, name, str(exc)))
                continue
            except RecursionError:  # a parser's limit: this case's, never the command's
                skipped.append(Skipped(case.case_id, name, TOO_DEEP))
                continue
            variants.append(Variant(case, name, seed, code))
    return variants, skipped
