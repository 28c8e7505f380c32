"""Half the price: a run's cases sent through a provider's batch API (`--batch`).

One module per protocol (`openrouter`: requests and results inline; `openai`: a JSONL file
and result files, which other OpenAI-compatible servers copy; `anthropic`: Message Batches),
what they share (`protocol`, `transport`), the batches cut within the provider's limits
(`split`), the polling timer (`polling`), the run itself (`runner`) and its progress as text
(`progress`). The store keeps the batches and what each of their requests asked
(`core.store.batches`).
"""

from __future__ import annotations

from secbench_tui.core.run.batch.anthropic import AnthropicBatches
from secbench_tui.core.run.batch.anthropic import headers_for as anthropic_headers
from secbench_tui.core.run.batch.openai import OpenAIBatches
from secbench_tui.core.run.batch.openrouter import OpenRouterBatches
from secbench_tui.core.run.batch.protocol import BatchApi, BatchProtocol, ProtocolName
from secbench_tui.core.run.batch.transport import BatchHttp

__all__ = ["BatchApi", "BatchProtocol", "ProtocolName", "make_protocol"]


def make_protocol(
    name: ProtocolName,
    *,
    base_url: str,
    model: str,
    headers: dict[str, str],
    key: str | None,
    timeout: float,
) -> BatchProtocol:
    """The batch API of `name` at `base_url`. `headers`: what the live run sends (its key
    among them); Anthropic's own API takes its key and version in headers of its own."""
    if name == "anthropic":
        agent = headers.get("User-Agent", "secbench-tui")
        return AnthropicBatches(BatchHttp(base_url, anthropic_headers(key, agent), timeout))
    http = BatchHttp(base_url, headers, timeout)
    if name == "openrouter":
        return OpenRouterBatches(http, model)
    return OpenAIBatches(http)
