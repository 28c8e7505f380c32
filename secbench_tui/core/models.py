"""The domain's nouns, shared by every part of the program.

Everything here is plain data: a `Case` to ask about, the `Completion` a model gave,
the `Evaluation` recorded for it. Front ends and the store exchange these, never dicts.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Outcome(StrEnum):
    """Three outcomes of a verdict, plus an error when no usable reply came back."""

    CORRECT = "correct"
    WRONG = "wrong"
    UNPARSED = "unparsed"
    ERROR = "error"


class SuiteKind(StrEnum):
    MARKDOWN = "markdown"
    VULDETECTBENCH = "vuldetectbench"


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: str
    content: str


class Case(BaseModel):
    """One question to put to a model, with the answer it is scored against.

    `app` groups cases in reports: the markdown suite's app folder, or `taskN` for
    VulDetectBench. `case_id` is unique within a suite and stable across runs: the
    path relative to the suite root for markdown cases, `taskN/POS` for VulDetectBench.

    A markdown case sends one user message: its app's `prompt_prefix` (the SPEC's prompt
    and the evaluation prompt, one string shared by every case of the app) and then its
    code. It is joined only when asked for, so a suite of 20,000 cases does not hold
    20,000 copies of the same SPEC. Cases with prompts of their own set `messages`.
    """

    model_config = ConfigDict(frozen=True)

    kind: SuiteKind
    app: str
    case_id: str
    test_file: str
    expected: str
    code: str
    messages: tuple[Message, ...] = ()
    prompt_prefix: str = ""
    description: str = ""
    structured: bool = True
    meta: dict[str, Any] = Field(default_factory=dict)

    def prompt_messages(self) -> tuple[Message, ...]:
        """The messages sent to the model for this case."""
        if self.messages:
            return self.messages
        text = f"{self.prompt_prefix}\n\n{self.code}" if self.prompt_prefix else self.code
        return (Message(role="user", content=text),)


class Completion(BaseModel):
    """What the endpoint answered for one case, after retries."""

    text: str | None = None
    error: str | None = None
    status: int | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    served_model: str | None = None
    provider: str | None = None
    latency_ms: float = 0.0
    attempts: int = 1
    reasoning: str | None = None  # the model's thinking, when the endpoint returns it
    reasoning_tokens: int | None = None  # usage.completion_tokens_details.reasoning_tokens
    # why a reply that arrived could not be read (it is scored unparsed, never guessed at)
    unreadable: str | None = None
    notes: str | None = None  # about the reply's numbers: e.g. a cost not believed


class Scored(BaseModel):
    """A reply read against the case's expected answer."""

    actual: str | None
    outcome: Outcome
    explanation: str | None = None
    scores: dict[str, float] = Field(default_factory=dict)


class Evaluation(BaseModel):
    """One recorded result: a case, a repeat, a completion and its score."""

    run_id: int
    case: Case
    repeat: int = 0
    index: int = 0
    completion: Completion
    scored: Scored
    timestamp: str = ""
    reused: bool = False


class RunStatus(StrEnum):
    """How a run stands. `interrupted`: marked running, but its process is gone; `imported`:
    migrated from a security-bench database; `unknown`: a value this version does not know
    (a database written by a later one)."""

    RUNNING = "running"
    COMPLETED = "completed"
    STOPPED = "stopped"
    ABORTED = "aborted"
    INTERRUPTED = "interrupted"
    IMPORTED = "imported"
    UNKNOWN = "unknown"

    @classmethod
    def of(cls, value: str | None) -> RunStatus:
        try:
            return cls(value or "")
        except ValueError:
            return cls.UNKNOWN
