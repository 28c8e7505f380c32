"""The batch run over a real SQLite file, with a scripted batch protocol and a fake clock.

The waits between polls are what the run asked its (injected) sleep for: they back off, and a
server's Retry-After is waited for when it asks for longer; a batch left open by a stopped run
is polled at once by the next one and never sent again; a batch the provider lost leaves its
requests as errors.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from secbench_tui.core.models import Case, Message, RecordedSettings, RunStatus, SuiteKind
from secbench_tui.core.run.batch.polling import PollTimer
from secbench_tui.core.run.batch.protocol import (
    BatchLost,
    Counts,
    Limits,
    Line,
    Polled,
    PollFailed,
    ProtocolName,
    Result,
    Submitted,
)
from secbench_tui.core.run.batch.runner import Batching
from secbench_tui.core.run.engine import Engine, RunSpec
from secbench_tui.core.run.events import BatchProgress, Event, RunFinished
from secbench_tui.core.run.providers.openai_compat import ClientSettings, OpenAICompatibleProvider
from secbench_tui.core.store.database import Store

FIRST = 10.0


def cases(n: int) -> list[Case]:
    return [
        Case(
            kind=SuiteKind.MARKDOWN,
            app="a",
            case_id=f"c{i:03d}.md",
            test_file=f"/s/c{i:03d}.md",
            expected="bad" if i % 2 else "good",
            code=f"q{i}",
            messages=(Message(role="user", content=f"prompt {i}"),),
        )
        for i in range(n)
    ]


def reply(verdict: str) -> dict[str, object]:
    content = json.dumps({"assessment": verdict, "explanation": "e"})
    return {
        "choices": [{"finish_reason": "stop", "message": {"content": content}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "cost": 0.25},
    }


class Scripted:
    """A batch API whose polls answer from a script (then: ended), and whose results answer
    each request with its case's expected verdict."""

    name: ProtocolName = "openai"

    def __init__(self, polls: Sequence[Polled | Exception] = (), limit: int = 100) -> None:
        self.limits = Limits(limit, 1_000_000)
        self.polls = list(polls)
        self.sent: list[list[Line]] = []
        self.expected: dict[str, str] = {}

    def line_bytes(self, line: Line) -> int:
        return len(json.dumps(line.body))

    async def submit(self, lines: Sequence[Line]) -> Submitted:
        self.sent.append(list(lines))
        return Submitted(f"b{len(self.sent)}", "validating")

    async def poll(self, provider_id: str) -> Polled:
        step = self.polls.pop(0) if self.polls else Polled("completed", True, Counts(1, 1, 0))
        if isinstance(step, Exception):
            raise step
        return step

    async def results(self, provider_id: str, polled: Polled) -> AsyncIterator[Result]:
        for lines in self.sent:
            for line in lines:
                yield Result(line.custom_id, data=reply(self.expected[line.custom_id]), status=200)

    async def aclose(self) -> None:
        return None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(round(seconds, 3))
        self.now += max(0.0, seconds)


def spec(n: int, **kw: object) -> RunSpec:
    return RunSpec(
        model="m",
        cases=cases(n),
        suite_kind="markdown",
        suite_path="/s",
        settings=RecordedSettings(seed=1),
        prompt_hash="p",
        batch="openai",
        **kw,  # type: ignore[arg-type]
    )


async def run_batch(
    store: Store, protocol: Scripted, the_spec: RunSpec, clock: Clock, stop_after: int = 0
) -> list[Event]:
    provider = OpenAICompatibleProvider(
        ClientSettings(base_url="http://127.0.0.1:9/v1", model="m", max_retries=0, timeout=1)
    )
    for case in the_spec.cases:
        key = the_spec.request_hash(case)
        for repeat in range(the_spec.repeats):
            protocol.expected[f"r{key[:40]}-{repeat}"] = case.expected
    batching = Batching(
        protocol, provider, "m", "http://127.0.0.1:9/v1", PollTimer(first=FIRST), clock, clock
    )
    engine = Engine(the_spec, provider, store, batching=batching)

    async def sleep(seconds: float) -> None:
        await clock.sleep(seconds)
        if stop_after and len(clock.waits) >= stop_after:
            engine.stop("stopped by the test")

    batching.sleep = sleep
    try:
        return [event async for event in engine.events()]
    finally:
        await provider.aclose()


async def test_polls_back_off_and_wait_for_retry_after(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    protocol = Scripted(
        [
            Polled("in_progress", False, Counts(4)),
            PollFailed("HTTP 429: slow down", retry_after=90.0),
            Polled("in_progress", False, Counts(4, 2)),
        ]
    )
    clock = Clock()
    events = await run_batch(store, protocol, spec(4), clock)
    await store.close()
    assert clock.waits == [FIRST, FIRST * 1.5, 90.0, FIRST * 1.5**3]
    assert isinstance(events[-1], RunFinished) and events[-1].status is RunStatus.COMPLETED
    assert events[-1].summary.correct == 4
    failed_poll = [e for e in events if isinstance(e, BatchProgress)][2]
    assert failed_poll.batches[0].note == "HTTP 429: slow down"


async def test_requests_are_split_at_the_protocols_limit(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    protocol = Scripted(limit=3)
    events = await run_batch(store, protocol, spec(4, repeats=2), Clock())
    await store.close()
    assert [len(lines) for lines in protocol.sent] == [3, 3, 2]
    ids = [line.custom_id for lines in protocol.sent for line in lines]
    assert len(set(ids)) == 8 and all(len(i) <= 64 for i in ids)
    assert isinstance(events[-1], RunFinished) and events[-1].summary.correct == 8


async def test_a_batch_a_stopped_run_left_is_polled_at_once_and_not_sent_again(
    tmp_path: Path,
) -> None:
    store = await Store.open(tmp_path / "r.db")
    first = Scripted([Polled("in_progress", False, Counts(3))] * 5)
    events = await run_batch(store, first, spec(3), Clock(), stop_after=2)
    assert isinstance(events[-1], RunFinished) and events[-1].status is RunStatus.STOPPED
    assert await store.finished_keys(events[-1].run_id) == set()
    (kept,) = await store.batches_of_run(events[-1].run_id)
    assert kept.provider_id == "b1" and kept.read_at is None

    again = Scripted()
    again.sent = first.sent  # the provider still has the batch the first run sent
    clock = Clock()
    resumed = await run_batch(store, again, spec(3, resume=True), clock)
    await store.close()
    assert again.sent == first.sent and len(again.sent) == 1  # nothing sent again
    assert clock.waits == []  # polled at once: it may have ended meanwhile
    assert isinstance(resumed[-1], RunFinished) and resumed[-1].summary.correct == 3


async def test_a_batch_the_provider_lost_leaves_its_requests_as_errors(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    protocol = Scripted([BatchLost("HTTP 404: no such batch")])
    events = await run_batch(store, protocol, spec(2), Clock())
    rows = await store.run_results(1)
    await store.close()
    assert [row["outcome"] for row in rows] == ["error", "error"]
    assert "no longer has it" in str(rows[0]["error"]) and "--retry-errors" in str(rows[0]["error"])
    assert isinstance(events[-1], RunFinished) and events[-1].summary.no_answer


async def test_a_batch_taken_up_for_part_of_it_stays_open_for_the_rest(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    first = Scripted([Polled("in_progress", False, Counts(3))] * 5)
    stopped = await run_batch(store, first, spec(3), Clock(), stop_after=1)
    assert isinstance(stopped[-1], RunFinished) and stopped[-1].status is RunStatus.STOPPED

    part = Scripted()
    part.sent = first.sent
    one = spec(1)  # another run asking the first case only: its answer is in that batch
    await run_batch(store, part, one, Clock())
    (kept,) = await store.batches_of_run(stopped[-1].run_id)
    assert part.sent == first.sent and kept.read_at is None  # the rest still wait in it

    rest = Scripted()
    rest.sent = first.sent
    resumed = await run_batch(store, rest, spec(3, resume=True), Clock())
    (closed,) = await store.batches_of_run(stopped[-1].run_id)
    await store.close()
    assert rest.sent == first.sent and len(rest.sent) == 1  # never sent again
    assert isinstance(resumed[-1], RunFinished) and resumed[-1].summary.correct == 3
    assert closed.read_at is not None
