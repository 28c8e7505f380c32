"""Settings: each declared once, as a field of a pydantic model; everything else derived from it.

`models` declares them (`Options`, `Settings`, `RunSettings`, `Command`): a field's type, default,
bounds and the `Flag` and `Record` in its metadata (`flags`) give the command-line flag, its
choices, its help with the default, its validation (with `checks`), and what a run records. The
command line (`cli.py`) builds its parser from these declarations and passes on only the flags
given, so the defaults there are the only ones; the terminal app's setup screen offers the same
choices and validates through the same models. `errors` says a validation error in one line;
`environment` reads the environment and `.env`.
"""

from secbench_tui.config.declared_settings import DeclaredSettings
from secbench_tui.config.environment import bundled_cases_dir, is_bundled_suite, load_env
from secbench_tui.config.errors import describe_error, flag_name
from secbench_tui.config.fix_command import FIX_FLAGS, FixCommand
from secbench_tui.config.flags import (
    ENDPOINT,
    MATRIX,
    MODE,
    RUN,
    SELECTION,
    VDB_PLAIN,
    Flag,
    Record,
    declared,
)
from secbench_tui.config.models import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TIMEOUT,
    REASONING_TIMEOUT,
    RECORDED,
    VDB_METHODS,
    Command,
    ExportFormat,
    Options,
    ReasoningEffort,
    RunSettings,
    Settings,
    VdbMethod,
    VdbScoring,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT",
    "ENDPOINT",
    "MATRIX",
    "MODE",
    "REASONING_TIMEOUT",
    "RECORDED",
    "RUN",
    "SELECTION",
    "VDB_METHODS",
    "VDB_PLAIN",
    "Command",
    "DeclaredSettings",
    "ExportFormat",
    "FIX_FLAGS",
    "FixCommand",
    "Flag",
    "Options",
    "ReasoningEffort",
    "Record",
    "RunSettings",
    "Settings",
    "VdbMethod",
    "VdbScoring",
    "bundled_cases_dir",
    "declared",
    "describe_error",
    "flag_name",
    "is_bundled_suite",
    "load_env",
]
