"""A server's usage numbers are believed only within bounds; others are unknown, with a note."""

from __future__ import annotations

import json
import math

import httpx
import pytest

from secbench_tui.core import believable
from secbench_tui.core.usage import Usage
from tests.unit.test_client import CASE, OK_BODY, provider_for


@pytest.mark.parametrize(
    ("usage", "prompt", "completion", "cost", "noted"),
    [
        ({"prompt_tokens": 120, "completion_tokens": 30, "cost": 0.00042}, 120, 30, 0.00042, []),
        ({"prompt_tokens": 0, "completion_tokens": 0, "cost": 0}, 0, 0, 0.0, []),
        ({}, None, None, None, []),  # nothing reported: unknown, nothing to note
        ({"cost": -4_000_000_000.0}, None, None, None, ["cost"]),
        ({"cost": math.nan}, None, None, None, ["cost"]),
        ({"cost": math.inf}, None, None, None, ["cost"]),
        ({"cost": 1000.01}, None, None, None, ["cost"]),
        ({"cost": "0.001"}, None, None, None, ["cost"]),
        ({"cost": True}, None, None, None, ["cost"]),
        ({"prompt_tokens": -1, "completion_tokens": 10**9 + 1}, None, None, None,
         ["prompt_tokens", "completion_tokens"]),
        ({"prompt_tokens": 12.5, "completion_tokens": "30"}, None, None, None,
         ["prompt_tokens", "completion_tokens"]),
    ],
)  # fmt: skip
def test_usage_keeps_believable_numbers_and_notes_the_rest(
    usage: dict[str, object],
    prompt: int | None,
    completion: int | None,
    cost: float | None,
    noted: list[str],
) -> None:
    got = Usage.of({"usage": usage})
    assert (got.prompt_tokens, got.completion_tokens, got.cost) == (prompt, completion, cost)
    assert [note.split()[0] for note in got.notes] == [f"usage.{name}" for name in noted]
    assert all("not believable" in note for note in got.notes)


def test_the_bounds_are_documented_figures() -> None:
    assert believable.cost(believable.MAX_COST_PER_REQUEST) == 1000.0
    assert believable.tokens(believable.MAX_TOKENS) == 10**9
    assert believable.tokens(believable.MAX_TOKENS + 1) is None


def test_a_note_quotes_a_long_value_shortly() -> None:
    (note,) = Usage.of({"usage": {"cost": "x" * 500}}).notes
    assert len(note) < 120


async def test_a_reply_with_a_negative_cost_is_kept_with_the_cost_unknown_and_a_note() -> None:
    body = json.loads(json.dumps(OK_BODY))
    body["usage"]["cost"] = -4_000_000_000.0
    retried = json.loads(json.dumps(OK_BODY))
    retried["choices"][0]["message"]["content"] = ""  # empty: retried, its usage still counts
    retried["usage"]["cost"] = float("inf")
    provider, _, _ = provider_for(
        [httpx.Response(200, text=json.dumps(retried)), httpx.Response(200, text=json.dumps(body))]
    )
    completion = await provider.complete(CASE)
    assert completion.text and completion.error is None
    assert completion.cost is None
    assert completion.prompt_tokens == 240  # both attempts' believable counts
    assert completion.notes is not None
    assert "usage.cost inf" in completion.notes and "usage.cost -4000000000.0" in completion.notes
