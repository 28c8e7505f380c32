"""Adaptive concurrency, watched from the server: a 429 halves the requests in flight.

Run in-process (the engine and the real HTTP client against the loopback server, a real
SQLite file) so the `Retrying` events can be read alongside the server's log.
"""

from __future__ import annotations

from pathlib import Path

from secbench_tui.config import RunSettings as Settings
from secbench_tui.core.run.engine import Engine
from secbench_tui.core.run.events import CaseFinished, Retrying, RunFinished
from secbench_tui.core.store.database import Store
from secbench_tui.lifecycle import make_provider
from secbench_tui.planning.plan import build_spec
from secbench_tui.planning.suites import load_suite
from tests.e2e import server as srv
from tests.e2e.harness import write_suite
from tests.e2e.server import LoopbackServer


async def test_a_rate_limit_halves_the_requests_in_flight(tmp_path: Path) -> None:
    cases = write_suite(tmp_path / "suite", {"app": ["bad", "good"] * 12})
    with LoopbackServer() as server:
        # The first wave of 8 is slow; the first case is rate limited once all 8 are in. The
        # 429 gives no Retry-After, so the cut lasts the 20 s cooldown: the rest of the run.
        server.script(cases[0].marker, srv.gated(8, srv.rate_limited(None)))
        for case in cases[1:8]:
            server.script(case.marker, then=srv.answer(case.expected).after(0.5))
        settings = Settings(
            model="openai/gpt-4o-mini",
            cases=tmp_path / "suite",
            db=tmp_path / "r.db",
            base_url=server.base_url,
            concurrency=8,
            max_retries=3,
        )
        store = await Store.open(settings.db)
        provider = make_provider(settings)
        engine = Engine(build_spec(settings, load_suite(settings)), provider, store)
        retries: list[Retrying] = []
        finished: list[CaseFinished] = []
        end: RunFinished | None = None
        try:
            async for event in engine.events():
                if isinstance(event, Retrying):
                    retries.append(event)
                elif isinstance(event, CaseFinished):
                    finished.append(event)
                elif isinstance(event, RunFinished):
                    end = event
        finally:
            await provider.aclose()
            await store.close()
        requests = server.completions()

    assert end is not None and end.status == "completed"
    assert len(finished) == len(cases)
    assert [r.notice.status for r in retries] == [429]
    assert retries[0].notice.rate_limited
    assert retries[0].limit == 4
    limited = next(r for r in requests if r.status == 429)
    assert limited.answered_at is not None
    first_wave = requests[:8]
    later = [
        r
        for r in requests
        if r.received_at > limited.answered_at and cases[0].marker not in r.prompt
    ]
    assert max(r.in_flight for r in first_wave) == 8
    assert later, "no case started after the rate limit"
    assert max(r.in_flight for r in later) <= 4
