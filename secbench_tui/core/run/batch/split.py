"""A run's requests cut into batches within the provider's limits, and the ids that tag them.

A request's id is made from its request hash and its repeat (`custom_id`): the same request is
tagged the same way in every batch and every run, and the store's mapping (`batch_requests`)
takes an id back to its case, prompt, repeat and variant. Ids fit every provider's rule (1-64
of `a-zA-Z0-9_-`, Anthropic's being the strictest).

Batches are filled in the order given, each up to the provider's number of requests and bytes
(`Limits`), less `ENVELOPE` bytes for what wraps the requests (the model, the endpoint, JSON
brackets). A request too large for a batch on its own goes in none: it is said, not sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from secbench_tui.core.run.batch.protocol import Limits, Line

ENVELOPE = 4096
HASH_CHARS = 40  # of the request hash's 64: ids stay within 64 characters with any repeat


def custom_id(request_hash: str, repeat: int) -> str:
    """`r<first 40 hex of the request hash>-<repeat>`."""
    return f"r{request_hash[:HASH_CHARS]}-{repeat}"


def split(
    lines: Sequence[Line], limits: Limits, size: Callable[[Line], int]
) -> tuple[list[list[Line]], list[Line]]:
    """The batches to send, in order, and the lines too large to go in any."""
    room = limits.bytes - ENVELOPE
    batches: list[list[Line]] = []
    oversize: list[Line] = []
    current: list[Line] = []
    used = 0
    for line in lines:
        bytes_ = size(line)
        if bytes_ > room:
            oversize.append(line)
            continue
        if current and (len(current) >= limits.requests or used + bytes_ > room):
            batches.append(current)
            current, used = [], 0
        current.append(line)
        used += bytes_
    if current:
        batches.append(current)
    return batches, oversize
