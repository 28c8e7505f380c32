"""The domain's nouns, shared by every part of the program.

Everything here is plain data: a `Case` to ask about, the `Completion` a model gave,
the `Evaluation` recorded for it. Front ends and the store exchange these, never dicts.

They are plain dataclasses (frozen where nothing changes them after they are made): the
program's own code builds them, from values already checked where they entered (a suite
file by its loader, a reply by the provider, a stored row by the store), and builds many of
them per run. The one that is read back from text, `ReasonScore`, is checked where it is
read (`ReasonScore.from_json`). What a run records of its settings (`RecordedSettings`) is a
pydantic model: written once per run, and read back from files any version may have written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Required, TypedDict, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from secbench_tui.core.case_names import scenario_of

T = TypeVar("T")


class Outcome(StrEnum):
    """Three outcomes of a verdict, plus an error when no usable reply came back."""

    CORRECT = "correct"
    WRONG = "wrong"
    UNPARSED = "unparsed"
    ERROR = "error"


class SuiteKind(StrEnum):
    MARKDOWN = "markdown"
    VULDETECTBENCH = "vuldetectbench"


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    role: str
    content: str


# A JSON object whose shape is someone else's (a JSON Schema, a server's reply, a line of a
# data file): parsed or written at the edge, where the program's own types are made from it.
JSONObject = dict[str, object]


class ChatMessage(TypedDict):
    role: str
    content: str


class ReasoningRequest(TypedDict):
    effort: str


class UsageRequest(TypedDict):
    include: bool


class ProviderRequest(TypedDict):
    require_parameters: bool


class ChatRequest(TypedDict, total=False):
    """The body of a chat completions request, as sent (and as matched against the bodies an
    adopted database of the original evaluator stored). Keys go out in the order set."""

    model: Required[str]
    messages: Required[list[ChatMessage]]
    response_format: JSONObject
    temperature: float
    max_tokens: int
    seed: int
    reasoning: ReasoningRequest  # OpenRouter's unified reasoning setting
    usage: UsageRequest  # OpenRouter: put the cost in the reply
    provider: ProviderRequest  # OpenRouter: only providers that honour every parameter


class VariantMeta(TypedDict):
    """A rewritten case's identity (`--rewrites`): its original case, the relation, the seed,
    the hash of its code, and whether the equivalence gate proved it."""

    original: str
    relation: str
    seed: int
    code_hash: str
    proven: bool


class CaseMeta(TypedDict, total=False):
    """What a case carries beside its text. VulDetectBench: the task, the case's position in
    the task's file, the record's `idx` and `cwe` as the file has them, the prompting method
    and (task 2) the options to choose from. A rewritten case: its identity."""

    task: int
    pos: int
    idx: str
    cwe: object
    method: str | None
    selection: str
    language: str
    variant: VariantMeta


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One question to put to a model, with the answer it is scored against.

    `app` groups cases in reports: the markdown suite's app folder, or `taskN` for
    VulDetectBench. `case_id` is unique within a suite and stable across runs: the
    path relative to the suite root for markdown cases, `taskN/POS` for VulDetectBench.

    A markdown case sends one user message: its app's `prompt_prefix` (the SPEC's prompt
    and the evaluation prompt, one string shared by every case of the app) and then its
    code. It is joined only when asked for, so a suite of 20,000 cases does not hold
    20,000 copies of the same SPEC. Cases with prompts of their own set `messages`.
    """

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
    meta: CaseMeta = field(default_factory=lambda: CaseMeta())  # built by the loaders
    # Why a bad case is bad (never sent to the model): the SPEC rule it breaks, the other
    # rules a careful reviewer could cite, the lines of its code where the flaw is (1-based),
    # and the numbers of its SPEC's rules. Empty for suites that do not name rules.
    rule: int | None = None
    also_rules: tuple[int, ...] = ()
    gold_lines: tuple[int, ...] = ()
    spec_rules: tuple[int, ...] = ()

    @property
    def scenario(self) -> str | None:
        """The case's scenario (`app/name` without `-NN-good.md`), which pairs cases up
        (`core.case_names`)."""
        return scenario_of(self.case_id)

    def prompt_messages(self) -> tuple[Message, ...]:
        """The messages sent to the model for this case."""
        if self.messages:
            return self.messages
        text = f"{self.prompt_prefix}\n\n{self.code}" if self.prompt_prefix else self.code
        return (Message(role="user", content=text),)


@dataclass(slots=True, kw_only=True)
class Completion:
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Citation:
    """One violation a reply names: the rule, the quote as written, and the lines of the
    case's code the quote points at (1-based). Empty `lines`: the quote was not located, and
    `note` says why (not in the code, too short, found more than once)."""

    rule: int
    quote: str = ""
    lines: tuple[int, ...] = ()
    note: str | None = None

    def stored(self) -> dict[str, object]:
        """The stored form: `note` only when there is one, as versions without it wrote."""
        data: dict[str, object] = {
            "rule": self.rule,
            "quote": self.quote,
            "lines": list(self.lines),
        }
        if self.note is not None:
            data["note"] = self.note
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasonScore:
    """Why the reply said what it said, scored against the case's gold reason.

    `given`: the reply kept verdict schema 2 (it listed its violations, none for good). `problem`:
    how it broke schema 2 (the case is then unparsed). `right_rule` / `right_line` are None
    when the case has no gold rule (a good case, or a suite that names no rules)."""

    given: bool = False
    citations: tuple[Citation, ...] = ()
    problem: str | None = None
    right_rule: bool | None = None
    right_line: bool | None = None

    @property
    def rules(self) -> tuple[int, ...]:
        """The rules cited, each once, in the reply's order."""
        return tuple(dict.fromkeys(c.rule for c in self.citations))

    def to_json(self) -> str:
        """The stored form (the `reasons` column): compact JSON, text as written (not
        escaped to ASCII), keys in declaration order, as every version has stored it."""
        data = {
            "given": self.given,
            "citations": [c.stored() for c in self.citations],
            "problem": self.problem,
            "right_rule": self.right_rule,
            "right_line": self.right_line,
        }
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> ReasonScore:
        """A stored `reasons` value read back and checked: ValueError (json's included) for
        anything that is not what `to_json` writes (a hostile or damaged file). Keys it does
        not know are ignored; keys it knows that are missing take their defaults."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("reasons: not a JSON object")
        citations = data.get("citations", [])
        if not isinstance(citations, list):
            raise ValueError("reasons.citations: not a list")
        return cls(
            given=_typed(data.get("given", False), bool, "given"),
            citations=tuple(_citation(c) for c in citations),
            problem=_maybe(data.get("problem"), str, "problem"),
            right_rule=_maybe(data.get("right_rule"), bool, "right_rule"),
            right_line=_maybe(data.get("right_line"), bool, "right_line"),
        )


def _typed(value: object, kind: type[T], name: str) -> T:
    """`value` if it is a `kind` (an int is not a bool, nor a bool an int), else ValueError."""
    if isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
        return value
    raise ValueError(f"reasons.{name}: {type(value).__name__}, not {kind.__name__}")


def _maybe(value: object, kind: type[T], name: str) -> T | None:
    return None if value is None else _typed(value, kind, name)


def _citation(data: object) -> Citation:
    if not isinstance(data, dict):
        raise ValueError("reasons.citations: an item is not a JSON object")
    lines = data.get("lines", [])
    if not isinstance(lines, list):
        raise ValueError("reasons.citations.lines: not a list")
    return Citation(
        rule=_typed(data.get("rule"), int, "citations.rule"),
        quote=_typed(data.get("quote", ""), str, "citations.quote"),
        lines=tuple(_typed(n, int, "citations.lines") for n in lines),
        note=_maybe(data.get("note"), str, "citations.note"),
    )


@dataclass(slots=True, kw_only=True)
class Scored:
    """A reply read against the case's expected answer (and its reason, for markdown cases),
    by the scoring of version `scoring_version` (0: the scoring before versions were kept)."""

    actual: str | None
    outcome: Outcome
    explanation: str | None = None
    scores: dict[str, float] = field(default_factory=dict)
    reason: ReasonScore | None = None
    scoring_version: int = 0


@dataclass(slots=True, kw_only=True)
class Evaluation:
    """One recorded result: a case, a repeat, a completion and its score."""

    run_id: int
    case: Case
    repeat: int = 0
    index: int = 0
    completion: Completion
    scored: Scored
    timestamp: str = ""
    reused: bool = False


class Recorded(BaseModel):
    """A record of how a run was made: the keys it was given are the keys it keeps (a key a
    run does not record is left out, not written as null), and a key a later version
    records is kept as it is (`extra="allow"`)."""

    model_config = ConfigDict(extra="allow", defer_build=True)  # built when first used

    def as_dict(self) -> JSONObject:
        """The keys recorded, by name in sorted order, as the database keeps them."""
        return dict(sorted(self.model_dump(exclude_unset=True).items()))


class RewritesRecord(Recorded):
    """What a run records of `--rewrites`: the relations and their kinds, the seed, how many
    variants were made, how many the equivalence gate dropped (by relation) or let through
    unproven, the first reasons it gave, and the engine that proved them."""

    relations: list[str] = []
    kinds: dict[str, str] = {}
    seed: int | None = None
    made: int = 0
    dropped: dict[str, int] = {}
    unproven: int = 0
    reasons: list[list[str]] = []  # (variant id, why)
    engine: str | None = None


class RecordedSettings(Recorded):
    """How a run was made, as it records it (`runs.settings`): what `config.RunSettings.
    recorded` gives (the fields declared with a `Record`), with `repeats`, `concurrency` and
    `vdb_scoring` added by the engine. Read back from a database an older version wrote, a key
    may be missing (`from_stored`)."""

    seed: int | None = None
    limit: int | None = None
    apps: list[str] | None = None
    tasks: list[int] | None = None
    method: str | None = None
    base_url: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_retries: int | None = None
    timeout: float | None = None
    reasoning_effort: str | None = None
    reasoning_model: bool | None = None
    response_format: str | None = None
    request_style: str | None = None
    repeats: int | None = None
    concurrency: int | None = None
    vdb_scoring: str | None = None
    api: str | None = None  # "python": recorded through the vuldetectbench library API
    prompt_name: str | None = None  # where older versions recorded the prompt's name
    rewrites: RewritesRecord | None = None  # --rewrites: relations, seed, what the gate dropped
    leak: JSONObject | None = None  # the suite's surface cues, checked before the run
    task: str | None = None  # --task fix (recorded only then): the corrected code was asked
    batch: str | None = None  # --batch: the batch protocol the cases went through

    def stored(self) -> str:
        """The `runs.settings` text: the keys recorded, sorted, as every version wrote them."""
        return json.dumps(self.as_dict(), sort_keys=True)

    @classmethod
    def from_stored(cls, data: JSONObject) -> RecordedSettings:
        """Settings read back from a database (any version's, or a damaged one): a known key
        whose value is not of its type reads as not recorded, and the rest as recorded."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            bad = {error["loc"][0] for error in exc.errors() if error["loc"]}
            return cls.model_validate({k: v for k, v in data.items() if k not in bad})


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
