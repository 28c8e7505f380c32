"""`--batch` in the estimate (`--dry-run`, the app's setup): the batch price beside the live
one, from the catalog's batch variant of the model where it lists one, else at the documented
half."""

from __future__ import annotations

import pytest

from secbench_tui.core.models import Case, Message, SuiteKind
from secbench_tui.core.run.catalog import Catalog, ModelInfo
from secbench_tui.core.run.estimate import BATCH_DISCOUNT, estimate, estimate_lines
from secbench_tui.core.run.spec import RunSpec

CASES = [
    Case(
        kind=SuiteKind.MARKDOWN,
        app="a",
        case_id=f"c{i}.md",
        test_file=f"/s/c{i}.md",
        expected="good",
        code="x" * 400,
        messages=(Message(role="user", content="y" * 4_000),),
    )
    for i in range(10)
]


def spec(model: str, batch: str | None) -> RunSpec:
    return RunSpec(model=model, cases=CASES, suite_kind="markdown", suite_path="/s", batch=batch)


CATALOG = Catalog(
    [
        ModelInfo("v/plain", prompt_price=1.0, completion_price=4.0),
        ModelInfo("v/listed", prompt_price=1.0, completion_price=4.0),
        ModelInfo("v/listed:batch", prompt_price=0.4, completion_price=1.6),
    ],
    "network",
)


async def test_the_batch_price_stands_beside_the_live_one() -> None:
    est = await estimate([spec("v/plain", "openrouter")], 1024, CATALOG, None)
    (run,) = est.runs
    assert run.cost is not None and run.batch is not None
    assert run.batch.cost == pytest.approx(run.cost * BATCH_DISCOUNT)
    assert run.batch.source == "discount"
    lines = estimate_lines(est)
    assert "; in a batch $" in lines[0]
    assert lines[-1].startswith("--batch: ") and "against" in lines[-1]
    assert "live price at 50%" in lines[-1]


async def test_the_catalogs_batch_variant_is_its_price_where_it_lists_one() -> None:
    est = await estimate([spec("v/listed", "openrouter")], 1024, CATALOG, None)
    (run,) = est.runs
    assert run.cost is not None and run.batch is not None and run.batch.cost is not None
    assert run.batch.cost == pytest.approx(run.cost * 0.4)
    assert run.batch.source == "catalog" and "the catalog's batch price" in estimate_lines(est)[-1]


async def test_a_live_run_shows_no_batch_price() -> None:
    est = await estimate([spec("v/plain", None)], 1024, CATALOG, None)
    assert est.runs[0].batch is None and est.batched == []
    assert not any("batch" in line for line in estimate_lines(est))
