"""`secbench-tui --verify --mutants` on PostgreSQL (the tests' pgserver, by `--pg-url`): a
small suite whose data misses one guard; the surviving mutant is listed with its case and
line, a declared equivalent is not counted (and said beside the score), the rewrites gate is
fed the guard deletions and its strength printed, and `--lint` lists the declaration, and
fails one that is stale, ambiguous or outlived its case.

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
- list-orders-01-good.md boundary `total > 0`: totals are not a security rule
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
    beside = "(1 declared equivalent; without declarations 2 of 5, 40%)"
    assert f"shop: 2 of 4 real-flaw mutants caught, 50% {beside}" in out
    assert f"  list-orders: 2 of 4 real-flaw mutants caught, 50% {beside}" in out
    # the gate, fed the 4 conjunct deletions: it refuses those whose rows differ on the
    # fixtures (org_id, deleted_at), and takes `total > 0` and `NOT archived` for equivalent
    assert "shop: 2 of 4 guard deletions refused, 50%; at least 95% on 0 of 1 scenarios" in out
    assert "  weak list-orders: 2 of 4 guard deletions refused, 50%" in out

    linted = _run(suite, "--lint")
    assert "list-orders-01-good.md boundary `total > 0`: totals are not a security rule" in (
        linted.stdout
    )


@pytest.mark.parametrize(
    ("declaration", "why"),
    [
        ("list-orders-01-good.md conjunct `total > 1`", "names no mutant"),
        ("list-orders-01-good.md boundary `org_id = :org`", "names no mutant"),  # no such kind
        ("list-orders-01-good.md conjunct `...`", "names 4 mutants"),
        ("list-orders-09-good.md conjunct `total > 0`", "outlived its case"),
    ],
)
def test_lint_fails_a_declaration_that_is_stale_ambiguous_or_outlived_its_case(
    tmp_path: Path, declaration: str, why: str
) -> None:
    suite = _suite(tmp_path)
    scenario = suite / "shop" / "verify" / "list-orders.md"
    text = scenario.read_text(encoding="utf-8")
    scenario.write_text(text + f"- {declaration}: said to be harmless\n", encoding="utf-8")

    linted = _run(suite, "--lint")

    assert linted.returncode != 0, linted.stdout
    assert why in linted.stdout, linted.stdout


@pytest.mark.long
def test_rewrites_of_a_scenario_where_the_gate_is_weak_go_unproven(
    tmp_path: Path, pg_url: str
) -> None:
    suite = _suite(tmp_path)

    done = _run(
        suite,
        "--no-ui",
        "--model",
        "baseline/always-bad",
        "--rewrites",
        "conjunct-reorder",
        "--dry-run",
        "--db",
        str(tmp_path / "results.db"),
        "--pg-url",
        pg_url,
    )

    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    # the gate takes 2 of the scenario's 4 guard deletions for equivalent: it proves nothing
    # there, so the reordered case is sent unproven, and said so
    assert "0 proven equivalent" in said and "1 sent unproven" in said, said
    assert "list-orders (2 of 4 guard deletions refused, 50%)" in said, said
