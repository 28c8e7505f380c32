"""The mutant generator: each kind of guard yields the expected mutant on a small case.

Parsing needs pglast (the verify extra); skipped without it.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pglast", reason="needs the verify extra (pglast)")

from secbench_tui.core.verify.mutants import Mutant, MutantKind, mutants_of  # noqa: E402


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
