"""Witnesses of `--verify` on the embedded PostgreSQL: a proven bad case shows the parameter
set, the rule and the rows on its line, and a bad case proven only by another rule than the
one it is written to break is reported.

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


def test_a_bad_case_proven_by_another_rule_is_reported_with_its_witness(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    app = suite / "shop"
    (app / "list-orders-02-bad.md").write_text(OWN_RULE, encoding="utf-8")
    (app / "list-orders-03-bad.md").write_text(OTHER_RULE, encoding="utf-8")
    (app / "list-orders-04-bad.md").write_text(RULE_SECTION, encoding="utf-8")
    assert "good" in GOOD

    done = _run(suite, "--verify")

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
