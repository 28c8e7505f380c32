"""The setup screen's verify: ctrl+v proves the selected apps' labels, one row per case.

Needs the verify extra (pgserver); skipped without it."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable

from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens.confirm import ConfirmScreen
from secbench_tui.tui.screens.setup import SetupScreen
from secbench_tui.tui.screens.verify import ProofScreen, VerifyScreen
from tests.tui.conftest import SIZE, settle, wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")
pytest.importorskip("psycopg", reason="needs the verify extra (psycopg)")

FIXTURES = "CREATE TABLE orders (id int PRIMARY KEY, org_id int NOT NULL);\n" + (
    "INSERT INTO orders VALUES (1, 1), (2, 1), (3, 2);\n"
)
SCENARIO = """# Parameters
{"id": 1, "org": 1}
{"id": 3, "org": 1}

# Property
```sql
SELECT r.row FROM result r JOIN orders o ON o.id = (r.row->>'id')::int WHERE o.org_id <> :org
```
"""


def _case(path: Path, where: str, expected: str) -> None:
    code = f"SELECT id FROM orders WHERE {where}"
    path.write_text(f"# Code\n```sql\n{code}\n```\n\n# Expected\n{expected}\n", encoding="utf-8")


def make_suite(root: Path) -> Path:
    app = root / "shop"
    (app / "verify").mkdir(parents=True)
    (app / "SPEC.md").write_text("# Prompt\nOrders belong to an org.\n", encoding="utf-8")
    (app / "verify" / "fixtures.sql").write_text(FIXTURES, encoding="utf-8")
    (app / "verify" / "get-order.md").write_text(SCENARIO, encoding="utf-8")
    _case(app / "get-order-01-good.md", "id = :id AND org_id = :org", "good")
    _case(app / "get-order-02-bad.md", "id = :id", "bad")
    _case(app / "get-order-03-bad.md", "org_id = :org AND id = :id", "bad")  # mislabelled
    return root


async def test_ctrl_v_on_setup_verifies_the_selected_suite_case_by_case(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    suite = make_suite(tmp_path / "verified")
    app = make_app(make_settings(cases=suite), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SetupScreen)
        await pilot.press("ctrl+v")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)  # not the bundled suite: asked first
        assert "executes this suite's SQL" in str(
            app.screen.query_one("#confirm-question").render()
        )
        await pilot.press("y")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, VerifyScreen)
        await wait_until(pilot, lambda: screen.report is not None, limit=6000)
        table = screen.query_one(DataTable)
        rows = {
            str(table.get_row_at(i)[1]): str(table.get_row_at(i)[0]) for i in range(table.row_count)
        }
        assert rows == {
            "shop/get-order-01-good.md": "proven",
            "shop/get-order-02-bad.md": "proven",
            "shop/get-order-03-bad.md": "failed",
        }
        status = str(screen.query_one("#verify-status").render())
        assert "PostgreSQL 16" in status and "1 failed" in status and "FAIL" in status
        bad = next(
            i for i in range(table.row_count) if str(table.get_row_at(i)[1]).endswith("02-bad.md")
        )
        assert '{"id": 3, "org": 1}' in str(table.get_row_at(bad)[3])  # the witness, on one line
        table.move_cursor(row=bad)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ProofScreen)  # the row opens to its proof
        shown = str(app.screen.query_one("#proof-text").render())
        assert "parameter set 2" in shown and '"org_id": 2' not in shown
        assert '{"row": {"id": 3}}' in shown  # the row that broke the property
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, SetupScreen)


async def test_ctrl_v_on_a_suite_not_bundled_runs_nothing_unless_confirmed(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    suite = make_suite(tmp_path / "declined")
    app = make_app(make_settings(cases=suite), offline_catalog=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+v")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, SetupScreen)
        assert not any(isinstance(s, VerifyScreen) for s in app.screen_stack)
