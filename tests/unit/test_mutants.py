"""The mutant generator: each kind of guard yields the expected mutant on a small case.

Parsing needs pglast (the verify extra); skipped without it.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pglast", reason="needs the verify extra (pglast)")

from secbench_tui.core.verify.data import Equivalent  # noqa: E402
from secbench_tui.core.verify.mutants import (  # noqa: E402
    Mutant,
    MutantKind,
    declaration_problems,
    declarations,
    mutants_of,
    normal_guard,
)


def _kinds(mutants: list[Mutant], kind: MutantKind) -> list[Mutant]:
    return [m for m in mutants if m.kind is kind]


SELECT = """-- a page of orders
SELECT o.id, o.total
FROM orders o
JOIN members m ON m.org_id = o.org_id AND m.revoked_at IS NULL
WHERE o.org_id = :org
  AND o.deleted_at IS NULL
  AND (m.expires_at IS NULL OR m.expires_at > now())
ORDER BY o.id
LIMIT LEAST(:limit, 100);
"""


def test_each_where_and_on_conjunct_is_deleted_once_with_its_line() -> None:
    found = _kinds(mutants_of(SELECT, "sql"), MutantKind.CONJUNCT)
    shown = {(m.line, m.description) for m in found}
    assert (4, "deleted `m.revoked_at IS NULL`") in shown
    assert (6, "deleted `o.deleted_at IS NULL`") in shown
    assert (5, "deleted `o.org_id = :org`") in shown
    deleted = next(m for m in found if "o.deleted_at" in m.description)
    assert "deleted_at" not in deleted.code
    assert ":org" in deleted.code and ":limit" in deleted.code  # placeholders survive deparse
    assert "m.revoked_at IS NULL" in deleted.code


def test_a_boundary_is_widened_and_a_limit_cap_dropped() -> None:
    found = mutants_of(SELECT, "sql")
    (wide,) = _kinds(found, MutantKind.BOUNDARY)
    assert wide.line == 7 and "m.expires_at >= now()" in wide.code
    (cap,) = _kinds(found, MutantKind.LIMIT_CAP)
    assert cap.line == 9 and "LIMIT :limit" in cap.code and "100" not in cap.code


def test_a_single_where_predicate_is_deleted() -> None:
    found = mutants_of("UPDATE orders SET total = 0 WHERE id = :id", "sql")
    (gone,) = _kinds(found, MutantKind.CONJUNCT)
    assert "WHERE" not in gone.code


PLPGSQL = """CREATE FUNCTION close_order(p_id int, p_role text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF p_role <> 'admin' THEN
        RAISE EXCEPTION 'not allowed';
    END IF;
    IF NOT FOUND THEN
        NULL;
    END IF;
    UPDATE orders SET closed = true WHERE id = p_id AND org_id = 1;
END;
$$;
SELECT close_order(:id, :role);
"""


def test_a_plpgsql_if_raise_block_is_deleted_and_inner_sql_mutated() -> None:
    found = mutants_of(PLPGSQL, "sql")
    (block,) = _kinds(found, MutantKind.RAISE_BLOCK)
    assert block.line == 4
    assert "RAISE" not in block.code and "IF NOT FOUND" in block.code
    assert "SELECT close_order(:id, :role)" in block.code
    inner = _kinds(found, MutantKind.CONJUNCT)
    assert any("org_id = 1" not in m.code and m.line == 10 for m in inner)


HANDLER = """@router.get("/orders/{order_id}")
def get_order(
    order_id: int,
    limit: int = Query(50, ge=1, le=100),
    current: User = Depends(require_roles("admin", "clerk")),
    db: Session = Depends(get_db),
):
    order = db.scalar(
        select(Order).where(Order.id == order_id, Order.org_id == current.org_id)
    )
    if order is None:
        raise HTTPException(404, "Order not found")
    if order.total > 1000:
        raise HTTPException(403, "too big")
    rows = db.scalars(select(Line).where(Line.order_id == order.id).limit(min(limit, 100)))
    return order
"""


def test_python_guards_each_yield_their_mutant() -> None:
    found = mutants_of(HANDLER, "python")
    guards = _kinds(found, MutantKind.HTTP_GUARD)
    assert [m.line for m in guards] == [11, 13]
    assert "Order not found" not in guards[0].code and "too big" in guards[0].code
    args = _kinds(found, MutantKind.FILTER_ARG)
    org = next(m for m in args if "Order.org_id" in m.description)
    assert org.line == 9 and ".where(Order.id == order_id)" in org.code
    whole = next(m for m in args if "Line.order_id" in m.description)
    assert "select(Line).limit(" in whole.code  # a one-argument .where() goes whole
    (role,) = _kinds(found, MutantKind.ROLE_DEPENDENCY)
    assert role.line == 5 and "Depends(get_current_user)" in role.code
    (wide,) = _kinds(found, MutantKind.BOUNDARY)
    assert wide.line == 13 and "order.total >= 1000" in wide.code
    caps = _kinds(found, MutantKind.LIMIT_CAP)
    assert {m.line for m in caps} == {4, 15}
    assert any("Query(50, ge=1)" in m.code for m in caps)
    assert any(".limit(limit)" in m.code for m in caps)
    for m in found:
        compile(m.code, "<mutant>", "exec")  # every Python mutant is still Python


def test_sql_inside_text_is_mutated_and_written_back_as_a_string() -> None:
    code = 'rows = db.execute(text("SELECT id FROM t WHERE org = :org AND live"), {"org": 1})\n'
    found = _kinds(mutants_of(code, "python"), MutantKind.CONJUNCT)
    assert len(found) == 2
    assert all(":org" in m.code or "live" in m.code for m in found)
    for m in found:
        compile(m.code, "<mutant>", "exec")


def test_code_that_does_not_parse_yields_no_mutant() -> None:
    assert mutants_of("SELEC nothing FROM", "sql") == []
    assert mutants_of("def broken(:\n", "python") == []


def test_each_mutant_names_its_guard_by_normalised_text() -> None:
    found = mutants_of(SELECT, "sql")
    guards = {(m.kind, m.guard) for m in found}
    assert (MutantKind.CONJUNCT, "o.org_id = :org") in guards
    assert (MutantKind.CONJUNCT, "m.expires_at IS NULL OR m.expires_at > now()") in guards
    assert (MutantKind.BOUNDARY, "m.expires_at > now()") in guards
    assert (MutantKind.LIMIT_CAP, "LEAST(:limit, 100)") in guards
    assert all(m.syntax == "sql" for m in found)
    python = mutants_of(HANDLER, "python")
    assert (MutantKind.FILTER_ARG, "Order.org_id == current.org_id") in {
        (m.kind, m.guard) for m in python
    }
    assert (MutantKind.LIMIT_CAP, "le=100") in {(m.kind, m.guard) for m in python}
    assert (MutantKind.ROLE_DEPENDENCY, "require_roles('admin', 'clerk')") in {
        (m.kind, m.guard) for m in python
    }
    assert normal_guard("o.org_id=:org", "sql") == "o.org_id = :org"
    assert normal_guard('require_roles( "admin","clerk" )', "python") == (
        "require_roles('admin', 'clerk')"
    )


def _declared(line: str) -> Equivalent:
    case_file, kind, rest = line.split(" ", 2)
    guard, _, places = rest.partition("|")
    return Equivalent(case_file, kind, guard, "no real flaw", int(places or 1))


def test_a_declaration_names_exactly_one_mutant_by_its_text_not_its_line() -> None:
    found = mutants_of(SELECT, "sql")
    text = [
        _declared("x.md conjunct O.ORG_ID   =  :org"),  # written another way: the same guard
        _declared("x.md boundary m.expires_at > now()"),
        _declared("x.md conjunct m.expires_at IS NULL OR..."),  # its beginning
        _declared("x.md conjunct o.archived"),  # no such guard
        _declared("x.md limit-cap o.org_id = :org"),  # the text of a guard of another kind
    ]
    got = declarations(text, found)
    assert {m.guard for m in found if m.code in got.named} == {
        "o.org_id = :org",
        "m.expires_at > now()",
        "m.expires_at IS NULL OR m.expires_at > now()",
    }
    assert [e.guard for e in got.unmatched] == ["o.archived", "o.org_id = :org"]
    problems = declaration_problems(got)
    assert any("o.archived" in p and "names no mutant" in p for p in problems)


TWICE = """UPDATE lines SET qty = :qty
 WHERE id = :id AND org_id = :org
   AND po_id IN (SELECT id FROM pos WHERE org_id = :org AND status = 'draft')
"""


def test_a_guard_standing_twice_is_ambiguous_unless_the_declaration_counts_its_places() -> None:
    found = mutants_of(TWICE, "sql")
    once = declarations([_declared("x.md conjunct org_id = :org")], found)
    assert not once.named
    ((declared, named),) = once.ambiguous
    assert sorted(m.line for m in named) == [2, 3]
    assert "names 2 mutants (lines 2, 3)" in declaration_problems(once)[0]
    assert "(2 places)" in declaration_problems(once)[0]
    both = declarations([_declared("x.md conjunct org_id = :org|2")], found)
    assert len(both.named) == 2 and not both.ambiguous
    three = declarations([_declared("x.md conjunct org_id = :org|3")], found)
    assert "not the 3 it says" in declaration_problems(three)[0]


DYNAMIC = """CREATE OR REPLACE FUNCTION po_export(p_org uuid, p_field text, p_from date)
RETURNS TABLE (id uuid) LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT po.id
           FROM purchase_orders po
          WHERE po.org_id = $1
            AND po.deleted_at IS NULL
            AND po.status <> ''void''
            AND po.%1$I >= $2
          ORDER BY po.%1$I', p_field)
    USING p_org, p_from;
END;
$$;
SELECT * FROM po_export(:org, 'created_at', :from);
"""


def test_sql_built_by_execute_format_is_mutated_inside_its_literal() -> None:
    import pglast

    found = _kinds(mutants_of(DYNAMIC, "sql"), MutantKind.CONJUNCT)
    by_guard = {m.guard: m for m in found}
    assert set(by_guard) == {
        "po.org_id = $1",
        "po.deleted_at IS NULL",
        "po.status <> 'void'",
        "po.%1$I >= $2",
    }
    assert [by_guard[g].line for g in ("po.org_id = $1", "po.deleted_at IS NULL")] == [7, 8]
    deleted = by_guard["po.deleted_at IS NULL"].code
    assert "deleted_at" not in deleted
    assert "po.%1$I >= $2" in deleted and "''void''" in deleted  # the literal, escaped again
    assert "SELECT * FROM po_export(:org, 'created_at', :from);" in deleted
    body = deleted.split("$$")[1]
    pglast.parse_plpgsql(deleted.split("SELECT * FROM po_export")[0])
    literal = body[body.index("'SELECT") : body.index(", p_field)")]
    value = literal[1:-1].replace("''", "'").replace("%1$I", "created_at")
    pglast.parse_sql(value)  # what EXECUTE would run still parses
