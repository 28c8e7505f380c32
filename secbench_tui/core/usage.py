"""What a reply says it consumed: tokens, cost, the model that served it, its reasoning.

Read from an OpenAI-compatible reply body by the provider, and from the original evaluator's
stored replies when its databases are adopted; every number passes through `believable`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from secbench_tui.core import believable
from secbench_tui.core.models import JSONObject


@dataclass(frozen=True)
class Reasoning:
    """What a reply says about the model's thinking: its text and its token count.

    The text is `message.reasoning` (OpenRouter), `reasoning_content` (vLLM, llama.cpp,
    DeepSeek) or the text of `reasoning_details` (OpenRouter's structured form), whichever
    comes first; the count is `usage.completion_tokens_details.reasoning_tokens`.
    """

    text: str | None = None
    tokens: int | None = None

    @classmethod
    def of(cls, data: JSONObject, message: Any) -> Reasoning:
        return cls(_reasoning_text(message), _reasoning_tokens(data))


def _reasoning_text(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    for key in ("reasoning", "reasoning_content"):
        value = message.get(key)
        if isinstance(value, str) and value.strip():
            return value
    details = message.get("reasoning_details")
    if isinstance(details, list):
        parts = [
            part
            for item in details
            if isinstance(item, dict)
            for part in (item.get("text"), item.get("summary"))
            if isinstance(part, str) and part
        ]
        if parts:
            return "\n\n".join(parts)
    return None


def _reasoning_tokens(data: JSONObject) -> int | None:
    usage = data.get("usage")
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    return believable.tokens(details.get("reasoning_tokens")) if isinstance(details, dict) else None


@dataclass
class Usage:
    """What attempts consumed: a truncated or failed reply may still be billed."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    served_model: str | None = None
    provider: str | None = None
    notes: list[str] = field(default_factory=list)  # numbers not believed, for the case

    @classmethod
    def of(cls, data: JSONObject) -> Usage:
        """The usage a reply reports; a number not believable is None, with a note."""
        raw = data.get("usage")
        usage: JSONObject = raw if isinstance(raw, dict) else {}
        names = ("prompt_tokens", "completion_tokens", "cost")
        notes = [note for name in names if (note := believable.doubt(name, usage.get(name)))]
        return cls(
            prompt_tokens=believable.tokens(usage.get("prompt_tokens")),
            completion_tokens=believable.tokens(usage.get("completion_tokens")),
            cost=believable.cost(usage.get("cost")),
            served_model=model if isinstance(model := data.get("model"), str) else None,
            provider=provider if isinstance(provider := data.get("provider"), str) else None,
            notes=notes,
        )

    @property
    def note(self) -> str | None:
        """The notes of every attempt, as recorded on the case."""
        return "; ".join(self.notes) or None

    def add(self, other: Usage) -> None:
        """Sum the counts; keep the latest model and provider that answered."""
        for name in ("prompt_tokens", "completion_tokens", "cost"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None:
                setattr(self, name, theirs if mine is None else mine + theirs)
        self.served_model = other.served_model or self.served_model
        self.provider = other.provider or self.provider
        self.notes.extend(other.notes)
