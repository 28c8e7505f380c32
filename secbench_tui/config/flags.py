"""What a setting's declaration says beyond its type: its flag (`Flag`), its record (`Record`),
and how a flag's text is read into its value.

A field of the settings models (`config.models`) carries these in its `Annotated` metadata,
beside pydantic's own bounds; pydantic keeps them in `FieldInfo.metadata`, where the command
line (`cli.py`), the error messages (`config.errors`) and the run's record find them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

MATRIX = ("models", "prompts", "methods")  # what was asked, beside the options of each run
# The groups of `--help`, in the order it lists them.
MODE, RUN, ENDPOINT, SELECTION = (
    "what to do",
    "the run",
    "the endpoint",
    "report and export selection",
)
VDB_PLAIN = "plain"  # --method plain: the benchmark's plain prompts (no method)


@dataclass(frozen=True)
class Flag:
    """How a setting is given on the command line. Its name (`--max-retries` for
    `max_retries`), its type, choices and default come from the field itself."""

    help: str = ""
    group: str = RUN
    name: str | None = None  # the flag, when it is not the field's name
    parse: Callable[[str], Any] | None = None  # text -> value (argparse's `type`)
    many: bool = False  # repeatable, each `a,b`: the values in the order given
    nargs: int | None = None  # values the flag takes at once (`--migrate-db FROM TO`)
    metavar: str | None = None
    default: str | None = None  # the default in words, where the field's own says too little
    env: str | None = None  # the environment variable (or .env entry) read when not given


@dataclass(frozen=True)
class Record:
    """A setting a run records, and when: it changes what is asked or how it is scored.

    `applies`: `all` runs; `endpoint`: runs that ask a server (not offline baselines);
    `markdown` / `vuldetectbench`: runs of that kind of suite; `markdown-endpoint`: both.
    `sent`: the property holding the value actually sent, when it is not the field's own.
    """

    applies: Literal["all", "endpoint", "markdown", "vuldetectbench", "markdown-endpoint"]
    sent: str | None = None


# --- a flag's text -> its value (argparse's `type`; a ValueError is said as the flag's error)


def positive_seconds(value: str) -> float:
    try:
        if not value.isascii():  # Python's float() reads other scripts' digits too
            raise ValueError
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(seconds):
        raise ValueError(f"{value!r}: the number of seconds must be a finite number")
    if not 0 < seconds <= 3600:
        raise ValueError(f"{value!r}: give a number of seconds above 0 and at most 3600")
    return seconds


def csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def methods(value: str) -> list[str | None]:
    """`--method a,b`; `plain` is the benchmark's prompts without a method (None). An empty
    value stays, for the check to name the methods there are."""
    return [None if m == VDB_PLAIN else m for m in (csv(value) or [value])]


def numbers(what: str, example: str) -> Callable[[str], list[int]]:
    """`--runs 3,4`: at least one number (`--runs ""` selects nothing, never everything)."""

    def parse(value: str) -> list[int]:
        try:
            if not value.isascii():  # int() reads other scripts' digits too (`١` is 1)
                raise ValueError
            found = [int(part) for part in csv(value)]
        except ValueError:
            raise ValueError(f"takes {what}, e.g. {example}") from None
        if not found:
            raise ValueError(f"takes {what}, e.g. {example}")
        return found

    parse.__name__ = what  # argparse names the type in its message
    return parse


def names(what: str, example: str) -> Callable[[str], list[str]]:
    """`--models a/x,b/y`: at least one name (`--models ""` selects nothing, never all)."""

    def parse(value: str) -> list[str]:
        found = csv(value)
        if not found:
            raise ValueError(f"takes {what}, e.g. {example}")
        return found

    parse.__name__ = what
    return parse


def relations(value: str) -> list[str]:
    """`--rewrites a,b` or `all`, checked (sqlglot and libcst load only when it is given)."""
    from secbench_tui.core.rewrites.relations import parse_relations

    return list(parse_relations(value))


relations.__name__ = "relation names"
tasks = numbers("task numbers 1-5", "1,3")
run_ids = numbers("run ids", "3,4")
model_names = names("model names", "a/x,b/y")


def declared(model: type[BaseModel], kind: type[Any]) -> dict[str, Any]:
    """The fields of `model` declared with a `kind` (`Flag`, `Record`), in declaration order."""
    found: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        meta = next((m for m in info.metadata if isinstance(m, kind)), None)
        if meta is not None:
            found[name] = meta
    return found
