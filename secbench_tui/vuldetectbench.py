"""VulDetectBench for people who bring their own model, as the original library offers.

Scripts written for `vuldetectbench` need only a changed import::

    from secbench_tui.vuldetectbench import Agent, Tasks, VulDetectBench_Engine

    class SubAgent(Agent):
        def __call__(self, prompt: dict) -> str:
            return my_model(prompt["system"], prompt["user"])

    tasks = Tasks(data_dir="VulDetectBench/dataset/test", task_no=[1, 3], method=None)
    engine = VulDetectBench_Engine(model=SubAgent(), task_and_metrics=tasks,
                                   save_path="out", verbose=True)
    engine.run()

The run goes through the same engine and store as the command line: every reply is
recorded in the results database (`results.db` unless `db=` says otherwise) and can be
browsed in the terminal app and put in the HTML report. The report written to
`save_path/evaluation_report.json` (or printed when `save_path` is None) has the library's
shape and metric names, with the correct scoring by default (`scoring="library"` gives
the numbers the library itself reports). Differences from the library: a failing agent
call is recorded as an error and scores 0 instead of stopping the run; `verbose=False`
writes the short report instead of crashing; `run()` also returns the report.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from secbench_tui.core.models import (
    Case,
    Completion,
    Evaluation,
    RecordedSettings,
    RunStatus,
    SuiteKind,
)
from secbench_tui.core.results.summary import RunSummary
from secbench_tui.core.run.engine import Engine, RunSpec
from secbench_tui.core.run.events import CaseFinished, RunFinished
from secbench_tui.core.run.providers.base import RetryCallback
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.values import vdb_prompt_name
from secbench_tui.core.suites.prompts import sha256_text
from secbench_tui.core.vuldetectbench import DEFAULT_SCORING
from secbench_tui.core.vuldetectbench.loader import (
    TASKS,
    load_vuldetectbench,
    task_file,
    templates,
)
from secbench_tui.core.vuldetectbench.task_scores import aggregate_vuldetectbench, check_scoring

__all__ = ["Agent", "Tasks", "VulDetectBench_Engine"]

T = TypeVar("T")

# The library's metric names, per task: (per-sample, score key), then (overall, summary key).
_SAMPLE_METRICS: dict[int, list[tuple[str, str]]] = {
    1: [("hit", "hit")],
    2: [("Moderate Evaluation Score", "me"), ("Strict Evaluation Score", "se")],
    3: [("Token Recall", "recall")],
    4: [("Union Line Recall", "urs"), ("Line Recall", "ors")],
    5: [("Union Line Recall", "urs"), ("Line Recall", "ors")],
}
_OVERALL_METRICS: dict[int, list[tuple[str, str]]] = {
    1: [("Accuracy", "accuracy"), ("F1-Score", "f1")],
    2: [("Avg Moderate Evaluation Score", "me"), ("Avg Strict Evaluation Score", "se")],
    3: [("Macro Token Recall", "mar"), ("Micro Token Recall", "mir")],
    4: [("Avg Union Line Recall", "urs"), ("Avg Line Recall", "ors")],
    5: [("Avg Union Line Recall", "urs"), ("Avg Line Recall", "ors")],
}


class Agent(ABC):
    """Your model. `__call__` gets `{"system": ..., "user": ...}` and returns its reply."""

    @abstractmethod
    def __call__(self, prompt: dict[str, str]) -> str:
        """The model's answer to one prompt, as plain text."""


class Tasks:
    """The chosen tasks of a test set and their prompts.

    `task_no`: None for all five tasks, an int for one, a list for several. `method`:
    None for the plain prompts, "cot" or "few-shot" (tasks 3 to 5 only, as in the library).
    """

    def __init__(
        self,
        method: str | None = None,
        data_dir: str | Path | None = None,
        task_no: int | Sequence[int] | None = None,
    ) -> None:
        if data_dir is None:
            raise ValueError("Tasks needs data_dir: the folder with the task{N}_code.jsonl files")
        if task_no is None:
            self.task_no = list(TASKS)
        elif isinstance(task_no, int):
            self.task_no = [task_no]
        else:
            self.task_no = list(task_no)
        self.method = method
        self.data_dir = Path(data_dir)
        self.cases: list[Case] = load_vuldetectbench(self.data_dir, self.task_no, method)
        self.task_names = [f"Task{n}" for n in self.task_no]
        # A task with no samples would be reported as scoring 0: say so instead.
        empty = [task_file(self.data_dir, n) for n in self.task_no if not self.cases_of(n)]
        if empty:
            raise ValueError(
                f"{', '.join(map(str, empty))}: no samples; "
                "pick other tasks with task_no or point data_dir at the test set"
            )

    def __len__(self) -> int:
        return len(self.task_no)

    def cases_of(self, task: int) -> list[Case]:
        return [c for c in self.cases if c.meta["task"] == task]


class _AgentProvider:
    """Puts an `Agent` behind the engine's provider interface, one call at a time."""

    def __init__(self, agent: Agent, name: str) -> None:
        self.agent = agent
        self.name = name
        self.reports_cost = False  # an agent returns text only

    async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
        system, user = case.prompt_messages()
        prompt = {"system": system.content, "user": user.content}
        started = time.perf_counter()
        try:
            text = await asyncio.to_thread(self.agent, prompt)
        except Exception as exc:  # a failing case is data: recorded, scored 0
            return Completion(error=f"agent raised {type(exc).__name__}: {exc}")
        latency = (time.perf_counter() - started) * 1000
        if not isinstance(text, str):
            error = f"agent returned {type(text).__name__}, not str"
            return Completion(error=error, latency_ms=latency)
        return Completion(
            text=text, status=200, served_model=self.name, provider="agent", latency_ms=latency
        )

    async def aclose(self) -> None:
        return None


class VulDetectBench_Engine:  # noqa: N801 - the library's name, so scripts keep working
    """Runs an `Agent` on `Tasks` through secbench-tui's engine and store.

    Extra keyword arguments: `db` (results database path), `model_name` (how the run is
    named in the database and report; default `agent/<class name>`), `scoring`
    ("correct" or "library"), `concurrency` (agent calls in flight, in threads; default
    1), `reuse` (take replies already recorded for the same model name and prompt
    instead of calling the agent; default False).
    """

    def __init__(
        self,
        model: Agent,
        task_and_metrics: Tasks,
        verbose: bool = True,
        save_path: str | Path | None = None,
        *,
        db: str | Path = "results.db",
        model_name: str | None = None,
        scoring: str = DEFAULT_SCORING,
        concurrency: int = 1,
        reuse: bool = False,
    ) -> None:
        self.model = model
        self.tasks = task_and_metrics
        self.verbose = verbose
        self.save_path = save_path
        self.db = Path(db)
        self.model_name = model_name or f"agent/{type(model).__name__}"
        self.scoring = check_scoring(scoring)
        self.concurrency = concurrency
        self.reuse = reuse
        self.run_id: int | None = None
        self.summary = RunSummary()

    def _spec(self) -> RunSpec:
        tasks = self.tasks
        return RunSpec(
            model=self.model_name,
            cases=tasks.cases,
            suite_kind=SuiteKind.VULDETECTBENCH.value,
            suite_path=str(tasks.data_dir.resolve()),
            settings=RecordedSettings(tasks=tasks.task_no, method=tasks.method, api="python"),
            prompt_hash=sha256_text(f"vuldetectbench:{tasks.method}"),
            prompt_name=vdb_prompt_name(tasks.method),
            concurrency=self.concurrency,
            force=not self.reuse,
            vdb_scoring=self.scoring,
        )

    async def _run(self) -> tuple[list[Evaluation], RunFinished]:
        store = await Store.open(self.db)
        evaluations: list[Evaluation] = []
        finished: RunFinished | None = None
        try:
            engine = Engine(self._spec(), _AgentProvider(self.model, self.model_name), store)
            async for event in engine.events():
                if isinstance(event, CaseFinished):
                    evaluations.append(event.evaluation)
                elif isinstance(event, RunFinished):
                    finished = event
        finally:
            await store.close()
        assert finished is not None
        return evaluations, finished

    def run(self) -> Any:
        """Ask the agent every case, score, record, then save or print the report."""
        evaluations, finished = _run_sync(self._run())
        self.run_id, self.summary = finished.run_id, finished.summary
        if finished.status is RunStatus.ABORTED:
            raise RuntimeError(f"run {finished.run_id} aborted: {finished.message}")
        samples = [(int(e.case.meta["task"]), e.scored) for e in evaluations]
        report = self._report(evaluations, aggregate_vuldetectbench(samples, self.scoring))
        if self.save_path is None:
            print(report)
        else:
            folder = Path(self.save_path)
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / "evaluation_report.json"
            path.write_text(json.dumps(report, indent=2), encoding="utf-8")
            print(f"evaluation reports saved to {path}")
        return report

    def _report(self, evaluations: list[Evaluation], metrics: dict[str, Any]) -> Any:
        repos: list[dict[str, Any]] = []
        for task in self.tasks.task_no:
            summary = metrics.get(f"task{task}", {})
            overall = [{name: summary.get(key, 0.0)} for name, key in _OVERALL_METRICS[task]]
            counts = {k: summary.get(k, 0) for k in ("n", "errors", "unparsed", "crashes")}
            repo: dict[str, Any] = {
                "overall metrics": overall,
                "verbose": [_sample(e) for e in evaluations if e.case.meta["task"] == task],
                "task name": templates()["tasks"][str(task)]["name"],
                "run": {"run_id": self.run_id, "db": str(self.db), "scoring": self.scoring}
                | {k: v for k, v in counts.items() if k in summary},
            }
            repos.append(repo)
        if self.verbose:
            return repos
        return {r["task name"]: r["overall metrics"] for r in repos}


def _sample(evaluation: Evaluation) -> dict[str, Any]:
    case, scored = evaluation.case, evaluation.scored
    task = int(case.meta["task"])
    metrics = [
        {
            "single metric": name,
            "extracted answer": scored.actual or "",
            "score": scored.scores.get(key, 0.0),
        }
        for name, key in _SAMPLE_METRICS[task]
    ]
    sample: dict[str, Any] = {
        "id": case.meta["idx"],
        "case_id": case.case_id,
        "gold": case.expected,
    }
    sample |= {"metrics": metrics, "outcome": scored.outcome.value}
    if evaluation.completion.error:
        sample["error"] = evaluation.completion.error
    return sample


def _run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run, also from code already inside an event loop (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(coro))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=target, name="vuldetectbench-run")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
