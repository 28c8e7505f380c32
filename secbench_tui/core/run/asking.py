"""Asking one case: the provider's answer, its retries, and its reading.

The engine drives retries under the provider's `RetryPolicy` (`providers.retry`): a case that
waits to try again gives its concurrency slot back, so the other cases go on meanwhile, and a
rate limit lowers the limit the model's runs share. A run-level fault (bad key, no credits,
unknown model, an endpoint that cannot be reached, too many failures in a row) raises
`RunAborted`; any other failure is the case's own, an error on its evaluation, and the run
goes on.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from secbench_tui.core.models import Case, Completion, Evaluation
from secbench_tui.core.results.grading import score_completion
from secbench_tui.core.run.events import Event, Retrying
from secbench_tui.core.run.limits import AdaptiveLimit
from secbench_tui.core.run.providers.base import Provider, RetryCallback, RetryNotice, RunAborted
from secbench_tui.core.run.providers.retry import (
    Attempter,
    Breaker,
    Failure,
    RetryHooks,
    Unreachable,
    one_line,
    run_attempts,
    unreachable_message,
)
from secbench_tui.core.run.scheduling import Slot, Work
from secbench_tui.core.run.sharing import SharedPace
from secbench_tui.core.run.stopping import Abandoned, Stop
from secbench_tui.core.store.values import now_iso


class Asker:
    """Asks a run's cases of one provider; `report` hears of every retry."""

    def __init__(
        self,
        provider: Provider,
        limit: AdaptiveLimit,
        stop: Stop,
        report: Callable[[Event], None],
        *,
        concurrency: int = 1,
        vdb_scoring: str,
        pace: SharedPace | None = None,
    ) -> None:
        self.provider = provider
        self.pace = pace  # the model's rate, shared by every worker (`--worker`)
        # a provider whose retries the engine drives, or None: it retries inside `complete`
        self.attempter = provider if isinstance(provider, Attempter) else None
        self.limit = limit
        self.stop = stop
        self.report = report
        self.breaker = Breaker.for_concurrency(concurrency)
        self.vdb_scoring = vdb_scoring

    async def ask(self, run_id: int, work: Work, slot: Slot) -> Evaluation:
        """The case's answer, read and scored (`Abandoned` when a stop drops it unanswered)."""
        case = work.case
        try:
            completion = await self._complete(run_id, case, slot)
            scored = score_completion(case, completion, self.vdb_scoring)
        except (RunAborted, Abandoned):
            raise
        except Exception as exc:  # a failing case is data, not an exception
            completion = Completion(error=one_line(f"{type(exc).__name__}: {exc}"))
            scored = score_completion(case, completion, self.vdb_scoring)
        return Evaluation(
            run_id=run_id,
            case=case,
            repeat=work.repeat,
            index=work.index,
            completion=completion,
            scored=scored,
            timestamp=now_iso(),
        )

    async def _complete(self, run_id: int, case: Case, slot: Slot) -> Completion:
        """The provider's answer, its retries driven here so a waiting case holds no slot."""
        provider = self.attempter
        if provider is None:  # retries (if any) happen inside `complete`
            return await self.stop.request(self.provider.complete(case, self._on_retry(run_id)))
        waits = _RetryWaits(self, run_id, slot, provider.endpoint, case.case_id)
        try:
            return await run_attempts(
                waits.timed(lambda: self.stop.request(provider.attempt(case))),
                provider.policy,
                case.case_id,
                waits,
            )
        except Unreachable as exc:
            raise RunAborted(
                unreachable_message(
                    provider.endpoint, exc.failure, max(exc.attempts, self.breaker.consecutive)
                )
            ) from None

    def _on_retry(self, run_id: int) -> RetryCallback:
        """For providers that retry inside `complete`: report, adapt, drop the case on a stop."""

        async def on_retry(notice: RetryNotice) -> None:
            if self.stop.asked:
                raise Abandoned
            if notice.rate_limited:
                self.limit.rate_limited(notice.retry_after)
            self.report(Retrying(run_id, notice, self.limit.limit))

        return on_retry


class _RetryWaits(RetryHooks):
    """The engine's side of the retry loop: the breaker, rate limits and slot-free waits."""

    def __init__(self, asker: Asker, run_id: int, slot: Slot, endpoint: str, case_id: str) -> None:
        self.asker = asker
        self.case_id = case_id
        self.run_id = run_id
        self.slot = slot
        self.endpoint = endpoint
        self.sent_at = 0.0
        self.shared_at = 0.0  # its turn on the shared rate, by the database's clock

    def timed(self, attempt: Callable[[], Awaitable[Completion]]) -> Callable[[], Any]:
        async def timed_attempt() -> Completion:
            pace = self.asker.pace
            if pace is not None:
                self.shared_at = await pace.turn(self.asker.stop)
            self.sent_at = time.monotonic()
            return await attempt()

        return timed_attempt

    async def attempted(self, failure: Failure | None) -> None:
        breaker = self.asker.breaker
        if breaker.record(failure, self.case_id):
            raise RunAborted(breaker.message(self.endpoint))

    async def wait(self, notice: RetryNotice) -> None:
        asker = self.asker
        if asker.stop.asked:
            raise Abandoned
        if notice.rate_limited:
            if asker.pace is not None:  # the rate every worker shares is halved instead
                await asker.pace.rate_limited(notice.retry_after, self.shared_at)
            else:
                asker.limit.rate_limited(notice.retry_after, self.sent_at)
        asker.report(Retrying(self.run_id, notice, asker.limit.limit))
        await self.slot.give_back()
        await asker.stop.pause(notice.wait_seconds)
        if asker.stop.asked:
            raise Abandoned
        await self.slot.take()
