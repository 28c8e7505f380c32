"""The retry policy on its own: delays, limits, the circuit breaker, and deep bodies."""

from __future__ import annotations

import json
import random

import pytest

from secbench_tui.core.models import Completion
from secbench_tui.core.run.providers import shallow_json
from secbench_tui.core.run.providers.base import RetryNotice
from secbench_tui.core.run.providers.retry import (
    Breaker,
    Failure,
    FailureKind,
    RetryHooks,
    RetryPolicy,
    Unreachable,
    one_line,
    run_attempts,
)


def failure(kind: FailureKind, retry_after: float | None = None) -> Failure:
    return Failure("x", kind, retry_after=retry_after)


def test_the_policy_honours_retry_after_caps_it_and_gives_up() -> None:
    policy = RetryPolicy(max_retries=2, retry_after_max=10.0, rng=random.Random(1))
    assert policy.delay(1, failure(FailureKind.RATE_LIMITED, 3.0)) == 3.0
    assert policy.delay(1, failure(FailureKind.TRANSIENT, 999.0)) == 10.0
    assert policy.delay(1, failure(FailureKind.FINAL)) is None
    assert policy.delay(3, failure(FailureKind.TRANSIENT)) is None
    backoff = policy.delay(2, failure(FailureKind.TRANSIENT))
    assert backoff is not None and 0.5 <= backoff <= 1.0


def test_a_connection_that_cannot_be_made_is_retried_soon() -> None:
    policy = RetryPolicy(max_retries=10, rng=random.Random(1))
    delays = [policy.delay(n, failure(FailureKind.UNREACHABLE)) for n in range(1, 10)]
    assert all(d is not None and d <= policy.unreachable_max for d in delays)


def silent() -> Failure:
    return Failure("no byte", FailureKind.TIMEOUT, silent=True)


def test_the_breaker_counts_attempts_in_a_row_that_could_not_connect() -> None:
    breaker = Breaker(threshold=3)
    assert not breaker.record(failure(FailureKind.UNREACHABLE))
    assert not breaker.record(failure(FailureKind.TRANSIENT))  # a reply: the endpoint is there
    assert not breaker.record(failure(FailureKind.UNREACHABLE))
    assert not breaker.record(None)
    for _ in range(2):
        assert not breaker.record(failure(FailureKind.UNREACHABLE))
    assert breaker.record(failure(FailureKind.UNREACHABLE))
    assert "3 attempt(s) in a row could not connect" in breaker.message("http://h/v1")


def test_one_slow_case_never_trips_the_breaker_however_often_it_times_out() -> None:
    breaker = Breaker(silent_cases=3)
    for _ in range(50):
        assert not breaker.record(silent(), "slow.md")
    # a timeout after the headers arrived is a sign of life: it resets the count
    assert not breaker.record(silent(), "other.md")
    assert not breaker.record(Failure("slow body", FailureKind.TIMEOUT), "third.md")
    assert not breaker.record(silent(), "third.md")
    assert breaker.silent == {"third.md"}


def test_silence_across_different_cases_trips_and_says_what_was_seen() -> None:
    breaker = Breaker.for_concurrency(4)  # four slow cases in flight together are not enough
    for case in ("a", "b", "c", "d", "a", "b"):
        assert not breaker.record(silent(), case)
    assert breaker.record(silent(), "e")
    message = breaker.message("http://user:pw@h/v1")
    assert "5 different cases timed out without a byte of a reply (7 attempt(s)" in message
    assert "pw" not in message and "--resume asks them" in message
    assert breaker.record(silent(), "f")  # stays tripped until something answers
    assert not breaker.record(None)


class Recorder(RetryHooks):
    def __init__(self) -> None:
        self.seen: list[FailureKind | None] = []
        self.waits: list[RetryNotice] = []

    async def attempted(self, failure: Failure | None) -> None:
        self.seen.append(None if failure is None else failure.kind)

    async def wait(self, notice: RetryNotice) -> None:
        self.waits.append(notice)


async def test_attempts_sum_usage_and_keep_an_unreadable_reply_as_unparsed() -> None:
    replies = [
        Failure(
            "HTTP 503: busy",
            FailureKind.TRANSIENT,
            status=503,
            partial=Completion(prompt_tokens=5, cost=0.01),
        ),
        Failure(
            "200 with a body\nthat is not JSON",
            FailureKind.TRANSIENT,
            status=200,
            partial=Completion(text="<html>", prompt_tokens=7, cost=0.02),
            unreadable=True,
        ),
    ]

    async def attempt() -> Completion:
        raise replies.pop(0)

    hooks = Recorder()
    got = await run_attempts(attempt, RetryPolicy(max_retries=1), "c", hooks)
    assert got.error is None and got.unreadable == "200 with a body\\nthat is not JSON"
    assert got.text == "<html>" and got.status == 200 and got.attempts == 2
    assert got.prompt_tokens == 12 and got.cost == pytest.approx(0.03)
    assert hooks.seen == [FailureKind.TRANSIENT, FailureKind.TRANSIENT]
    assert [n.attempt for n in hooks.waits] == [1]


async def test_a_case_that_never_reaches_the_endpoint_raises_unreachable() -> None:
    async def attempt() -> Completion:
        raise Failure("could not connect", FailureKind.UNREACHABLE)

    with pytest.raises(Unreachable) as info:
        await run_attempts(attempt, RetryPolicy(max_retries=2), "c", Recorder())
    assert info.value.attempts == 3


def test_one_line_flattens_server_text_showing_its_line_breaks() -> None:
    assert one_line("a\nb\r\n\tc  d\n\n") == "a\\nb\\nc d"
    assert len(one_line("x" * 1000, 50)) == 50


def test_a_body_too_deep_for_json_is_read_with_its_depths_pruned() -> None:
    deep = '{"usage": {"cost": 0.5}, "junk": ' + "[" * 5000 + '"]"' + "]" * 5000 + ', "n": 1}'
    with pytest.raises(RecursionError):
        json.loads(deep)
    data, pruned = shallow_json.loads(deep)
    assert pruned and data["usage"] == {"cost": 0.5} and data["n"] == 1
    assert shallow_json.loads('{"a": [1, {"b": "[{"}]}') == ({"a": [1, {"b": "[{"}]}, False)
    shallow = shallow_json.prune('[[["x"]], {"k": [[1]]}]', max_depth=2)
    assert json.loads(shallow) == [[None], {"k": None}]


def test_the_breaker_message_says_which_cases_are_recorded() -> None:
    """Refused connections record nothing; a case that spent its retries on timeouts before
    the breaker tripped is an error row, and the message must not say otherwise."""
    from secbench_tui.core.run.providers.retry import stalled_message, unreachable_message

    url = "http://user:pw@127.0.0.1:9/v1?key=s"
    refused = unreachable_message(url, Failure("refused", FailureKind.UNREACHABLE), 5)
    assert "http://***@127.0.0.1:9/v1?key=***" in refused and "pw" not in refused
    assert "--resume asks them" in refused and "--retry-errors" not in refused
    slow = stalled_message(url, Failure("no reply", FailureKind.TIMEOUT, silent=True), 3, 4)
    assert "raise --timeout" in slow and "recorded as an error (--retry-errors" in slow
