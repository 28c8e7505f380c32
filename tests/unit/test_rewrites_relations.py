"""The relations themselves, without a database: each changes the code it should, keeps the
SPEC's bound parameters, renames row references with their alias, leaves plpgsql alone, and is
reproducible from its seed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.rewrites import python as py
from secbench_tui.core.rewrites import sql
from secbench_tui.core.rewrites.relations import (
    RELATIONS,
    RelationError,
    language_of,
    make_variants,
    parse_relations,
    rewrite,
)
from secbench_tui.core.rewrites.sql import NotApplicable
from secbench_tui.core.suites.markdown import load_markdown_suite

ROW_REFERENCE = """
SELECT to_jsonb(u) - 'password_hash' AS profile, u.id
FROM users u, orgs o
WHERE u.org_id = :current_org_id AND o.id = u.org_id AND u.status IN ('active')
  AND u.created_at BETWEEN :since AND :until;
"""

HANDLER = '''
@router.get("/patients/{patient_id}")
def get_patient(patient_id: int, db: Session = Depends(get_db)):
    """Fetch one patient."""
    # scoped to the clinic
    found = select(Patient).where(Patient.id == patient_id, Patient.deleted_at.is_(None))
    patient = db.scalar(found)
    return patient
'''


def _placeholders(code: str) -> set[str]:
    return {
        p.name
        for s in sqlglot.parse(code, dialect=sql._Dialect)
        for p in s.find_all(exp.Placeholder)
    }


def test_every_relation_is_named_once_and_all_expands() -> None:
    names = [r.name for r in RELATIONS]
    assert len(names) == len(set(names))
    assert parse_relations("all") == tuple(names)
    assert parse_relations("layout,layout") == ("layout",)
    with pytest.raises(RelationError, match="unknown relation nope"):
        parse_relations("layout,nope")


def test_alias_rename_renames_row_references_and_keeps_parameters() -> None:
    new = sql.alias_rename(ROW_REFERENCE, random.Random(3))
    tree = sqlglot.parse_one(new, dialect=sql._Dialect)
    aliases = {a.name for a in tree.find_all(exp.TableAlias)}
    assert aliases and not aliases & {"u", "o"}
    row_refs = [
        c.name
        for c in tree.find_all(exp.Column)
        if c.args.get("table") is None and c.name in aliases
    ]
    assert row_refs, "to_jsonb(u) must follow its alias"
    assert _placeholders(new) == {"current_org_id", "since", "until"}
    assert ":current_org_id" in new


def test_equivalent_predicates_rewrites_in_between_and_joins() -> None:
    new = sql.equivalent_predicates(ROW_REFERENCE, random.Random(0))
    tree = sqlglot.parse_one(new, dialect=sql._Dialect)
    assert not list(tree.find_all(exp.Between))
    assert any(
        isinstance(e, exp.EQ) and e.expression.name == "active" for e in tree.find_all(exp.EQ)
    )
    assert tree.args["joins"][0].args.get("on") is not None, "comma join becomes JOIN ... ON"
    assert _placeholders(new) == {"current_org_id", "since", "until"}


def test_between_symmetric_is_left_as_it_is() -> None:
    """`x BETWEEN SYMMETRIC :lo AND :hi` holds whichever bound is the lower; two comparisons
    would not (they are false when :lo > :hi): the relation leaves it alone."""
    code = "SELECT id FROM t WHERE x BETWEEN SYMMETRIC :lo AND :hi AND y BETWEEN 1 AND 2;"
    new = sql.equivalent_predicates(code, random.Random(0))
    tree = sqlglot.parse_one(new, dialect=sql._Dialect)
    (kept,) = tree.find_all(exp.Between)
    assert kept.args.get("symmetric") and kept.this.name == "x"
    with pytest.raises(sql.NotApplicable):
        sql.equivalent_predicates(
            "SELECT id FROM t WHERE x BETWEEN SYMMETRIC 1 AND 2;", random.Random(0)
        )


def test_set_clauses_are_not_predicates() -> None:
    update = "UPDATE t SET status = 'x' WHERE id = :id AND kind = 'a';"
    new = sql.equivalent_predicates(update, random.Random(0))
    assert "SET status = 'x'" in new and "kind IN ('a')" in new


def test_conjunct_reorder_changes_the_order_only() -> None:
    new = sql.conjunct_reorder(ROW_REFERENCE, random.Random(1))
    before = sqlglot.parse_one(ROW_REFERENCE, dialect=sql._Dialect).args["where"].this
    after = sqlglot.parse_one(new, dialect=sql._Dialect).args["where"].this
    assert sorted(p.sql() for p in sql._conjuncts(before)) == sorted(
        p.sql() for p in sql._conjuncts(after)
    )
    assert [p.sql() for p in sql._conjuncts(before)] != [p.sql() for p in sql._conjuncts(after)]


def test_plpgsql_bodies_are_left_alone() -> None:
    function = (
        "CREATE FUNCTION f(p int) RETURNS int LANGUAGE plpgsql AS $$\nBEGIN RETURN p; END;\n$$;"
    )
    for name in ("alias-rename", "layout", "equivalent-predicates", "conjunct-reorder"):
        with pytest.raises(NotApplicable, match="plpgsql"):
            rewrite(function, name, "sql", 0)
    commented = rewrite(function, "comment-safe", "sql", 0)
    assert commented.endswith(function) and commented.startswith("-- ")


def test_python_relations() -> None:
    rng = random.Random(0)
    renamed = py.local_rename(HANDLER, rng)
    assert "patient_id: int" in renamed and "patient =" not in renamed and "found" not in renamed
    split = py.where_split(HANDLER, rng)
    assert ".where(Patient.id == patient_id).where(Patient.deleted_at.is_(None))" in split
    bare = py.comments_removed(HANDLER, rng)
    assert "#" not in bare and '"""' not in bare
    named = py.misleading_function_name(HANDLER, rng)
    assert "def get_patient" not in named
    assert "def _" in py.dead_helper(HANDLER, rng)
    assert py.layout(HANDLER, rng) != HANDLER
    flaw = rewrite(HANDLER, "comment-flaw", "python", 0)
    assert flaw.startswith("# ") and flaw.endswith(HANDLER)
    for relation in py.RELATIONS.values():
        compile(relation(HANDLER, random.Random(5)), "<variant>", "exec")


def test_python_that_does_not_compile_is_still_python(tmp_path: Path) -> None:
    """Issue 30, item 8: a handler said to be Python (```python) that does not compile was
    taken for SQL, and got SQL comments written into it."""
    app = tmp_path / "suite" / "shop"
    app.mkdir(parents=True)
    (app / "SPEC.md").write_text("# Prompt\nA shop.\n", encoding="utf-8")
    broken = "@router.get('/orders')\ndef orders(:\n    return []\n"
    (app / "orders-01-good.md").write_text(
        f"# Code\n```python\n{broken}```\n\n# Expected\ngood\n", encoding="utf-8"
    )
    (case,) = load_markdown_suite(tmp_path / "suite").cases

    variants, _ = make_variants([case], ["comment-safe", "comment-flaw", "layout"], 0)

    assert language_of(case) == "python"
    assert variants, "the comment relations apply to Python too"
    for variant in variants:
        assert not variant.code.startswith("--"), variant.code
        assert variant.code.startswith("# ") and variant.code.endswith(case.code)


@pytest.mark.long
def test_variants_of_the_bundled_suite_are_seeded_and_keep_parameters() -> None:
    suite = load_markdown_suite(bundled_cases_dir(), ["purchase-order", "clinic-portal-api"])
    names = [r.name for r in RELATIONS]
    first, _ = make_variants(suite.cases, names, 7)
    again, _ = make_variants(suite.cases, names, 7)
    other, _ = make_variants(suite.cases, names, 8)
    assert [v.code for v in first] == [v.code for v in again]
    assert [v.code for v in first] != [v.code for v in other]
    assert {v.relation for v in first} == set(names)
    for variant in first:
        if language_of(variant.original) == "sql" and variant.relation not in {
            "comment-safe",
            "comment-flaw",
        }:
            assert _placeholders(variant.code) == _placeholders(variant.original.code)
        assert variant.code != variant.original.code
