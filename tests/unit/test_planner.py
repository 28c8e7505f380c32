"""From settings to a plan: limits, recorded settings, usage errors, what the catalog decides."""

from pathlib import Path

import pytest
from pydantic import SecretStr

from secbench_tui.config import RunSettings, Settings
from secbench_tui.core.models import Case, Message, RecordedSettings, SuiteKind
from secbench_tui.core.run.catalog import Catalog, ModelInfo
from secbench_tui.errors import UsageError
from secbench_tui.lifecycle import make_provider
from secbench_tui.planning.cells import matrix_cells
from secbench_tui.planning.plan import build_spec, plan
from secbench_tui.planning.suites import first_cases, load_suite

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "suite"
NOTHING_KNOWN = Catalog([], "none")


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


def vdb_folder(tmp_path: Path) -> Path:
    vdb = tmp_path / "vdb"
    vdb.mkdir()
    (vdb / "task1_code.jsonl").write_text("")
    return vdb


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
        plan(Settings(), NOTHING_KNOWN)
    with pytest.raises(UsageError, match="--model baseline/nope: no such baseline"):
        plan(Settings(model="baseline/nope", cases=FIXTURE), NOTHING_KNOWN)


def test_flags_for_the_other_kind_of_suite_are_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--method applies to VulDetectBench"):
        matrix_cells(Settings(model="m", cases=FIXTURE, method="cot"), NOTHING_KNOWN)
    with pytest.raises(UsageError, match="--vdb-scoring"):
        matrix_cells(Settings(model="m", cases=FIXTURE, vdb_scoring="library"), NOTHING_KNOWN)
    vdb = vdb_folder(tmp_path)
    with pytest.raises(UsageError, match="--apps.*use --tasks"):
        matrix_cells(Settings(model="m", cases=vdb, apps=["x"]), NOTHING_KNOWN)
    with pytest.raises(UsageError, match="--prompt applies to markdown suites"):
        matrix_cells(Settings(model="m", cases=vdb, prompt="default"), NOTHING_KNOWN)


def test_key_and_base_url_are_checked_and_tidied() -> None:
    from pydantic import ValidationError

    settings = Settings(api_key=SecretStr(" sk-or-abc\n"), base_url="http://127.0.0.1:8/v1/")
    assert settings.key == "sk-or-abc" and settings.base_url == "http://127.0.0.1:8/v1"
    with pytest.raises(ValidationError, match="spaces, line breaks"):
        Settings(api_key=SecretStr("sk or abc"))
    with pytest.raises(ValidationError, match="not an http"):
        Settings(base_url="localhost:8000/v1")


def test_the_original_request_style_is_for_markdown_suites_only(tmp_path: Path) -> None:
    vdb = vdb_folder(tmp_path)
    original = {"request_style": "security-bench"}
    with pytest.raises(UsageError, match="applies to markdown suites"):
        matrix_cells(Settings(model="m", cases=vdb, **original), NOTHING_KNOWN)
    with pytest.raises(ValueError, match="request_style"):
        Settings(request_style="other")
    # a baseline may keep its seed: nothing is sent; any other model may not
    asked = Settings(model="baseline/random", cases=FIXTURE, seed=1, **original)
    assert [c.seed for c in matrix_cells(asked, NOTHING_KNOWN)] == [1]
    with pytest.raises(UsageError, match="--seed cannot be combined"):
        matrix_cells(asked.replace(models=["baseline/random", "vendor/m"]), NOTHING_KNOWN)


def test_a_reasoning_model_gets_its_own_budget_from_the_catalog_it_is_planned_with() -> None:
    """The catalog passed in decides; a model it does not list keeps the plain defaults."""
    catalog = Catalog(
        [
            ModelInfo("think/big", reasoning=True),
            ModelInfo("think/small", reasoning=True, max_completion_tokens=8000),
            ModelInfo("plain/m", reasoning=False),
        ],
        "cache",
    )
    models = ["think/big", "think/small", "plain/m", "unlisted/m", "baseline/random"]
    asked = Settings(models=models, cases=FIXTURE, base_url="http://127.0.0.1:9/v1")
    cells = {c.model: c for c in plan(asked, catalog).cells}
    sent = {m: (c.settings.sent_max_tokens, c.settings.reasoning_model) for m, c in cells.items()}
    assert sent == {
        "think/big": (32768, True),
        "think/small": (8000, True),
        "plain/m": (1024, False),
        "unlisted/m": (1024, None),
        "baseline/random": (1024, None),
    }
    assert cells["think/big"].spec.settings.max_tokens == 32768
    given = plan(asked.replace(max_tokens=500), catalog).cells
    assert {c.settings.sent_max_tokens for c in given} == {500}  # --max-tokens wins


def test_a_plan_names_the_requests_larger_than_their_models_context() -> None:
    """Known before anything is sent, from the catalog the plan was made with; `refused` is
    empty with --force, which sends them anyway."""
    catalog = Catalog([ModelInfo("small/m", context_length=10), ModelInfo("big/m")], "cache")
    asked = Settings(models=["small/m", "big/m"], cases=FIXTURE, base_url="http://127.0.0.1:9/v1")
    planned = plan(asked, catalog)
    assert [o.model for o in planned.overflows] == ["small/m"]
    assert planned.refused == planned.overflows
    assert "10-token context of small/m" in planned.overflows[0].message()
    assert plan(asked.replace(force=True), catalog).refused == ()


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
    (default,) = matrix_cells(settings, NOTHING_KNOWN)
    (short,) = matrix_cells(settings.replace(retry_backoff=0.01), NOTHING_KNOWN)
    for one, base in ((default, BACKOFF_BASE), (short, 0.01)):
        provider = make_provider(one)
        assert isinstance(provider, OpenAICompatibleProvider)
        assert provider.policy.backoff_base == base
    recorded = default.recorded(vuldetectbench=False, baseline=False).as_dict()
    assert "retry_backoff" not in recorded and "max_retries" in recorded
    with pytest.raises(ValueError, match="retry_backoff"):
        Settings(model="m/x", retry_backoff=-1)


def test_the_plan_checks_the_suite_for_leaks_again_when_a_file_changes(tmp_path: Path) -> None:
    """The app plans on every change of its setup screen: the check is kept while the suite's
    files are unchanged, and made again when one changes."""
    from secbench_tui.cli import parse_command, settings_from_args

    folder = tmp_path / "suite" / "shop"
    folder.mkdir(parents=True)
    (folder / "SPEC.md").write_text("# Prompt\nShop.\n1. Filter by tenant.\n")
    for s in range(6):
        for n, label in enumerate(("good", "bad"), start=1):
            code = f"SELECT id{', total' * (s % 3)} FROM t{s} WHERE id = :id;"
            (folder / f"s{s}-{n:02d}-{label}.md").write_text(
                f"# Code\n```sql\n{code}\n```\n\n# Expected\n{label}\n"
            )
    argv = ["--model", "vendor/m", "--cases", str(tmp_path / "suite")]
    settings = settings_from_args(parse_command(argv), env={})
    from secbench_tui.planning.leaks import leaks_of

    first = plan(settings, NOTHING_KNOWN)
    assert first.leak is not None and not first.leak.leaky and first.leak_lines() == []
    hits = leaks_of.cache_info().hits
    assert plan(settings, NOTHING_KNOWN).leak == first.leak
    assert leaks_of.cache_info().hits == hits + 1  # unchanged files: not checked again
    assert first.cells[0].spec.settings.leak == {"threshold": 0.6, "cues": []}
    for path in folder.glob("*-bad.md"):  # every bad case now says so in a comment
        path.write_text(path.read_text().replace(";\n```", ";\n-- SAFE: reviewed\n```"))
    again = plan(settings, NOTHING_KNOWN)
    assert again.leak is not None and again.leak.leaky
    assert "labels leak" in again.leak_lines()[0]
    recorded = again.cells[0].spec.settings.leak
    assert recorded is not None and recorded["guesses"]["shop/s0-02-bad.md"] == 1.0
