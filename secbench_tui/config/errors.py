"""A `pydantic.ValidationError` of the settings as one line: each problem named by its flag,
in our words with the fix, as the command line and the app's setup screen both say it.

pydantic's own words ("Input should be greater than 0") name neither the flag nor the value
given; its error types (`greater_than`, `int_parsing`, ...) map to ours here. A check of our
own (`config.checks`) already speaks our words: its message is said as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from secbench_tui.config.flags import Flag
from secbench_tui.config.models import Settings

# pydantic's error type -> what we say, with the error's context (its bounds) filled in;
# " (got <value>)" follows each but `missing` and `extra_forbidden`, which have no value
_OUR_WORDS = {
    "greater_than": "give a number above {gt}",
    "greater_than_equal": "give {ge} or more",
    "less_than": "give a number below {lt}",
    "less_than_equal": "give {le} or less",
    "finite_number": "must be a finite number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "int_type": "must be a whole number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": "must be text",
    "list_type": "must be a list",
    "literal_error": "must be {expected}",
    "missing": "is required",
    "extra_forbidden": "is not a setting",
}
_NO_VALUE = ("missing", "extra_forbidden")


def flag_name(model: type[BaseModel], field: str) -> str:
    """The flag (or environment variable) a field is given by: `max_retries` -> --max-retries."""
    info = model.model_fields.get(field)
    flag = next((m for m in info.metadata if isinstance(m, Flag)), None) if info else None
    if flag is not None and flag.name:
        return flag.name
    if flag is not None and flag.env and not flag.help:
        return flag.env  # set only in the environment: never shown
    return "--" + field.replace("_", "-")


def describe_error(
    exc: ValidationError,
    model: type[BaseModel] = Settings,
    named: Mapping[str, str] | None = None,
) -> str:
    """Every problem with the settings of `model`, each named by its flag, in one line;
    `named`: the fields given otherwise (from the environment), by what gave them."""
    problems = []
    for error in exc.errors(include_url=False):
        message = in_our_words(error)
        if error["loc"]:
            field = str(error["loc"][0])
            name = (named or {}).get(field) or flag_name(model, field)
            message = f"{name}: {message}"
        problems.append(message)  # a check across settings names its flags itself
    return "; ".join(problems)


def in_our_words(error: ErrorDetails) -> str:
    """One problem said with the fix and the value given; a check's own words as they are."""
    words = _OUR_WORDS.get(error["type"])
    if words is None:
        return error["msg"].removeprefix("Value error, ")
    context: dict[str, Any] = dict(error.get("ctx") or {})
    shown = {k: f"{v:g}" if isinstance(v, float) else v for k, v in context.items()}
    said = words.format(**shown)
    return said if error["type"] in _NO_VALUE else f"{said} (got {error['input']!r})"
