"""From settings to a run: limits, recorded settings, usage errors."""

from pathlib import Path

import pytest
from pydantic import SecretStr

from secbench_tui.config import RunSettings, Settings
from secbench_tui.core.models import Case, Message, RecordedSettings, SuiteKind
from secbench_tui.planner import (
    UsageError,
    build_spec,
    first_cases,
    load_suite,
    make_provider,
    plan_settings,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "suite"


def case(app: str, i: int) -> Case:
    return Case(
        kind=SuiteKind.VULDETECTBENCH,
        app=app,
        case_id=f"{app}/{i}",
        test_file="t",
        expected="YES",
        code="c",
        messages=(Message(role="user", content="u"),),
    )


def test_limit_is_per_task_for_vuldetectbench_and_overall_otherwise() -> None:
    cases = [case("task1", i) for i in range(5)] + [case("task2", i) for i in range(5)]
    assert [c.case_id for c in first_cases(cases, 2, per_app=True)] == [
        "task1/0",
        "task1/1",
        "task2/0",
        "task2/1",
    ]
    assert [c.case_id for c in first_cases(cases, 2, per_app=False)] == ["task1/0", "task1/1"]


def test_markdown_limit_takes_the_first_cases_in_path_order() -> None:
    suite = load_suite(RunSettings(model="m", cases=FIXTURE, limit=3))
    assert [c.case_id for c in suite.cases] == [
        "blog/edit-post-01-good.md",
        "blog/edit-post-02-bad.md",
        "shop/get-order-01-bad.md",
    ]
    assert len(suite.skipped) == 3


def test_recorded_settings_say_what_applies_and_never_the_key() -> None:
    settings = RunSettings(
        model="vendor/m", cases=FIXTURE, api_key=SecretStr("sk-hidden"), temperature=0.2, seed=4
    )
    spec = build_spec(settings, load_suite(settings))
    shown = spec.settings.as_dict()
    assert shown["temperature"] == 0.2 and shown["response_format"]
    assert "tasks" not in shown and "method" not in shown
    assert "sk-hidden" not in repr(spec.settings) + spec.settings.stored()
    baseline = RunSettings(model="baseline/random", cases=FIXTURE, seed=4)
    recorded = build_spec(baseline, load_suite(baseline)).settings.as_dict()
    assert recorded["seed"] == 4 and "base_url" not in recorded and "temperature" not in recorded


def test_usage_errors_name_the_setting(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--cases"):
        load_suite(RunSettings(model="m", cases=tmp_path / "missing"))
    with pytest.raises(UsageError, match="OPENROUTER_API_KEY"):
        make_provider(RunSettings(model="vendor/m"))
    with pytest.raises(UsageError, match="--model"):
        plan_settings(Settings())


def test_flags_for_the_other_kind_of_suite_are_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--method applies to VulDetectBench"):
        load_suite(RunSettings(model="m", cases=FIXTURE, method="cot"))
    with pytest.raises(UsageError, match="--vdb-scoring"):
        load_suite(RunSettings(model="m", cases=FIXTURE, vdb_scoring="library"))
    vdb = tmp_path / "vdb"
    vdb.mkdir()
    (vdb / "task1_code.jsonl").write_text("")
    with pytest.raises(UsageError, match="--apps.*use --tasks"):
        load_suite(RunSettings(model="m", cases=vdb, apps=["x"]))


def test_key_and_base_url_are_checked_and_tidied() -> None:
    from pydantic import ValidationError

    settings = Settings(api_key=SecretStr(" sk-or-abc\n"), base_url="http://127.0.0.1:8/v1/")
    assert settings.key == "sk-or-abc" and settings.base_url == "http://127.0.0.1:8/v1"
    with pytest.raises(ValidationError, match="spaces, line breaks"):
        Settings(api_key=SecretStr("sk or abc"))
    with pytest.raises(ValidationError, match="not an http"):
        Settings(base_url="localhost:8000/v1")


def test_the_original_request_style_is_for_markdown_suites_only(tmp_path: Path) -> None:
    vdb = tmp_path / "vdb"
    vdb.mkdir()
    (vdb / "task1_code.jsonl").write_text("")
    with pytest.raises(UsageError, match="applies to markdown suites"):
        load_suite(RunSettings(model="m", cases=vdb, request_style="security-bench"))
    with pytest.raises(ValueError, match="request_style"):
        Settings(request_style="other")
    # a baseline may keep its seed: nothing is sent
    load_suite(
        RunSettings(model="baseline/random", cases=FIXTURE, request_style="security-bench", seed=1)
    )


def test_default_request_settings_keep_earlier_request_hashes() -> None:
    """Results recorded before reasoning_effort and request_style existed are still reused."""
    from secbench_tui.core.run.engine import RunSpec

    before = {"base_url": "u", "temperature": None, "max_tokens": 1024, "seed": None}
    before["response_format"] = "json_schema"
    now = before | {"reasoning_effort": None, "request_style": "secbench-tui"}
    one = case("task1", 0)
    old, new = (
        RunSpec(
            model="m",
            cases=[one],
            suite_kind="k",
            suite_path="p",
            settings=RecordedSettings.model_validate(s),
        )
        for s in (before, now)
    )
    assert old.request_hash(one) == new.request_hash(one)
    effort = RunSpec(
        model="m",
        cases=[one],
        suite_kind="k",
        suite_path="p",
        settings=RecordedSettings.model_validate(now | {"reasoning_effort": "high"}),
    )
    assert effort.request_hash(one) != old.request_hash(one)


def test_retry_backoff_reaches_the_providers_retry_policy() -> None:
    """`--retry-backoff` sets the first wait of the provider's policy (tests make it short)."""
    from secbench_tui.core.run.providers.openai_compat import OpenAICompatibleProvider
    from secbench_tui.core.run.providers.retry import BACKOFF_BASE

    settings = Settings(model="m/x", base_url="http://127.0.0.1:9/v1", cases=FIXTURE)
    (default,) = plan_settings(settings)
    (short,) = plan_settings(settings.replace(retry_backoff=0.01))
    for one, base in ((default, BACKOFF_BASE), (short, 0.01)):
        provider = make_provider(one)
        assert isinstance(provider, OpenAICompatibleProvider)
        assert provider.policy.backoff_base == base
    recorded = default.recorded(vuldetectbench=False, baseline=False).as_dict()
    assert "retry_backoff" not in recorded and "max_retries" in recorded
    with pytest.raises(ValueError, match="retry_backoff"):
        Settings(model="m/x", retry_backoff=-1)
