"""The `--batch` settings' declarations (issue 35), kept beside each other.

Each is a typed field as `config.models` declares every setting (its type, bounds and `Flag`),
written here as an annotated type that `Options` gives its name and default; what they do is
`core.run.batch`.
"""

from typing import Annotated

from pydantic import Field

from secbench_tui.config.flags import ENDPOINT, Flag
from secbench_tui.core.run.batch.protocol import BatchApi

BatchSwitch = Annotated[
    bool,
    Flag(
        "ask through the provider's batch API: about half the price, the answers within "
        "24 hours; the command waits (or stop it: --resume collects them)",
        group=ENDPOINT,
    ),
]
BatchApiChoice = Annotated[
    BatchApi,
    Flag(
        "with --batch: the batch protocol; auto: OpenRouter's for openrouter.ai, "
        "Anthropic's for api.anthropic.com, else OpenAI's (/files and /batches)",
        group=ENDPOINT,
    ),
]
BatchPollSeconds = Annotated[
    float,
    Flag(
        "with --batch: seconds before a new batch is first polled; each later poll waits "
        "1.5 times longer, up to 10 minutes",
        group=ENDPOINT,
        metavar="S",
    ),
    Field(gt=0, le=3600),
]
