"""The engine over a real SQLite file, with a scripted provider standing in for the network."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from secbench_tui.core.models import Case, Completion, Message, RecordedSettings, SuiteKind
from secbench_tui.core.run.engine import Engine, RunSpec
from secbench_tui.core.run.events import (
    CaseFinished,
    CaseStarted,
    Retrying,
    RunFinished,
    RunStarted,
)
from secbench_tui.core.run.limits import AdaptiveLimit
from secbench_tui.core.run.providers.base import RetryCallback, RetryNotice, RunAborted
from secbench_tui.core.store.database import Store
from tests.unit.conftest import HeldWrites


def cases(n: int) -> list[Case]:
    return [
        Case(
            kind=SuiteKind.MARKDOWN,
            app="a" if i < n // 2 else "b",
            case_id=f"c{i:03d}.md",
            test_file=f"/s/c{i:03d}.md",
            expected="bad" if i % 2 else "good",
            code=f"q{i}",
            messages=(Message(role="user", content=f"prompt {i}"),),
        )
        for i in range(n)
    ]


def verdict(v: str) -> str:
    return json.dumps({"assessment": v, "explanation": "e"})


class Scripted:
    """Answers by case id; records what it was asked. Behaviour hooks per case id."""

    name = "scripted"
    reports_cost = True

    def __init__(self, behave: Callable[[Case, int], object] | None = None) -> None:
        self.asked: list[str] = []
        self.behave = behave

    async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
        self.asked.append(case.case_id)
        n = self.asked.count(case.case_id)
        result = self.behave(case, n) if self.behave else None
        if isinstance(result, BaseException):
            raise result
        if isinstance(result, float):
            await asyncio.sleep(result)
        if isinstance(result, Completion):
            return result
        if isinstance(result, RetryNotice) and on_retry is not None:
            maybe = on_retry(result)
            if maybe is not None:
                await maybe
        return Completion(
            text=verdict(case.expected), cost=0.5, prompt_tokens=3, completion_tokens=1
        )

    async def aclose(self) -> None:
        return None


async def run(store: Store, provider: Scripted, case_list: list[Case], **kw: object):
    spec = RunSpec(
        model="m",
        cases=case_list,
        suite_kind="markdown",
        suite_path="/s",
        settings=RecordedSettings(seed=1),
        prompt_hash="p",
        **kw,
    )  # type: ignore[arg-type]
    engine = Engine(spec, provider, store)
    events = [event async for event in engine.events()]
    return engine, events


@pytest.fixture
async def store(tmp_path: Path):
    s = await Store.open(tmp_path / "r.db")
    yield s
    await s.close()


async def test_every_case_reported_once_with_its_position(store: Store, tmp_path: Path) -> None:
    delays = {i: 0.02 * ((7 * i) % 5) for i in range(20)}
    provider = Scripted(lambda c, n: delays[int(c.case_id[1:4])])
    _, events = await run(store, provider, cases(20), concurrency=6)
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    finished = [e for e in events if isinstance(e, CaseFinished)]
    in_place = sorted(finished, key=lambda e: e.position)
    assert [e.evaluation.case.case_id for e in in_place] == [c.case_id for c in cases(20)]
    assert [e.position for e in in_place] == list(range(20))
    assert [e.done for e in finished] == list(range(1, 21))
    assert len([e for e in events if isinstance(e, CaseStarted)]) == 20
    assert events[-1].status == "completed" and events[-1].summary.accuracy == 1.0
    rows = (
        sqlite3.connect(tmp_path / "r.db")
        .execute("SELECT case_id, COUNT(*) FROM evaluations GROUP BY case_id")
        .fetchall()
    )
    assert len(rows) == 20 and all(count == 1 for _, count in rows)


async def test_a_slow_case_holds_no_later_case_back(store: Store) -> None:
    """The first case answers only once every other case has been reported: in case order
    the stream would wait for it for ever (the test would hang, not pass)."""
    others_reported = asyncio.Event()

    class FirstWaits(Scripted):
        async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
            if case.case_id == "c000.md":
                await others_reported.wait()
            return await super().complete(case, on_retry)

    spec = RunSpec(model="m", cases=cases(8), suite_kind="markdown", suite_path="/s", concurrency=3)
    engine = Engine(spec, FirstWaits(), store)
    order: list[str] = []
    async for event in engine.events():
        if isinstance(event, CaseFinished):
            order.append(event.evaluation.case.case_id)
            if len(order) == 7:
                others_reported.set()
    assert order[-1] == "c000.md" and sorted(order) == [c.case_id for c in cases(8)]


async def test_concurrency_is_bounded(store: Store) -> None:
    in_flight = peak = 0

    class Counting(Scripted):
        async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1
            return await super().complete(case, on_retry)

    await run(store, Counting(), cases(30), concurrency=4)
    assert peak == 4


async def test_a_failing_case_is_recorded_and_the_run_goes_on(store: Store) -> None:
    provider = Scripted(lambda c, n: ValueError("boom") if c.case_id == "c002.md" else None)
    _, events = await run(store, provider, cases(5))
    finished = [e.evaluation for e in events if isinstance(e, CaseFinished)]
    assert [e.scored.outcome.value for e in finished] == [
        "correct",
        "correct",
        "error",
        "correct",
        "correct",
    ]
    assert "boom" in (finished[2].completion.error or "")
    assert events[-1].status == "completed"


async def test_run_level_fault_aborts_and_keeps_finished_cases(store: Store) -> None:
    provider = Scripted(
        lambda c, n: RunAborted("set OPENROUTER_API_KEY", 401) if c.case_id == "c003.md" else None
    )
    _, events = await run(store, provider, cases(8))
    last = events[-1]
    assert isinstance(last, RunFinished) and last.status == "aborted"
    assert "OPENROUTER_API_KEY" in (last.message or "")
    assert await store.finished_keys(last.run_id) == {(f"c00{i}.md", 0) for i in range(3)}
    # the rows handed over before the fault are reported before the run ends
    assert [e.evaluation.case.case_id for e in events if isinstance(e, CaseFinished)] == [
        f"c00{i}.md" for i in range(3)
    ]
    (record,) = await store.runs()
    assert record.status == "aborted"
    assert "c004.md" not in provider.asked


async def test_a_case_is_reported_once_its_row_is_committed_and_its_slot_waits_for_it(
    store: Store, tmp_path: Path, held_writes: HeldWrites
) -> None:
    """A result is committed before its case is reported, as another connection to the file
    sees it, and before its slot goes on: at concurrency 1, while the first row waits for the
    database (another connection holds its write lock), no second case is asked."""
    held_while_asked: list[bool] = []

    def behave(case: Case, n: int) -> None:
        held_while_asked.append(held_writes.holding)
        if len(provider.asked) == 1:
            held_writes.hold()  # the first row will wait for the lock
            asyncio.get_running_loop().call_later(0.2, held_writes.release)

    provider = Scripted(behave)
    spec = RunSpec(model="m", cases=cases(6), suite_kind="markdown", suite_path="/s")
    engine = Engine(spec, provider, store)
    other = sqlite3.connect(tmp_path / "r.db")
    reported = []
    async for event in engine.events():
        if isinstance(event, CaseFinished):
            case_id = event.evaluation.case.case_id
            (committed,) = other.execute(
                "SELECT COUNT(*) FROM evaluations WHERE case_id = ?", (case_id,)
            ).fetchone()
            reported.append((case_id, committed))
        last = event
    other.close()
    assert held_while_asked == [False] * 6  # case 2 was asked once row 1 was in
    assert reported == [(f"c00{i}.md", 1) for i in range(6)]
    assert isinstance(last, RunFinished) and last.status == "completed"
    assert (last.summary.cases, last.summary.correct) == (6, 6)  # taken from every row


async def test_stop_finishes_in_flight_and_keeps_them(store: Store) -> None:
    provider = Scripted(lambda c, n: 0.01)
    spec = RunSpec(
        model="m", cases=cases(40), suite_kind="markdown", suite_path="/s", concurrency=3
    )
    engine = Engine(spec, provider, store)
    seen = 0
    async for event in engine.events():
        if isinstance(event, CaseFinished):
            seen += 1
            if seen == 5:
                engine.stop()
        last = event
    assert isinstance(last, RunFinished) and last.status == "stopped"
    stored = await store.finished_keys(last.run_id)
    assert len(stored) == len(provider.asked) == seen < 40


async def test_a_database_slower_than_the_endpoint_holds_the_cases_back(
    store: Store, held_writes: HeldWrites
) -> None:
    """Each case waits for its row: while the database is held, no more answers wait for it
    than the run's concurrency, and no case beyond them is asked."""
    held_while_asked: list[bool] = []

    def behave(case: Case, n: int) -> None:
        if len(provider.asked) == 1:
            held_writes.hold()
        held_while_asked.append(held_writes.holding)
        if len(provider.asked) == 3:  # every slot taken: let the rows go a little later
            asyncio.get_running_loop().call_later(0.2, held_writes.release)

    provider = Scripted(behave)
    spec = RunSpec(
        model="m", cases=cases(12), suite_kind="markdown", suite_path="/s", concurrency=3
    )
    events = await _all_events(Engine(spec, provider, store))
    assert held_while_asked == [True] * 3 + [False] * 9
    assert sum(isinstance(e, CaseFinished) for e in events) == 12


async def _all_events(engine: Engine) -> list[object]:
    return [event async for event in engine.events()]


async def test_resume_asks_only_what_is_missing(store: Store) -> None:
    provider = Scripted(lambda c, n: RunAborted("402") if c.case_id == "c006.md" else None)
    await run(store, provider, cases(10))
    again = Scripted()
    _, events = await run(store, again, cases(10), resume=True)
    assert events[0].resumed and events[0].pending == 4  # type: ignore[union-attr]
    assert events[0].earlier["counts"] == {"correct": 6}  # type: ignore[union-attr]
    assert events[0].earlier["cost"] == pytest.approx(3.0)  # type: ignore[union-attr]
    assert again.asked == [f"c00{i}.md" for i in range(6, 10)]
    assert events[-1].status == "completed"
    assert len(await store.finished_keys(events[-1].run_id)) == 10
    assert [r.status for r in await store.runs()] == ["completed"]


async def test_results_are_reused_unless_forced(store: Store) -> None:
    await run(store, Scripted(), cases(6))
    again = Scripted()
    _, events = await run(store, again, cases(6))
    assert again.asked == [] and events[0].reused == 6  # type: ignore[union-attr]
    shown = [e for e in events if isinstance(e, CaseFinished)]
    assert [(e.evaluation.reused, e.done) for e in shown] == [(True, i) for i in range(1, 7)]
    assert events[-1].summary.reused == 6 and events[-1].summary.correct == 6
    forced = Scripted()
    await run(store, forced, cases(6), force=True)
    assert len(forced.asked) == 6


async def test_retry_errors_reasks_only_errors(store: Store) -> None:
    failing = Scripted(
        lambda c, n: (
            Completion(error="HTTP 503", status=503)
            if c.case_id in ("c001.md", "c004.md")
            else None
        )
    )
    _, first = await run(store, failing, cases(6))
    assert first[-1].summary.errors == 2
    retry = Scripted()
    _, events = await run(store, retry, cases(6), retry_errors=True)
    assert retry.asked == ["c001.md", "c004.md"]
    assert events[-1].run_id == first[-1].run_id
    assert events[-1].summary.errors == 0 and events[-1].summary.cases == 6


async def test_repeats_ask_each_case_n_times(store: Store) -> None:
    provider = Scripted()
    _, events = await run(store, provider, cases(3), repeats=3)
    assert sorted(provider.asked) == sorted([c.case_id for c in cases(3)] * 3)
    assert len(await store.finished_keys(events[-1].run_id)) == 9


async def test_budget_stops_the_run(store: Store) -> None:
    provider = Scripted()
    _, events = await run(store, provider, cases(10), max_cost=1.2)
    assert events[-1].status == "stopped" and "--max-cost" in (events[-1].message or "")
    assert len(provider.asked) == 3  # 0.5 per case: stops once 1.5 >= 1.2


async def test_rate_limit_lowers_concurrency_and_is_reported(store: Store) -> None:
    notice = RetryNotice("x", 1, 0.0, "HTTP 429", 429, rate_limited=True)
    provider = Scripted(lambda c, n: notice if c.case_id == "c000.md" else 0.005)
    engine, events = await run(store, provider, cases(12), concurrency=8)
    retrying = [e for e in events if isinstance(e, Retrying)]
    assert retrying and retrying[0].limit == 4


async def test_adaptive_limit_recovers_after_calm() -> None:
    limit = AdaptiveLimit(8, cooldown=0.0)
    limit.rate_limited()
    assert limit.limit == 4
    for _ in range(10):
        await limit.acquire()
        await limit.release(True)
    assert limit.limit > 4


async def test_stop_drops_a_case_that_only_waits_to_retry(store: Store) -> None:
    """A stop during a long Retry-After ends the run at once; the unanswered case is not kept."""
    import httpx

    from secbench_tui.core.run.providers.openai_compat import (
        ClientSettings,
        OpenAICompatibleProvider,
    )

    def handle(request: httpx.Request) -> httpx.Response:
        if b"prompt 0" in request.content:
            return httpx.Response(
                200,
                json={
                    "choices": [{"finish_reason": "stop", "message": {"content": verdict("good")}}]
                },
            )
        return httpx.Response(429, headers={"Retry-After": "30"}, json={"error": {"code": 429}})

    provider = OpenAICompatibleProvider(
        ClientSettings(base_url="http://127.0.0.1:9/v1", model="m", max_retries=5, timeout=120.0),
        client=httpx.AsyncClient(transport=httpx.MockTransport(handle)),
    )
    spec = RunSpec(model="m", cases=cases(3), suite_kind="markdown", suite_path="/s", concurrency=2)
    engine = Engine(spec, provider, store)
    events = []
    async for event in engine.events():
        events.append(event)
        if isinstance(event, Retrying):
            engine.stop()
    last = events[-1]
    assert isinstance(last, RunFinished) and last.status == "stopped"
    assert await store.finished_keys(last.run_id) == {("c000.md", 0)}
    assert [e.evaluation.case.case_id for e in events if isinstance(e, CaseFinished)] == ["c000.md"]


async def test_budget_reached_by_the_last_case_still_completes(store: Store) -> None:
    provider = Scripted()
    _, events = await run(store, provider, cases(4), max_cost=2.0)  # 0.5 per case
    assert len(provider.asked) == 4 and events[-1].status == "completed"


async def test_a_changed_case_is_not_resumed_into_the_old_run(store: Store) -> None:
    stopping = Scripted(lambda c, n: RunAborted("402") if c.case_id == "c002.md" else None)
    await run(store, stopping, cases(4))
    edited = [
        replace(c, **{"code": c.code + " v2", "messages": (Message(role="user", content="v2"),)})
        for c in cases(4)
    ]
    again = Scripted()
    _, events = await run(store, again, edited, resume=True)
    assert not events[0].resumed  # type: ignore[union-attr]
    assert sorted(again.asked) == [c.case_id for c in edited]


async def test_rate_limit_recovery_follows_retry_after() -> None:
    limit = AdaptiveLimit(8)  # a 20 s cooldown when the provider does not say
    limit.rate_limited(retry_after=0.0)
    assert limit.limit == 4
    await limit.acquire()
    await limit.release(True)
    assert limit.limit == 8  # the provider's wait is over: back where it was
    limit.rate_limited(retry_after=None)
    for _ in range(20):
        await limit.acquire()
        await limit.release(True)
    assert limit.limit == 4  # no Retry-After: the cut lasts the cooldown


async def test_a_wave_of_429s_sent_together_halves_the_limit_once() -> None:
    import time

    limit = AdaptiveLimit(8)
    sent = time.monotonic()
    limit.rate_limited(retry_after=5.0, sent_at=sent)
    limit.rate_limited(retry_after=5.0, sent_at=sent)  # sent under the old limit
    assert limit.limit == 4
    limit.rate_limited(retry_after=5.0, sent_at=time.monotonic() + 1)  # sent after the cut
    assert limit.limit == 2


async def test_a_resized_limit_holds_its_new_share_and_keeps_a_cut() -> None:
    limit = AdaptiveLimit(8)
    await limit.resize(2)  # a worker's share of --shared-concurrency
    assert (limit.maximum, limit.limit) == (2, 2)
    await limit.acquire()
    await limit.acquire()
    third = asyncio.create_task(limit.acquire())
    await asyncio.sleep(0)
    assert not third.done()  # two held: the share is full
    await limit.resize(3)  # a worker left: the share grows and a waiting case goes
    await asyncio.wait_for(third, 1)
    limit.rate_limited(retry_after=60)
    assert limit.limit == 1
    await limit.resize(6)  # a bigger share does not undo a rate limit still in force
    assert (limit.maximum, limit.limit) == (6, 1)


async def test_a_case_back_from_a_retry_wait_goes_before_new_cases() -> None:
    limit = AdaptiveLimit(1)
    await limit.acquire()
    order: list[str] = []

    async def take(name: str, priority: bool) -> None:
        await limit.acquire(priority=priority)
        order.append(name)
        await limit.release(True)

    new = asyncio.create_task(take("new", False))
    await asyncio.sleep(0)
    retry = asyncio.create_task(take("retry", True))
    await asyncio.sleep(0)
    await limit.release(True)
    await asyncio.gather(new, retry)
    assert order == ["retry", "new"]


async def test_a_slot_goes_on_to_the_next_case_only_when_nothing_goes_first() -> None:
    limit = AdaptiveLimit(2)
    await limit.acquire()
    assert await limit.pass_on(True)  # nobody waits: the slot goes on, still held
    assert limit.active == 1
    await limit.acquire()
    retry = asyncio.create_task(limit.acquire(priority=True))
    await asyncio.sleep(0)
    assert not retry.done()  # both slots taken
    assert not await limit.pass_on(True)  # a retry waits for a slot: it gets this one
    await asyncio.wait_for(retry, 1)
    assert limit.active == 2
    limit.rate_limited(retry_after=60)  # the limit halves to 1 while 2 are held
    assert not await limit.pass_on(False)
    assert limit.active == 1
    assert await limit.pass_on(False)  # 1 held under a limit of 1: room for it


async def test_a_shared_limit_bounds_two_engines_together(store: Store) -> None:
    in_flight = peak = 0

    class Counting(Scripted):
        async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1
            return await super().complete(case, on_retry)

    shared = AdaptiveLimit(3)

    def engine(model: str) -> Engine:
        spec = RunSpec(
            model=model, cases=cases(12), suite_kind="markdown", suite_path="/s", concurrency=3
        )
        return Engine(spec, Counting(), store, limit=shared)

    async def drain(e: Engine) -> None:
        async for _ in e.events():
            pass

    await asyncio.gather(drain(engine("m1")), drain(engine("m2")))
    assert peak == 3
