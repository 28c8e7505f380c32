"""Each setting is declared once (`config.Settings`): the flag, its help and default, the
app's choices and the recorded run settings all follow that one declaration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from secbench_tui.cli import build_parser, main, parse_command, settings_from_args
from secbench_tui.config import Settings, describe_error
from secbench_tui.core.run.catalog import Catalog
from secbench_tui.planning.cells import matrix_cells
from secbench_tui.planning.plan import plan

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "suite"
LOCAL = "http://127.0.0.1:9/v1"  # never asked: the plan is built without providers


@pytest.fixture
def changed_defaults() -> Iterator[None]:
    """The declaration with other defaults, as an editor of `config/models.py` would leave it."""
    fields = Settings.model_fields
    before = {name: fields[name].default for name in ("max_retries", "concurrency", "timeout")}
    fields["max_retries"].default = 3
    fields["concurrency"].default = 4
    fields["timeout"].default = 42.0
    Settings.model_rebuild(force=True)
    try:
        yield
    finally:
        for name, value in before.items():
            fields[name].default = value
        Settings.model_rebuild(force=True)


def _from_cli(*argv: str) -> Settings:
    return settings_from_args(parse_command(list(argv)), env={})


def test_a_changed_default_reaches_the_cli_and_the_recorded_settings(
    changed_defaults: None,
) -> None:
    settings = _from_cli("--model", "vendor/m", "--cases", str(FIXTURE), "--base-url", LOCAL)
    assert (settings.max_retries, settings.concurrency, settings.timeout) == (3, 4, 42.0)
    planned = plan(settings, Catalog([], "none"))
    recorded = planned.cells[0].spec.settings
    assert recorded.max_retries == 3
    assert recorded.timeout == 42.0
    assert planned.cells[0].spec.concurrency == 4
    help_text = build_parser().format_help()
    assert "(default: 3)" in " ".join(help_text.split())  # --max-retries says so too


def test_the_shipped_defaults_are_the_declared_ones() -> None:
    settings = _from_cli("--model", "vendor/m")
    declared = Settings()
    for name in ("max_retries", "concurrency", "request_style", "vdb_scoring", "db", "tasks"):
        assert getattr(settings, name) == getattr(declared, name), name
    assert settings.timeout is None and settings.run("vendor/m").attempt_timeout == 120.0


def test_a_flag_given_wins_over_the_declared_default() -> None:
    settings = _from_cli("--max-retries", "0", "--concurrency", "7", "--vdb-scoring", "library")
    assert (settings.max_retries, settings.concurrency, settings.vdb_scoring) == (0, 7, "library")


def test_choices_come_from_the_literal_types(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse_command(["--reasoning-effort", "extreme"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("secbench-tui: error:") == 1
    assert "'none', 'minimal', 'low', 'medium', 'high'" in err


def test_every_invalid_setting_is_named_by_its_flag() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(limit=0, concurrency=0, methods=["cott"])
    message = describe_error(caught.value)
    assert message.count("; ") == 2, message
    assert "--limit: " in message and "--concurrency: " in message
    assert "--method: must be plain or one of cot, few-shot (got 'cott')" in message


def test_the_cli_reports_every_bad_setting_on_one_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--no-ui", "--model", "baseline/random", "--limit", "0", "--repeats", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("secbench-tui: error: ")
    assert "--limit: " in err[0] and "--repeats: " in err[0]


def test_the_environment_fills_what_the_flag_leaves(tmp_path: Path) -> None:
    args = parse_command(["--model", "vendor/m"])
    settings = settings_from_args(
        args, {"OPENROUTER_BASE_URL": LOCAL, "OPENROUTER_API_KEY": "sk-or-x"}
    )
    assert settings.base_url == LOCAL and settings.key == "sk-or-x"
    flagged = settings_from_args(
        parse_command(["--base-url", "http://127.0.0.1:8/v1"]), {"OPENROUTER_BASE_URL": LOCAL}
    )
    assert flagged.base_url == "http://127.0.0.1:8/v1"
    report = settings_from_args(parse_command(["--report"]), {"OPENROUTER_API_KEY": "sk-or-x"})
    assert report.key is None  # only runs read the key


def test_repeated_flags_keep_every_value_in_order() -> None:
    settings = _from_cli(
        "--filter", "beta/*", "--filter", "a/x-*", "--model", "a,b", "--model", "c"
    )
    assert settings.filters == ["beta/*", "a/x-*"]
    assert settings.models == ["a", "b", "c"]


def test_the_matrix_request_and_one_run_are_two_types(tmp_path: Path) -> None:
    """What was asked lists models and prompts; each run has one of each, and its options."""
    asked = _from_cli(
        *("--model", "baseline/random,vendor/m", "--prompt", "default,attacker"),
        *("--cases", str(FIXTURE), "--temperature", "0.3"),
    )
    assert not hasattr(asked, "model") and asked.models == ["baseline/random", "vendor/m"]
    cells = matrix_cells(asked, Catalog([], "none"))
    assert [(c.model, c.prompt.name if c.prompt else None) for c in cells] == [
        ("baseline/random", "default"),
        ("baseline/random", "attacker"),
        ("vendor/m", "default"),
        ("vendor/m", "attacker"),
    ]
    assert all(c.temperature == 0.3 and not hasattr(c, "models") for c in cells)


def test_every_recorded_setting_has_a_typed_key() -> None:
    """The record's type names each setting a run records (and nothing is recorded untyped)."""
    from secbench_tui.config import RECORDED
    from secbench_tui.core.models import RecordedSettings

    assert set(RECORDED) <= set(RecordedSettings.model_fields)
    run = Settings(cases=FIXTURE, base_url=LOCAL).run("vendor/m")
    assert set(run.recorded().as_dict()) <= set(RecordedSettings.model_fields)
    assert set(run.recorded(vuldetectbench=True).as_dict()) <= set(RecordedSettings.model_fields)


def test_help_shows_examples_and_says_truly_when_the_app_opens() -> None:
    """--help had no example, and said the app opens 'without --no-ui, --report, --export or
    --lint', though --verify, --rescore, --dry-run and a missing terminal do not open it."""
    help_text = build_parser().format_help()
    assert "examples:" in help_text
    assert "secbench-tui --model baseline/random --no-ui" in help_text
    opens = next(line for line in help_text.splitlines() if "terminal app opens" in line)
    for flag in ("--verify", "--rescore", "--dry-run"):
        assert flag in help_text.split("terminal app opens")[0].rsplit("\n\n", 1)[-1], opens


def test_a_misspelt_baseline_names_the_baselines_not_a_missing_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--model baseline/nope` said 'no API key', sending the user to get a key for a model
    that does not exist anywhere."""
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "r.db")
    assert main(["--no-ui", "--model", "baseline/nope", "--limit", "1", "--db", db]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("secbench-tui: error: --model baseline/nope")
    assert "baseline/random" in err[0] and "API key" not in err[0]


def test_a_run_of_good_cases_only_does_not_say_the_suite_names_no_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundled suite names a rule on every bad case; a run that picked only good cases
    said 'right reason n/a (the suite names no rules)'."""
    monkeypatch.chdir(tmp_path)
    only_good = "purchase-order/add-po-line-01-good.md"
    args = ["--no-ui", "--model", "baseline/random", "--filter", only_good, "--db", "r.db"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "right reason n/a (no bad case of this run names a rule)" in out
    assert "the suite names no rules" not in out


def test_a_dotenv_file_is_read_beneath_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from secbench_tui.config import load_env

    env_file = tmp_path / ".env"
    env_file.write_text("OPENROUTER_API_KEY=from-file\nSECBENCH_ONLY_IN_FILE=yes\n")
    monkeypatch.setenv("OPENROUTER_API_KEY", "from-environment")
    values = load_env(env_file)
    assert values["SECBENCH_ONLY_IN_FILE"] == "yes"
    assert values["OPENROUTER_API_KEY"] == "from-environment"  # the environment wins
    assert "SECBENCH_ONLY_IN_FILE" not in load_env(tmp_path / "absent.env")
