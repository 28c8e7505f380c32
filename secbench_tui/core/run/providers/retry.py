"""The retry policy, kept apart from any transport so every provider shares it.

A provider makes one attempt and, when it fails, says what kind of failure it was (a
`Failure` with a `FailureKind`). This module decides the rest: whether to try again, how long
to wait (exponential backoff with jitter, or the server's `Retry-After` up to a cap), when to
give up, and when the endpoint itself cannot be reached (`Breaker`). The caller does the
waiting (`RetryHooks.wait`), so an engine can give its concurrency slot back while a case
waits. (The split follows inspect_ai: `ModelAPI.should_retry` classifies, a generic layer
retries.)
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Protocol, runtime_checkable

from secbench_tui.core.models import Case, Completion
from secbench_tui.core.run.providers.base import RetryNotice
from secbench_tui.core.untrusted import redact_url

BREAKER_THRESHOLD = 5  # attempts in a row, across cases, that could not connect at all
# Different cases in a row whose attempts got no byte of a reply: at least this many, and more
# than can be in flight at once (so slow cases that happen to run together never trip it).
SILENT_CASES = 3
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 524, 529})
BACKOFF_BASE = 0.5  # seconds before the first retry, doubled for each one after (--retry-backoff)


class FailureKind(StrEnum):
    """Why one attempt failed, as far as retrying is concerned."""

    UNREACHABLE = "unreachable"  # no connection: refused, DNS, TLS, connect timeout
    TIMEOUT = "timeout"  # no whole reply within the deadline
    RATE_LIMITED = "rate_limited"  # 429: the provider asks us to slow down
    TRANSIENT = "transient"  # 5xx, a dropped connection, an error or nothing inside a 200
    FINAL = "final"  # the case's own error (400, 403, a truncated reply): never retried

    @property
    def retryable(self) -> bool:
        return self is not FailureKind.FINAL

    @property
    def connection(self) -> bool:
        """Nothing came back from the endpoint (the breaker also asks whether a timeout was
        `silent`: a reply that started shows the endpoint is there)."""
        return self in (FailureKind.UNREACHABLE, FailureKind.TIMEOUT)


def status_kind(status: int) -> FailureKind:
    """An HTTP error status (or the same code inside a 200 body), as a kind of failure."""
    if status == 429:
        return FailureKind.RATE_LIMITED
    return FailureKind.TRANSIENT if status in RETRYABLE_STATUS else FailureKind.FINAL


class Failure(Exception):
    """One failed attempt, classified by the provider.

    `partial` is what the attempt brought back anyway (raw text, finish reason, tokens and
    cost: a failed reply may still be billed). `unreadable` marks a reply that arrived but
    could not be read; when retries are spent it is recorded as unparsed with this reason.
    `silent` marks a timeout before any byte of a reply (not even its headers) arrived.
    """

    def __init__(
        self,
        message: str,
        kind: FailureKind,
        status: int | None = None,
        retry_after: float | None = None,
        partial: Completion | None = None,
        unreadable: bool = False,
        silent: bool = False,
    ) -> None:
        super().__init__(one_line(message))
        self.kind = kind
        self.silent = silent
        self.status = status
        self.retry_after = retry_after
        self.partial = partial or Completion()
        self.unreadable = unreadable


class Unreachable(Exception):
    """A case ran out of attempts without reaching the endpoint: the model never saw it."""

    def __init__(self, failure: Failure, attempts: int) -> None:
        super().__init__(str(failure))
        self.failure = failure
        self.attempts = attempts


def one_line(text: str, limit: int = 500) -> str:
    """A message on one line, at most `limit` characters: server text may hold line breaks,
    shown as `\\n` as every one-line place shows them (docs/data.md, "Untrusted text"); runs of
    spaces and tabs become one space."""
    breaks = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines = (" ".join(line.split()) for line in breaks)
    flat = "\\n".join(line for line in lines if line)
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if seconds == seconds else None  # NaN says nothing
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return max(0.0, float(when.timestamp()) - current)


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with jitter: between half and all of base * 2^(attempt-1)."""
    ceiling = min(cap, base * (2.0 ** min(max(0, attempt - 1), 60)))
    return ceiling * (0.5 + rng.random() / 2)


@dataclass
class RetryPolicy:
    """How often and how patiently to try again; one per provider, shared by its cases."""

    max_retries: int  # the run's --max-retries (declared in config.Options)
    backoff_base: float = BACKOFF_BASE
    backoff_max: float = 30.0
    retry_after_max: float = 300.0
    # a connection that could not be made is tried again soon: the breaker decides when to stop
    unreachable_max: float = 2.0
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def delay(self, attempt: int, failure: Failure) -> float | None:
        """Seconds to wait before the next attempt after `attempt` failed; None: give up."""
        if not failure.kind.retryable or attempt > self.max_retries:
            return None
        if failure.retry_after is not None:
            return min(failure.retry_after, self.retry_after_max)
        cap = self.unreachable_max if failure.kind.connection else self.backoff_max
        return backoff_delay(attempt, self.backoff_base, cap, self.rng)


class Breaker:
    """Trips only when the endpoint itself looks gone, never for one slow case.

    It counts two things since the last sign of life: attempts in a row that could not connect
    at all (refused, DNS, TLS, a connect timeout), and the different cases whose attempts
    timed out without a byte of a reply. A case that is slow on its own times out again and
    again while other cases are answered, so it never adds up; a server that has stopped
    answering stalls one case after another. Any reply at all (an HTTP error, headers that
    arrived before a timeout) resets both.
    """

    def __init__(
        self, threshold: int = BREAKER_THRESHOLD, silent_cases: int = SILENT_CASES
    ) -> None:
        self.threshold = max(1, threshold)
        self.silent_cases = max(1, silent_cases)
        self.consecutive = 0  # attempts in a row that could not connect
        self.attempts = 0  # attempts in a row that reached nothing, of either kind
        self.silent: set[str] = set()  # cases that timed out with no byte since the last reply
        self.last: Failure | None = None

    @classmethod
    def for_concurrency(cls, concurrency: int) -> Breaker:
        """Stalled cases must outnumber what can be in flight together to mean anything."""
        return cls(silent_cases=max(SILENT_CASES, concurrency + 1))

    def record(self, failure: Failure | None, case_id: str = "") -> bool:
        """Count one attempt's outcome; True once the breaker has tripped."""
        if failure is None or not failure.kind.connection:
            self.consecutive = self.attempts = 0
            self.silent.clear()
        elif failure.kind is FailureKind.UNREACHABLE:
            self.consecutive += 1
            self.attempts += 1
            self.last = failure
        elif failure.silent:
            self.silent.add(case_id)
            self.attempts += 1
            self.last = failure
        else:  # a timeout while the reply was coming in: the endpoint is there, only slow
            self.consecutive = self.attempts = 0
            self.silent.clear()
        return self.tripped

    @property
    def tripped(self) -> bool:
        return self.consecutive >= self.threshold or len(self.silent) >= self.silent_cases

    def message(self, endpoint: str) -> str:
        """What a tripped breaker says: what was seen, where, what to check."""
        assert self.last is not None
        if len(self.silent) >= self.silent_cases:
            return stalled_message(endpoint, self.last, len(self.silent), self.attempts)
        return unreachable_message(endpoint, self.last, self.consecutive)


def stalled_message(endpoint: str, failure: Failure, cases: int, attempts: int) -> str:
    """A server that accepts connections but answers nothing, one case after another."""
    return (
        f"cannot reach the endpoint {redact_url(endpoint)}: {cases} different cases timed out "
        f"without a byte of a reply ({attempts} attempt(s), and no reply to any other request "
        f"meanwhile; last: {failure}); check that the server is answering, or raise --timeout "
        "if it is only slow. The cases still waiting for a reply are not recorded: --resume "
        "asks them; a case that had already spent its retries on timeouts is recorded as an "
        "error (--retry-errors asks it again)"
    )


def unreachable_message(endpoint: str, failure: Failure, attempts: int) -> str:
    """A run that cannot connect to its endpoint: where, what happened, what to check."""
    return (
        f"cannot reach the endpoint {redact_url(endpoint)}: {attempts} attempt(s) in a row "
        f"could not connect (last: {failure}); check that the server is running and that "
        "--base-url is right (host, port, http or https, a proxy in between). The cases still "
        "waiting for a reply are not recorded: --resume asks them"
    )


@runtime_checkable
class Attempter(Protocol):
    """A provider whose retries its caller drives: one attempt at a time, classified."""

    endpoint: str
    policy: RetryPolicy

    async def attempt(self, case: Case) -> Completion:
        """One request: the reply, or a `Failure` (`RunAborted` when the run cannot go on)."""
        ...


class RetryHooks:
    """What the caller does around attempts. The defaults only sleep."""

    async def attempted(self, failure: Failure | None) -> None:
        """After every attempt: None when it brought a usable reply."""

    async def wait(self, notice: RetryNotice) -> None:
        """Wait before the next attempt (an engine gives its slot back meanwhile)."""
        await asyncio.sleep(notice.wait_seconds)


def _sum(mine: float | int | None, theirs: float | int | None) -> float | int | None:
    if theirs is None:
        return mine
    return theirs if mine is None else mine + theirs


def _spend(spent: Completion, attempt: Completion) -> None:
    """Add one attempt's tokens, cost and notes; keep the latest model and provider."""
    spent.prompt_tokens = _sum(spent.prompt_tokens, attempt.prompt_tokens)  # type: ignore[assignment]
    spent.completion_tokens = _sum(spent.completion_tokens, attempt.completion_tokens)  # type: ignore[assignment]
    spent.cost = _sum(spent.cost, attempt.cost)
    spent.served_model = attempt.served_model or spent.served_model
    spent.provider = attempt.provider or spent.provider
    spent.notes = "; ".join(n for n in (spent.notes, attempt.notes) if n) or None


def _final(completion: Completion, spent: Completion, attempts: int, started: float) -> Completion:
    """The last attempt's completion (its own, made for this case) with what every attempt
    spent, filled in where it is."""
    completion.prompt_tokens = spent.prompt_tokens
    completion.completion_tokens = spent.completion_tokens
    completion.cost = spent.cost
    completion.served_model = spent.served_model
    completion.provider = spent.provider
    completion.notes = spent.notes  # what was not believed in any attempt
    completion.attempts = attempts
    completion.latency_ms = (time.perf_counter() - started) * 1000
    return completion


def given_up(failure: Failure) -> Completion:
    """The case's record once retries are spent: its error, or an unreadable reply."""
    partial = failure.partial
    if failure.unreadable:
        return replace(partial, status=failure.status, unreadable=str(failure))
    return replace(partial, error=str(failure), status=failure.status)


async def run_attempts(
    attempt: Callable[[], Awaitable[Completion]],
    policy: RetryPolicy,
    case_id: str,
    hooks: RetryHooks,
) -> Completion:
    """Attempt until a reply is usable or the policy gives up; every attempt's usage is summed.

    Raises `Unreachable` when the last attempt could not reach the endpoint, and lets
    `RunAborted` (a fault no later case escapes) through.
    """
    started = time.perf_counter()
    spent = Completion()  # every attempt's tokens and cost, the failed ones included
    n = 0
    while True:
        n += 1
        try:
            completion = await attempt()
        except Failure as failure:
            await hooks.attempted(failure)
            _spend(spent, failure.partial)
            wait = policy.delay(n, failure)
            if wait is None:
                if failure.kind is FailureKind.UNREACHABLE:
                    raise Unreachable(failure, n) from failure
                return _final(given_up(failure), spent, n, started)
            notice = RetryNotice(
                case_id,
                n,
                wait,
                str(failure),
                failure.status,
                rate_limited=failure.kind is FailureKind.RATE_LIMITED,
                retry_after=failure.retry_after,
            )
            await hooks.wait(notice)
            continue
        await hooks.attempted(None)
        _spend(spent, completion)
        return _final(completion, spent, n, started)
