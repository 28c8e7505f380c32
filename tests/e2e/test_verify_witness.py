"""Witnesses of `--verify` on PostgreSQL (the tests' pgserver, by `--pg-url`): a proven bad
case shows the parameter set, the rule and the rows on its line, and a bad case proven only by
another rule than the one it is written to break is reported.

Needs the verify extra (pgserver); skipped without it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tests.e2e.test_verify_mutants import GOOD, _run, _suite

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")

OWN_RULE = """# Description
Breaks rule 2 (soft deletes): deleted orders are listed.

# Code
```sql
SELECT id, total FROM orders WHERE org_id = :org ORDER BY id
```

# Expected
bad
"""

# Written to break rule 2, but what it really breaks is rule 1 (the org filter is gone and
# the deleted-order filter is there): proven, by the wrong rule.
OTHER_RULE = """# Description
Breaks rule 2 (soft deletes): deleted orders are listed.

# Code
```sql
SELECT id, total FROM orders WHERE deleted_at IS NULL ORDER BY id
```

# Expected
bad
"""

RULE_SECTION = OTHER_RULE.replace("# Expected", "# Rule\nRule 1: tenant isolation.\n\n# Expected")


def test_a_bad_case_proven_by_another_rule_is_reported_with_its_witness(
    tmp_path: Path, pg_url: str
) -> None:
    suite = _suite(tmp_path)
    app = suite / "shop"
    (app / "list-orders-02-bad.md").write_text(OWN_RULE, encoding="utf-8")
    (app / "list-orders-03-bad.md").write_text(OTHER_RULE, encoding="utf-8")
    (app / "list-orders-04-bad.md").write_text(RULE_SECTION, encoding="utf-8")
    assert "good" in GOOD

    done = _run(suite, "--verify", "--pg-url", pg_url)

    out = done.stdout
    lines = {line.split()[1]: line for line in out.splitlines() if line.startswith("proven")}
    own = lines["shop/list-orders-02-bad.md"]
    assert 'set 1 {"org": 1}: rule 2:' in own and '"id": 2' in own, out  # set, rule, row
    assert "another rule" not in own
    other = lines["shop/list-orders-03-bad.md"]
    assert "[by another rule than its rule 2]" in other and "rule 1:" in other, out
    assert '"id": 3' in other  # org 2's order, returned to org 1
    assert "another rule" not in lines["shop/list-orders-04-bad.md"]  # its # Rule section: 1
    note = next(line for line in out.splitlines() if line.startswith("note:"))
    assert "1 bad cases" in note and "shop/list-orders-03-bad.md (rule 2)" in note


def test_rows_are_identified_by_the_tables_keys_not_the_column_names(
    tmp_path: Path, pg_url: str
) -> None:
    """The issue's two cases: a good case that renames `id` stays proven, and a bad case whose
    flaw was fixed stays unproven when it also renames `id` (it used to stay 'proven bad')."""
    from secbench_tui.config import bundled_cases_dir

    source = bundled_cases_dir() / "warehouse-management-system"
    app = tmp_path / "suite" / "warehouse-management-system"
    (app / "verify").mkdir(parents=True)
    (app / "SPEC.md").write_text((source / "SPEC.md").read_text(encoding="utf-8"), encoding="utf-8")
    for name in ("fixtures.sql", "get-item.md"):
        text = (source / "verify" / name).read_text(encoding="utf-8")
        (app / "verify" / name).write_text(text, encoding="utf-8")
    good = (source / "get-item-01-good.md").read_text(encoding="utf-8")
    renamed = good.replace("SELECT i.id, i.sku", "SELECT i.id AS item_id, i.sku")
    assert renamed != good
    (app / "get-item-01-good.md").write_text(renamed, encoding="utf-8")
    bad = (source / "get-item-03-bad.md").read_text(encoding="utf-8")
    fixed = bad.replace("SELECT i.id, i.sku", "SELECT i.id AS item_id, i.sku").replace(
        "WHERE i.id = :item_id", "WHERE i.id = :item_id AND i.company_id = :current_company_id"
    )
    assert "AS item_id" in fixed and "i.company_id = :current_company_id" in fixed
    (app / "get-item-03-bad.md").write_text(fixed, encoding="utf-8")

    done = _run(app.parent, "--verify", "--pg-url", pg_url)

    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "proven          warehouse-management-system/get-item-01-good.md (good)" in out
    assert (
        "FAILED          warehouse-management-system/get-item-03-bad.md (bad): labelled bad but"
        " keeps the property" in out
    ), out
