"""Whether each run's largest request fits its model's context, by the catalog, before any
is sent. Every plan holds the overflows it finds (`Plan.overflows`); the estimate of what it will
cost (`estimate`, for --dry-run and the app's setup) counts tokens the same way, from here.

Tokens are estimated, not counted: the characters of the messages sent divided by
`CHARS_PER_TOKEN` (a common rule of thumb for English text and code with GPT-style
tokenizers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from secbench_tui.core.run.providers.baselines import is_baseline
from secbench_tui.core.run.spec import RunSpec
from secbench_tui.core.untrusted import inert_line

CHARS_PER_TOKEN = 4


def input_tokens(spec: RunSpec, index: int) -> int:
    case = spec.cases[index]
    chars = sum(len(m.content) for m in case.prompt_messages())
    return max(1, chars // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Overflow:
    """A run whose largest request is more than its model's context, by the catalog."""

    model: str
    prompt: str
    case_id: str
    tokens: int  # estimated, characters / CHARS_PER_TOKEN
    context: int

    def message(self) -> str:
        prompt = f"--prompt {inert_line(self.prompt)}: " if self.prompt else ""
        return (
            f"{prompt}the request for {inert_line(self.case_id)} (the prompt with the case) is "
            f"about {self.tokens:,} tokens (characters / {CHARS_PER_TOKEN}), more than the "
            f"{self.context:,}-token context of {inert_line(self.model)} in its catalog entry; "
            "shorten the prompt or choose a model with a larger context (--force sends it anyway)"
        )


def context_overflows(
    specs: Sequence[RunSpec], contexts: Mapping[str, int | None]
) -> list[Overflow]:
    """Each run whose largest request would not fit its model's context (None: not known)."""
    found: list[Overflow] = []
    for spec in specs:
        context = contexts.get(spec.model)
        if not context or not spec.cases or is_baseline(spec.model):
            continue
        largest = max(range(len(spec.cases)), key=lambda i: input_tokens(spec, i))
        tokens = input_tokens(spec, largest)
        if tokens > context:
            found.append(
                Overflow(spec.model, spec.prompt_name, spec.cases[largest].case_id, tokens, context)
            )
    return found
