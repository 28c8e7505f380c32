"""What each run was asked with, as the report shows it: the settings that mean something for
the run, those every run shares shown once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from secbench_tui.core.models import SuiteKind
from secbench_tui.core.results.report.data import BASELINE_PREFIX, Contender, VdbContender
from secbench_tui.core.store.runs import RunRecord

# VulDetectBench's for a markdown suite, the markdown suite's for VulDetectBench.
ENDPOINT_SETTINGS = frozenset(
    {"base_url", "temperature", "max_tokens", "response_format", "max_retries", "timeout"}
    | {"reasoning_effort", "reasoning_model", "request_style"}
)
VDB_ONLY_SETTINGS = frozenset({"tasks", "method", "vdb_scoring"})
MARKDOWN_ONLY_SETTINGS = frozenset({"apps"})
SHOWN_ELSEWHERE = frozenset({"leak"})  # the leak check has its own section, first


def _setting_text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return value if isinstance(value, str) else json.dumps(value)


def applicable_settings(run: RunRecord) -> list[tuple[str, str]]:
    """The run's recorded settings that mean something for it, as (name, text)."""
    skip: set[str] = set(SHOWN_ELSEWHERE)
    if run.suite_kind == SuiteKind.VULDETECTBENCH.value:
        skip |= MARKDOWN_ONLY_SETTINGS
    else:
        skip |= VDB_ONLY_SETTINGS
    if run.model_name.startswith(BASELINE_PREFIX):
        skip |= ENDPOINT_SETTINGS
    return [
        (key, _setting_text(value))
        for key, value in run.settings.as_dict().items()
        if key not in skip and value is not None
    ]


def shared_settings(contenders: Sequence[Contender | VdbContender]) -> list[tuple[str, str]]:
    """Settings every run shares (shown once); each contender keeps the rest in `settings`."""
    shown = {c.run.id: applicable_settings(c.run) for c in contenders}
    common: list[tuple[str, str]] = []
    if len(contenders) > 1:
        first, *rest = shown.values()
        common = [item for item in first if all(item in other for other in rest)]
    for c in contenders:
        c.settings = [item for item in shown[c.run.id] if item not in common]
    return common
