"""`secbench-tui --verify --mutants` on PostgreSQL (the tests' pgserver, by `--pg-url`): a
small suite whose data misses one guard; the surviving mutant is listed with its case and
line, a declared equivalent is not counted, and `--lint` lists the declaration.

Needs the verify extra (pgserver, pglast); skipped without it.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tests.e2e.harness import cli_env

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")
pytest.importorskip("pglast", reason="needs the verify extra (pglast)")

FIXTURES = """
CREATE TABLE orders (id int PRIMARY KEY, org_id int NOT NULL, total int NOT NULL,
                     deleted_at timestamptz, archived boolean NOT NULL DEFAULT false);
INSERT INTO orders VALUES (1, 1, 10, NULL, false), (2, 1, 20, now(), false),
                          (3, 2, 30, NULL, false);
"""

# The data has a deleted order (2) and another org's order (3), but no archived order: the
# `NOT archived` guard is never exercised, so its mutant survives.
SCENARIO = """# Description
Rule 1: orders of the caller's org only. Rule 2: no deleted order.

# Parameters
{"org": 1}
{"org": 2}

# Property
```sql
SELECT r.row, 'Rule 1' AS rule FROM result r JOIN orders o ON o.id = (r.row->>'id')::int
 WHERE o.org_id <> :org
UNION ALL
SELECT r.row, 'Rule 2' FROM result r JOIN orders o ON o.id = (r.row->>'id')::int
 WHERE o.deleted_at IS NOT NULL
```

# Equivalent mutants
- list-orders-01-good.md:4 boundary: totals are not a security rule
"""

GOOD = """# Description
Lists the org's live orders.

# Code
```sql
SELECT id, total
FROM orders
WHERE org_id = :org
  AND total > 0
  AND deleted_at IS NULL
  AND NOT archived
ORDER BY id
```

# Expected
good
"""


def _suite(root: Path) -> Path:
    app = root / "suite" / "shop"
    (app / "verify").mkdir(parents=True)
    (app / "SPEC.md").write_text("# Prompt\nOrders belong to an org.\n", encoding="utf-8")
    (app / "verify" / "fixtures.sql").write_text(FIXTURES, encoding="utf-8")
    (app / "verify" / "list-orders.md").write_text(SCENARIO, encoding="utf-8")
    (app / "list-orders-01-good.md").write_text(GOOD, encoding="utf-8")
    return app.parent


def _run(suite: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secbench_tui", *flags, "--cases", str(suite)],
        cwd=suite.parent,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.long
def test_mutants_report_the_share_caught_and_list_the_survivor_with_its_line(
    tmp_path: Path, pg_url: str
) -> None:
    suite = _suite(tmp_path)

    done = _run(suite, "--verify", "--mutants", "--pg-url", pg_url)

    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    # 4 mutants: org_id, total > 0 (boundary, declared equivalent), total > 0 (conjunct),
    # deleted_at, archived. Caught: org_id, deleted_at. Survivors: total > 0 and archived.
    survivors = [line for line in out.splitlines() if line.startswith("survived")]
    assert any("shop/list-orders-01-good.md:11 conjunct" in s for s in survivors), out
    assert any("`NOT archived`" in s for s in survivors), out
    assert any("shop/list-orders-01-good.md:9 conjunct" in s for s in survivors), out
    assert not any("boundary" in s for s in survivors), out  # declared equivalent
    assert "shop: 2 of 4 real-flaw mutants caught, 50% (1 equivalent)" in out
    assert "  list-orders: 2 of 4 real-flaw mutants caught, 50% (1 equivalent)" in out

    linted = _run(suite, "--lint")
    assert "list-orders-01-good.md:4 boundary: totals are not a security rule" in linted.stdout
