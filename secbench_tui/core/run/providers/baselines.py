"""Offline baselines: answers that need no key and no network.

They are recorded like any model, so a report can show chance level next to real models:
a model that does not beat `baseline/random` has learnt nothing the suite measures.
"""

from __future__ import annotations

import hashlib
import json
import random

from secbench_tui.core.models import Case, Completion, SuiteKind
from secbench_tui.core.run.providers.base import RetryCallback

BASELINES = ("baseline/always-bad", "baseline/always-good", "baseline/random")


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
        if self.policy == "always-bad":
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
            answer["violations"] = [{"rule": rng.choice(case.spec_rules), "quote": quote}]
        # a SPEC without a numbered list of rules: no violation can be named (schema 1)
        return json.dumps(answer)

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
