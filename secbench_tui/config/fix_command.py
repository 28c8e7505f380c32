"""`secbench-tui fix`: its one setting of its own, and the run's and `--verify`'s it shares.

Declared as every setting is (`config.models`): the command line builds `secbench-tui fix`'s
parser from these declarations (`cli.build_fix_parser`).
"""

from typing import Annotated

from secbench_tui.config.declared_settings import DeclaredSettings
from secbench_tui.config.flags import MODE, Flag


class FixCommand(DeclaredSettings):
    """`secbench-tui fix`: what it does besides proposing (the suite, the model, the endpoint
    and the PostgreSQL are the run's and `--verify`'s own flags: `FIX_FLAGS`)."""

    apply: Annotated[
        bool,
        Flag(
            "apply the proposals waiting in the suite (each <case>.md.proposed replaces its"
            " case file); with --model, after proposing",
            group=MODE,
        ),
    ] = False


# The flags of `secbench-tui fix`, declared once above (Options, Settings, Command).
FIX_FLAGS = (
    "cases",
    "apps",
    "filters",
    "models",
    "base_url",
    "temperature",
    "max_tokens",
    "reasoning_effort",
    "seed",
    "response_format",
    "max_retries",
    "retry_backoff",
    "timeout",
    "pg_url",
    "verify_deadline",
)
