"""The Store: one open secbench-tui database, put together from one part per job.

`await Store.open(path)`, then `await store.close()`. Opening, migrating and locking are
`connection`; the tables and migrations are `schema` and `migrations`; runs are `runs`;
writing results is `recording`; reading them for the screens, reports and exports is
`queries`; the comparison views are `comparison`; verified fixes (`--task fix`) are `fixes`;
the batches sent to batch APIs are `batches`; proven findings (`--prove-findings`) are
`findings`; the queue of a shared run's cases is `queue`, the rate each model's workers share
`pace` (a PostgreSQL store's alone).
"""

from __future__ import annotations

from secbench_tui.core.store.batches import BatchRecords
from secbench_tui.core.store.comparison import ComparisonQueries
from secbench_tui.core.store.findings import FindingQueries
from secbench_tui.core.store.fixes import FixQueries
from secbench_tui.core.store.pace import SharedRates
from secbench_tui.core.store.queries import ResultQueries
from secbench_tui.core.store.recording import ResultRecording
from secbench_tui.core.store.runs import RunQueries


class Store(
    RunQueries,
    ResultRecording,
    ResultQueries,
    ComparisonQueries,
    FixQueries,
    BatchRecords,
    FindingQueries,
    SharedRates,
):
    """One open database. Use `await Store.open(path)`, then `await store.close()`."""
