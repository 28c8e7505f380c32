"""A run's recorded settings (`models.RecordedSettings`, a pydantic model): written as every
version wrote them, and read back from any file without losing what can be read."""

from __future__ import annotations

import json

from secbench_tui.config import Settings
from secbench_tui.core.models import RecordedSettings, RewritesRecord
from secbench_tui.core.store.runs import recorded_settings


def test_the_stored_text_is_the_keys_recorded_sorted_as_before() -> None:
    recorded = Settings(base_url="http://127.0.0.1:9/v1", temperature=0.3).run("m/x").recorded()
    keys = recorded.as_dict()
    assert "apps" in keys and keys["apps"] is None  # recorded as null: it applies, unset
    assert "tasks" not in keys and "method" not in keys  # not a VulDetectBench run
    assert recorded.stored() == json.dumps(keys, sort_keys=True)
    assert recorded_settings(recorded.stored()) == recorded


def test_keys_the_engine_adds_and_a_later_version_records_are_kept() -> None:
    recorded = RecordedSettings(seed=1).model_copy(update={"repeats": 2})
    assert recorded.as_dict() == {"repeats": 2, "seed": 1}
    later = recorded_settings('{"seed": 1, "from_the_future": {"x": [1]}}')
    assert later.as_dict() == {"from_the_future": {"x": [1]}, "seed": 1}
    with_rewrites = recorded.model_copy(update={"rewrites": RewritesRecord(made=3)})
    assert json.loads(with_rewrites.stored())["rewrites"] == {"made": 3}


def test_a_damaged_value_reads_as_not_recorded_and_the_rest_as_recorded() -> None:
    text = json.dumps(
        {
            "limit": "many",
            "apps": ["shop"],
            "tasks": [1, "x"],
            "rewrites": {"made": "three"},
            "temperature": "0.5",  # read as the number it says
            "note": "\x1b[2J",  # not ours: kept as it is
        }
    )
    read = recorded_settings(text)
    assert read.as_dict() == {"apps": ["shop"], "note": "\x1b[2J", "temperature": 0.5}
    assert read.limit is None and read.tasks is None and read.rewrites is None
    for junk in ("[1, 2]", "not json", "", None, '{"seed": 1e999}'):
        assert recorded_settings(junk).as_dict() == {}
