"""Offline baselines: answers that need no key and no network.

They are recorded like any model, so a report can show chance level next to real models:
a model that does not beat `baseline/random` has learnt nothing the suite measures.

Two answer with code too, for `--task fix` (verdict schema 4), as its floor and its ceiling:
`baseline/echo` returns the code unchanged (and calls it good), so none of its fixes can be
secure where the case is bad; `baseline/twin` returns the nearest compliant twin of the case
(a good case of its scenario: `core.suites.twins`), whose fixes are proven by construction.

`baseline/random-exploit` answers `bad` with a random SPEC rule, as `always-bad` does, and an
exploit whose every parameter is drawn at random from the values the scenario's own parameter
sets give it (the fixtures' ids, roles and states): the chance level of `--prove-findings`.
"""

from __future__ import annotations

import hashlib
import json
import random
from functools import cache
from pathlib import Path

from secbench_tui.core.models import Case, Completion, SuiteKind
from secbench_tui.core.run.providers.base import RetryCallback

BASELINES = (
    "baseline/always-bad",
    "baseline/always-good",
    "baseline/random",
    "baseline/echo",
    "baseline/twin",
    "baseline/random-exploit",
)


def is_baseline(model: str) -> bool:
    return model in BASELINES


class BaselineProvider:
    """Answers every case by a fixed policy; `baseline/random` is seeded per case.

    The random answer depends only on the seed and the case id, so a rerun, a resumed run or a
    run with concurrency gives the same answers.
    """

    def __init__(self, model: str, seed: int | None = None) -> None:
        if not is_baseline(model):
            raise ValueError(f"unknown baseline {model!r}; choose one of {', '.join(BASELINES)}")
        self.name = model
        self.reports_cost = True  # free, and it says so
        self.policy = model.split("/", 1)[1]
        self.seed = 0 if seed is None else seed

    def _rng(self, case: Case) -> random.Random:
        digest = hashlib.sha256(f"{self.seed}:{case.case_id}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def answer(self, case: Case) -> str:
        rng = self._rng(case)
        if case.kind is SuiteKind.VULDETECTBENCH:
            from secbench_tui.core.vuldetectbench.loader import baseline_answer

            return baseline_answer(case, self.policy, rng)
        if self.policy in ("echo", "twin"):
            return json.dumps(self._fix(case))
        if self.policy in ("always-bad", "random-exploit"):
            verdict = "bad"
        elif self.policy == "always-good":
            verdict = "good"
        else:
            verdict = rng.choice(("good", "bad"))
        answer: dict[str, object] = {
            "explanation": f"{self.name} answers without reading.",
            "assessment": verdict,
        }
        if verdict == "good":
            answer["violations"] = []
        elif case.spec_rules:  # a rule of the SPEC drawn at random, and a line of the code
            lines = [line.strip() for line in case.code.split("\n") if line.strip()]
            quote = rng.choice(lines) if lines else ""
            violation: dict[str, object] = {"rule": rng.choice(case.spec_rules), "quote": quote}
            if self.policy == "random-exploit":  # verdict schema 3: an exploit drawn at random
                violation["exploit"] = random_exploit(case, rng)
            answer["violations"] = [violation]
        # a SPEC without a numbered list of rules: no violation can be named (schema 1)
        return json.dumps(answer)

    def _fix(self, case: Case) -> dict[str, object]:
        """A fix reply: the code unchanged (echo), or the nearest twin's (twin; a case with
        no good twin, or a good case, is returned unchanged)."""
        code, verdict = case.code, "good"
        if self.policy == "twin" and case.expected == "bad":
            from secbench_tui.core.suites.twins import nearest, twins_of

            twin = nearest(case.code, twins_of(Path(case.test_file), case.app))
            if twin is not None:
                code, verdict = twin.code, "bad"
        answer: dict[str, object] = {
            "explanation": f"{self.name} answers without reading.",
            "assessment": verdict,
            "violations": [],
        }
        if verdict == "bad" and case.rule is not None:  # the gold rule, on its first gold line
            lines = case.code.split("\n")
            at = case.gold_lines[0] - 1 if case.gold_lines else 0
            quote = lines[at].strip() if 0 <= at < len(lines) else ""
            answer["violations"] = [{"rule": case.rule, "quote": quote}]
        elif verdict == "bad":  # a case naming no rule: no violation can be named (schema 1)
            del answer["violations"]
        answer["fixed_code"] = code
        return answer

    async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
        text = self.answer(case)
        return Completion(
            text=text,
            status=200,
            finish_reason="stop",
            prompt_tokens=0,
            completion_tokens=0,
            cost=0.0,
            served_model=self.name,
            provider="offline",
            latency_ms=0.0,
        )

    async def aclose(self) -> None:
        return None


@cache
def _app_data(folder: str, app: str) -> object:
    from secbench_tui.core.verify.data import load_app_data

    return load_app_data(app, Path(folder))[0]


def random_exploit(case: Case, rng: random.Random) -> dict[str, object] | None:
    """An exploit of the case's scenario, each parameter drawn from the values its scenario's
    sets give it (for a Python app: method, path, caller, body... each drawn apart); None
    when the case has no verification data."""
    from secbench_tui.core.verify.data import AppData, scenario_of
    from secbench_tui.core.verify.exploit_plan import exploit_json

    data = _app_data(str(Path(case.test_file).parent), case.app)
    name = scenario_of(case.case_id)
    if not isinstance(data, AppData) or name not in data.scenarios:
        return None
    values: dict[str, list[object]] = {}
    for params in data.scenarios[name].parameters:
        for key, value in params.items():
            values.setdefault(key, []).append(value)
    drawn = {key: rng.choice(seen) for key, seen in sorted(values.items())}
    return exploit_json(drawn, data.harness is not None)
