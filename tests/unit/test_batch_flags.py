"""`--batch` refused where it cannot work, before anything is sent, naming the model and the
way out (issue 35): structured outputs or reasoning with Anthropic's Message Batches,
`--max-cost`, baselines alone, and its companion flags without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from secbench_tui.config import Settings
from secbench_tui.core.run.catalog import Catalog
from secbench_tui.errors import UsageError
from secbench_tui.planning.plan import plan

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "suite"
ANTHROPIC = "https://api.anthropic.com/v1"


def planned(**fields: object) -> object:
    settings = Settings(cases=FIXTURE, **fields)  # type: ignore[arg-type]
    return plan(settings, Catalog([], "none"))


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"base_url": ANTHROPIC}, "--response-format json_object"),
        ({"base_url": ANTHROPIC, "request_style": "security-bench"}, "security-bench"),
        (
            {"base_url": ANTHROPIC, "response_format": "json_object", "reasoning_effort": "low"},
            "drop --reasoning-effort",
        ),
        ({"max_cost": 1.0}, "--dry-run"),
    ],
)
def test_what_a_batch_cannot_carry_is_refused_with_the_way_out(
    fields: dict[str, object], words: str
) -> None:
    with pytest.raises(UsageError) as refused:
        planned(model="claude-3-5-haiku-latest", batch=True, **fields)
    assert words in str(refused.value)
    if "base_url" in fields:
        assert "claude-3-5-haiku-latest" in str(refused.value)
        assert "without --batch" in str(refused.value)


def test_anthropic_batches_take_json_object() -> None:
    made = planned(
        model="claude-3-5-haiku-latest",
        batch=True,
        base_url=ANTHROPIC,
        response_format="json_object",
    )
    assert made.cells[0].spec.batch == "anthropic"  # type: ignore[attr-defined]


def test_baselines_alone_have_no_batch_api_but_answer_offline_beside_a_model() -> None:
    with pytest.raises(UsageError, match="baselines answer offline"):
        planned(model="baseline/random", batch=True)
    made = planned(models=["vendor/m", "baseline/random"], batch=True, base_url=ANTHROPIC,
                   response_format="none")  # fmt: skip
    assert [c.spec.batch for c in made.cells] == ["anthropic", None]  # type: ignore[attr-defined]


@pytest.mark.parametrize("fields", [{"batch_api": "openai"}, {"batch_poll": 5.0}])
def test_its_companions_without_batch_are_a_mistake(fields: dict[str, object]) -> None:
    with pytest.raises(UsageError, match="applies to runs with --batch"):
        planned(model="vendor/m", **fields)


def test_batch_with_worker_is_refused_rather_than_asked_live() -> None:
    # workers ask a shared run's cases live, from its queue: --batch would be ignored
    with pytest.raises(UsageError, match="--batch cannot go with --worker") as refused:
        planned(model="vendor/m", batch=True, worker=True, db="postgresql://u@127.0.0.1/team")
    assert "drop --worker" in str(refused.value) and "drop --batch" in str(refused.value)
