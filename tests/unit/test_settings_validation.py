"""The settings' validation (pydantic models, `config.models`): text read as the declared
type, bounds and checks said in our words, every problem at once in declaration order, nothing
undeclared, copies checked, the key never shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from secbench_tui.config import RunSettings, Settings, describe_error


def _problems(**values: object) -> str:
    with pytest.raises(ValidationError) as caught:
        Settings(**values)
    return describe_error(caught.value)


def test_text_is_read_as_the_declared_type() -> None:
    settings = Settings(concurrency="4", temperature=" 0.5", db="out/r.db", limit=None)
    assert settings.concurrency == 4 and isinstance(settings.concurrency, int)
    assert settings.temperature == 0.5
    assert settings.db == Path("out/r.db") and settings.limit is None
    assert Settings(max_tokens=64.0).max_tokens == 64  # a whole float is a whole number
    assert Settings(concurrency="2.0").concurrency == 2  # as the command line took it before


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"concurrency": "many"}, "--concurrency: must be a whole number (got 'many')"),
        ({"concurrency": "2.5"}, "--concurrency: must be a whole number (got '2.5')"),
        # int() and float() read other scripts' digits; a flag takes ASCII ones only
        ({"concurrency": "\u0663"}, "--concurrency: must be a whole number"),
        ({"timeout": "\u0663"}, "--timeout: must be a number"),
        ({"repeats": 1.5}, "--repeats: must be a whole number (got 1.5)"),
        ({"timeout": float("nan")}, "--timeout: must be a finite number (got nan)"),
        ({"max_cost": "inf"}, "--max-cost: must be a finite number (got 'inf')"),
        ({"temperature": 2.5}, "--temperature: give 2 or less (got 2.5)"),
        ({"timeout": 0}, "--timeout: give a number above 0 (got 0)"),
        ({"concurrency": 257}, "--concurrency: give 256 or less (got 257)"),
        ({"stop_grace": 601}, "--stop-grace: give 600 or less (got 601)"),
        ({"reasoning_effort": "extreme"}, "--reasoning-effort: must be 'none', 'minimal',"),
        ({"tasks": [6]}, "--tasks: takes numbers from 1 to 5, e.g. --tasks 1,3"),
        ({"base_url": "ftp://x"}, "--base-url: 'ftp://x' is not an http(s) URL"),
        ({"base_url": "http://[::1"}, "--base-url: 'http://[::1' is not a URL the client can"),
        ({"base_url": "http://u:pw@[::1"}, "--base-url: '***' is not a URL the client"),
        ({"base_url": "http://[::1?key=pw"}, "--base-url: '***' is not a URL the client"),
        ({"api_key": "sk or"}, "OPENROUTER_API_KEY: holds spaces, line breaks"),
    ],
)
def test_a_bad_value_is_named_by_its_flag_with_the_fix(
    values: dict[str, object], said: str
) -> None:
    assert said in _problems(**values)


def test_every_problem_is_said_at_once_in_declaration_order() -> None:
    message = _problems(models=["m"], limit=0, concurrency=0, methods=["plain?"])
    assert message.index("--limit:") < message.index("--concurrency:") < message.index("--method:")
    assert message.count("; ") == 2


def test_a_name_that_is_not_declared_is_refused_not_dropped() -> None:
    assert _problems(concurency=4) == "--concurency: is not a setting"


def test_a_copy_is_checked_like_any_other() -> None:
    settings = Settings(concurrency=3)
    assert settings.replace(concurrency="5").concurrency == 5
    assert settings.concurrency == 3
    with pytest.raises(ValidationError, match="concurrency"):
        settings.replace(concurrency=0)


def test_defaults_are_fresh_and_shorthands_are_lists_of_one() -> None:
    a, b = Settings(), Settings()
    a.filters.append("x/*")
    assert b.filters == [] and a != b
    assert Settings(model="m/x").models == ["m/x"] == Settings(models=["m/x", "m/x"]).models
    assert Settings(model="m/x") == Settings(models=["m/x"])


def test_a_run_without_its_model_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        RunSettings()
    assert describe_error(caught.value, RunSettings) == "--model: is required"


def test_the_key_never_shows() -> None:
    settings = Settings(api_key="sk-or-secret-1234")
    assert settings.key == "sk-or-secret-1234"
    shown = repr(settings) + str(settings.api_key) + repr(SecretStr("sk-or-secret-1234"))
    assert "secret-1234" not in shown
    assert Settings(api_key="  'sk-or-x'\n").key == "sk-or-x"  # copied with quotes and a newline
