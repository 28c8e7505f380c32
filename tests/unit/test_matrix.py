"""The matrix orchestrator over a real SQLite file: shared limits per model, per-model aborts,
and the prompt name in the reuse keys (including for databases written before it existed)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from secbench_tui.core.models import Case, Completion, RecordedSettings
from secbench_tui.core.results.summary import worst_status
from secbench_tui.core.run.engine import Engine, RunSpec
from secbench_tui.core.run.events import CaseFinished, RunFinished
from secbench_tui.core.run.matrix import Matrix, MatrixEvent, PlannedRun
from secbench_tui.core.run.providers.base import RetryCallback, RunAborted
from secbench_tui.core.run.record import latest_run
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.values import LEGACY_PROMPT_NAME, text_hash
from secbench_tui.core.suites.prompts import (
    PromptError,
    bundled_prompt,
    bundled_prompt_names,
    resolve_prompts,
)
from secbench_tui.core.suites.verdict import verdict_schema
from tests.unit.test_engine import cases, verdict


class Counting:
    """Answers after a pause and counts how many of its requests are in flight at once."""

    reports_cost = False

    def __init__(self, name: str, peaks: Counter[str], abort: bool = False) -> None:
        self.name = name
        self.peaks = peaks
        self.abort = abort
        self.now: Counter[str] = Counter()

    async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
        if self.abort:  # once: the model's other run goes on unless the matrix stops it
            self.abort = False
            raise RunAborted(f"model {self.name!r} is not available")
        self.now[self.name] += 1
        self.now["all"] += 1
        self.peaks[self.name] = max(self.peaks[self.name], self.now[self.name])
        self.peaks["all"] = max(self.peaks["all"], self.now["all"])
        await asyncio.sleep(0.01)
        self.now[self.name] -= 1
        self.now["all"] -= 1
        return Completion(text=verdict(case.expected))

    async def aclose(self) -> None:
        return None


def spec(model: str, prompt: str, n: int = 8, concurrency: int = 2) -> RunSpec:
    return RunSpec(
        model=model,
        cases=cases(n),
        suite_kind="markdown",
        suite_path="/s",
        settings=RecordedSettings(seed=1),
        prompt_hash=text_hash(prompt),
        prompt_name=prompt,
        concurrency=concurrency,
    )


async def drain(matrix: Matrix) -> list[MatrixEvent]:
    return [event async for event in matrix.events()]


async def test_a_models_runs_share_its_limit_and_models_run_together(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    peaks: Counter[str] = Counter()
    shared = Counter[str]()  # both providers write their in-flight counts to one tally
    one, two = Counting("a", peaks), Counting("b", peaks)
    one.now = two.now = shared
    plan = [PlannedRun(spec(m, p), prov) for m, prov in (("a", one), ("b", two)) for p in "xy"]
    events = await drain(Matrix(plan, store))
    await store.close()
    finished = [e.event for e in events if isinstance(e.event, RunFinished)]
    assert sorted(f.status for f in finished) == ["completed"] * 4
    assert peaks["a"] == 2 and peaks["b"] == 2  # two runs each, one limit of 2 per model
    assert peaks["all"] == 4  # the two models were asked at the same time
    assert {e.slot for e in events} == {0, 1, 2, 3}


class Logging(Counting):
    """Counts as `Counting` does and logs which run each request belongs to, as it is sent."""

    def __init__(self, name: str, peaks: Counter[str], log: list[str]) -> None:
        super().__init__(name, peaks)
        self.log = log

    async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
        self.log.append(self.name)
        return await super().complete(case, on_retry)


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_a_models_runs_take_turns_so_a_waiting_run_has_not_started(
    tmp_path: Path, concurrency: int
) -> None:
    store = await Store.open(tmp_path / "r.db")
    peaks: Counter[str] = Counter()
    log: list[str] = []
    plan = [
        PlannedRun(spec("a", p, n=9, concurrency=concurrency), Logging(p, peaks, log))
        for p in "xyz"
    ]
    plan.append(PlannedRun(spec("b", "x", n=9, concurrency=concurrency), Counting("b", peaks)))
    events = await drain(Matrix(plan, store))
    runs = {r.id: r for r in await store.runs()}
    await store.close()
    finished = [e.event for e in events if isinstance(e.event, RunFinished)]
    assert sorted(f.status for f in finished) == ["completed"] * 4
    # every request of a model's first run was sent before any of its second, and so on
    assert log == ["x"] * 9 + ["y"] * 9 + ["z"] * 9
    assert peaks["x"] + peaks["y"] + peaks["z"] <= 3 * concurrency
    by_slot = {e.slot: e.event.run_id for e in events if isinstance(e.event, RunFinished)}
    starts = [runs[by_slot[slot]].started_at for slot in range(3)]
    assert starts[0] < starts[1] < starts[2]  # each started when its first request went


async def test_an_abort_ends_that_models_runs_only(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    peaks: Counter[str] = Counter()
    bad, good = Counting("bad", peaks, abort=True), Counting("good", peaks)
    plan = [
        PlannedRun(spec("bad", "x", n=40), bad),
        PlannedRun(spec("bad", "y", n=40), bad),
        PlannedRun(spec("good", "x"), good),
        PlannedRun(spec("good", "y"), good),
    ]
    matrix = Matrix(plan, store)
    await drain(matrix)
    await store.close()
    statuses = {slot: f.status for slot, f in matrix.finished.items()}
    assert statuses[2] == statuses[3] == "completed"
    assert sorted((statuses[0], statuses[1])) == ["aborted", "stopped"]
    stopped = matrix.finished[0 if statuses[0] == "stopped" else 1]
    assert "aborted" in (stopped.message or "") and "not available" in (stopped.message or "")
    assert worst_status(list(statuses.values())) == "aborted"


async def test_a_database_from_before_prompt_names_keeps_its_reuse(tmp_path: Path) -> None:
    """Schema 2 -> 3: old runs are named `evaluation-prompt` and their keys re-derived, so
    the same prompt file asked again reuses what was paid for, and resume still finds them."""
    db = tmp_path / "r.db"
    store = await Store.open(db)
    old = spec("m", LEGACY_PROMPT_NAME, n=4)
    async for _ in Engine(old, Counting("m", Counter()), store).events():
        pass
    await store.close()
    # Make the file what version 2 wrote: no prompt_name, keys without it.
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE runs DROP COLUMN prompt_name")
    conn.execute("ALTER TABLE evaluations DROP COLUMN reasoning")  # version 4
    conn.execute("ALTER TABLE evaluations DROP COLUMN reasoning_tokens")
    conn.execute("ALTER TABLE evaluations DROP COLUMN notes")  # version 5
    conn.execute("DROP INDEX IF EXISTS ix_eval_case")  # version 6
    conn.execute("ALTER TABLE evaluations DROP COLUMN variant")  # version 7
    conn.execute("ALTER TABLE evaluations DROP COLUMN messages")  # version 8
    conn.execute("DROP TABLE request_texts")
    for case in old.cases:
        conn.execute(
            "UPDATE evaluations SET request_hash=? WHERE case_id=?",
            (_v2_request_hash(old, case), case.case_id),
        )
    conn.execute("UPDATE runs SET fingerprint=?, status='stopped'", (_v2_fingerprint(old),))
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()

    store = await Store.open(db)
    (run,) = await store.runs()
    assert run.prompt_name == LEGACY_PROMPT_NAME
    assert await store.latest_run(old.fingerprint) == run.id  # --resume finds it
    asking = Counting("m", Counter())
    finished = [e async for e in Engine(spec("m", LEGACY_PROMPT_NAME, n=4), asking, store).events()]
    await store.close()
    started = finished[0]
    assert started.reused == 4 and started.pending == 0  # type: ignore[union-attr]


async def test_results_keyed_under_a_prompt_name_are_found_by_its_words(tmp_path: Path) -> None:
    """Schemas 3 to 8 keyed reuse and resume on the prompt's name as well as its words: what
    they recorded under `first` is found by the same words named `second` (a stopped run is
    resumed, its answers reused), and not by other words."""
    db = tmp_path / "r.db"
    store = await Store.open(db)
    first = replace(spec("m", "first", n=4), prompt_hash=text_hash("Judge it."))
    async for _ in Engine(first, Counting("m", Counter()), store).events():
        pass
    await store.close()
    conn = sqlite3.connect(db)  # the keys as version 8 wrote them: with the name
    for case in first.cases:
        conn.execute(
            "UPDATE evaluations SET request_hash=? WHERE case_id=?",
            (text_hash(_v2_request_hash(first, case), "first"), case.case_id),
        )
    old_print = text_hash(_v2_fingerprint(first), "first")
    conn.execute("UPDATE runs SET fingerprint=?, status='stopped'", (old_print,))
    conn.commit()
    conn.close()

    store = await Store.open(db)
    (run,) = await store.runs()
    second = replace(first, prompt_name="second")
    other = replace(first, prompt_name="first", prompt_hash=text_hash("Judge it harshly."))
    assert second.fingerprint != old_print and second.request_hash(first.cases[0]) != (
        text_hash(_v2_request_hash(first, first.cases[0]), "first")
    )
    assert await latest_run(second, store) == run.id  # --resume finds it
    assert await latest_run(other, store) is None
    started = [e async for e in Engine(second, Counting("m", Counter()), store).events()][0]
    assert started.reused == 4 and started.pending == 0  # type: ignore[union-attr]
    await store.close()


def _v2_request_hash(spec: RunSpec, case: Case) -> str:
    """What version 2 stored: the request hash before the prompt name was part of it."""
    request = spec._request_settings()
    messages = json.dumps([[m.role, m.content] for m in case.prompt_messages()])
    return text_hash(
        spec.model,
        case.case_id,
        messages,
        str(case.structured),
        json.dumps(request, sort_keys=True),
    )


def _v2_fingerprint(spec: RunSpec) -> str:
    return text_hash(
        spec.model,
        spec.suite_kind,
        spec.suite_path,
        spec.suite_hash,
        spec.prompt_hash,
        json.dumps(spec._request_settings(), sort_keys=True),
        str(spec.repeats),
        spec.vdb_scoring,
    )


def test_the_schema_asks_for_the_explanation_before_the_verdict() -> None:
    schema = verdict_schema()
    assert list(schema["properties"]) == ["explanation", "assessment", "violations"]
    assert schema["required"] == ["explanation", "assessment", "violations"]
    item = schema["properties"]["violations"]["items"]
    assert item["required"] == ["rule", "quote"]
    assert item["properties"]["rule"]["type"] == "integer"
    for name in bundled_prompt_names():  # every bundled prompt asks for verdict schema 2
        text = bundled_prompt(name).text
        assert text.index('"explanation"') < text.index('"assessment"'), name
        assert text.index('"assessment"') < text.index('"violations"'), name
        assert '"rule"' in text and '"quote"' in text, name


def test_bundled_prompts_are_distinct_strategies() -> None:
    names = bundled_prompt_names()
    assert names[0] == "default"
    assert {"default", "step-by-step", "rule-by-rule", "attacker"} <= set(names)
    assert len({bundled_prompt(n).text for n in names}) == len(names)
    assert [p.name for p in resolve_prompts(["all"])] == names


def test_prompts_resolve_from_files_folders_and_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "p"
    folder.mkdir()
    for name in ("zeta", "alpha"):
        (folder / f"{name}.txt").write_text(name, encoding="utf-8")
    (folder / "readme.md").write_text("no", encoding="utf-8")
    found = resolve_prompts([str(folder), "attacker", str(folder / "alpha.txt")])
    assert [p.name for p in found] == ["alpha", "zeta", "attacker"]
    assert resolve_prompts([])[0].name == "default"  # no ./evaluation-prompt.txt here
    (tmp_path / "evaluation-prompt.txt").write_text("mine", encoding="utf-8")
    assert [(p.name, p.text) for p in resolve_prompts([])] == [("evaluation-prompt", "mine")]
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "alpha.txt").write_text("other words", encoding="utf-8")
    with pytest.raises(PromptError, match="two prompts are named 'alpha'"):
        resolve_prompts([str(folder), str(tmp_path / "q")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(PromptError, match="holds no"):
        resolve_prompts([str(tmp_path / "empty")])


class SlowSecond:
    """Answers the first case at once and every other after `wait` seconds."""

    reports_cost = False

    def __init__(self, wait: float) -> None:
        self.wait = wait

    async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
        if case.case_id != "c000.md":
            await asyncio.sleep(self.wait)
        return Completion(text=verdict(case.expected))

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize(("grace", "kept"), [(0.0, False), (30.0, True)])
async def test_a_stop_gives_the_requests_in_flight_the_grace_given(
    tmp_path: Path, grace: float, kept: bool
) -> None:
    """The second case answers 0.2 s after it is asked: a stop when the first has finished
    keeps it only when the grace outlasts it (no grace: cancelled, for --resume)."""
    store = await Store.open(tmp_path / "r.db")
    matrix = Matrix([PlannedRun(spec("m", "x", n=2), SlowSecond(0.2))], store, stop_grace=grace)
    async for tagged in matrix.events():
        if isinstance(tagged.event, CaseFinished):
            matrix.stop()
    stored = await store.finished_keys(matrix.finished[0].run_id)
    await store.close()
    assert ("c000.md", 0) in stored
    assert (("c001.md", 0) in stored) is kept
    assert matrix.finished[0].status == ("completed" if kept else "stopped")


class Paced:
    """Answers every case after `wait` seconds."""

    reports_cost = False

    def __init__(self, wait: float) -> None:
        self.wait = wait

    async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
        await asyncio.sleep(self.wait)
        return Completion(text=verdict(case.expected))

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_each_run_of_a_model_ends_when_its_own_last_case_is_stored(
    tmp_path: Path, concurrency: int
) -> None:
    """A model's runs take turns on one limit: the first run's end comes before any case of
    the last run has ended, not when the last run lets go of the limit."""
    store = await Store.open(tmp_path / "r.db")
    provider = Paced(0.02)
    plan = [PlannedRun(spec("a", p, n=6, concurrency=concurrency), provider) for p in "xyz"]
    order: list[tuple[int, str]] = []
    async for tagged in Matrix(plan, store).events():
        kind = "end" if isinstance(tagged.event, RunFinished) else "case"
        if isinstance(tagged.event, RunFinished | CaseFinished):
            order.append((tagged.slot, kind))
    await store.close()
    first_end = order.index((0, "end"))
    last_run_cases = [i for i, (slot, kind) in enumerate(order) if slot == 2 and kind == "case"]
    assert first_end < last_run_cases[0], order
