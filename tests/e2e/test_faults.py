"""Proof that a run survives a faulty provider: every case recorded once, and correctly.

The loopback server answers a third of all requests with 429s, 5xx, 200s with error bodies,
provider failures mid-answer and dropped connections, some of them late; a run with
concurrency 8 must still end with each case recorded exactly once, as the server finally
answered it, after exactly as many requests as its row says.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e import server as srv
from tests.e2e.harness import FAKE_KEY, by_case, run_cli, runs, write_suite
from tests.e2e.server import Behaviour, LoopbackServer

RA = 0.05  # Retry-After, seconds
PROGRESS = re.compile(r"^\[\s*\d+/\d+\]\s+(\S+)", re.MULTILINE)


def faults_for(i: int) -> tuple[Behaviour, ...]:
    """Half the cases meet one fault first: a third of all requests are faults."""
    ra = (("Retry-After", f"{RA}"),)
    cycle: list[tuple[Behaviour, ...]] = [
        (),
        (srv.rate_limited(RA),),
        (),
        (srv.server_error(500, retry_after=RA),),
        (),
        (srv.error_in_body(502, headers=ra),),
        (),
        (srv.dropped(),),
        (),
        (srv.server_error(503, retry_after=RA).after(0.1),),
        (),
        (srv.finish_error(headers=ra),),
    ]
    return cycle[i % len(cycle)]


def final_answer(i: int, expected: str) -> tuple[Behaviour, str]:
    """What the server ends up answering, and the verdict in it (every fifth case is wrong)."""
    verdict = expected if i % 5 else ("good" if expected == "bad" else "bad")
    shapes = (srv.answer, srv.fenced, srv.prose)
    behaviour = shapes[i % 3](verdict)
    if i % 4 == 2:
        behaviour = behaviour.after(0.05 * (i % 3 + 1))
    return behaviour, verdict


def test_a_third_of_requests_failing_at_concurrency_8_loses_and_repeats_nothing(
    tmp_path: Path,
) -> None:
    verdicts = {
        app: ["bad" if (i * 7 + len(app)) % 3 else "good" for i in range(20)]
        for app in ("billing", "clinic", "warehouse")
    }
    cases = write_suite(tmp_path / "suite", verdicts)
    plans: dict[str, tuple[int, str]] = {}  # case id -> (requests, verdict answered)
    with LoopbackServer(require_key=FAKE_KEY) as server:
        for i, case in enumerate(cases):
            faults = faults_for(i)
            final, verdict = final_answer(i, case.expected)
            server.script(case.marker, *faults, then=final)
            plans[case.case_id] = (len(faults) + 1, verdict)
        db = tmp_path / "results.db"
        result = run_cli(
            server.base_url,
            db,
            tmp_path / "suite",
            "--concurrency",
            "8",
            "--max-retries",
            "5",
            key=FAKE_KEY,
        )
        requests = server.completions()
        max_in_flight = server.max_in_flight

    assert result.returncode == 0, result.stderr
    faulty = [
        r
        for r in requests
        if r.status != 200 or r.behaviour in ("error_in_body", "finish_error", "dropped")
    ]
    assert len(faulty) * 3 == len(requests)  # the plan itself: a third are faults
    assert 1 < max_in_flight <= 8

    (run,) = runs(db)
    assert run["status"] == "completed"
    recorded = by_case(db)  # fails on a duplicate
    assert sorted(recorded) == sorted(c.case_id for c in cases)
    for case in cases:
        row = recorded[case.case_id]
        asked, verdict = plans[case.case_id]
        assert row["attempts"] == asked, case.case_id
        assert sum(1 for r in requests if case.marker in r.prompt) == asked, case.case_id
        assert row["actual_result"] == verdict, case.case_id
        assert row["outcome"] == ("correct" if verdict == case.expected else "wrong")
        assert row["error"] is None
        assert row["raw_reply"] is not None and verdict in row["raw_reply"]
    # Results are shown in case order whatever order the answers came back in.
    assert [m.group(1) for m in PROGRESS.finditer(result.stdout)] == [c.case_id for c in cases]
