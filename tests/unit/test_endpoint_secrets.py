"""Credentials in --base-url: requests use them, nothing stored or shown holds them."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from secbench_tui.config import RunSettings as Settings
from secbench_tui.core.models import Case, SuiteKind
from secbench_tui.core.run.catalog import fetch_error, save_cache
from secbench_tui.core.run.engine import RunSpec
from secbench_tui.core.run.providers.openai_compat import ClientSettings, _abort_for, api_url
from secbench_tui.core.store.runs import recorded_settings

SECRET_URL = "http://alice:pa55@127.0.0.1:8080/v1?api_key=k3y&api-version=2024"


def test_recorded_settings_hold_the_redacted_url() -> None:
    recorded = Settings(model="m", base_url=SECRET_URL).recorded()
    assert recorded.base_url == "http://***@127.0.0.1:8080/v1?api_key=***&api-version=***"


def test_the_fingerprint_still_tells_endpoints_apart() -> None:
    case = Case(
        app="a", case_id="a/c.md", test_file="a/c.md", code="x", expected="good",
        kind=SuiteKind.MARKDOWN,
    )  # fmt: skip

    def spec(url: str) -> RunSpec:
        settings = Settings(model="m", base_url=url)
        return RunSpec(
            model="m",
            cases=[case],
            suite_kind="markdown",
            suite_path="/s",
            settings=settings.recorded(),
            base_url=settings.base_url,
        )

    one, other = spec(SECRET_URL), spec(SECRET_URL.replace("2024", "2025"))
    assert one.settings == other.settings  # both redacted alike
    assert one.fingerprint != other.fingerprint
    assert one.request_hash(case) != other.request_hash(case)
    # a URL without credentials hashes as it always did (results asked before are reused)
    plain = "http://127.0.0.1:8080/v1"
    old = RunSpec(
        model="m", cases=[case], suite_kind="markdown", suite_path="/s",
        settings=Settings(model="m", base_url=plain).recorded(),
    )  # fmt: skip
    assert spec(plain).fingerprint == old.fingerprint


def test_api_url_keeps_the_query_last() -> None:
    assert api_url(SECRET_URL, "chat/completions") == (
        "http://alice:pa55@127.0.0.1:8080/v1/chat/completions?api_key=k3y&api-version=2024"
    )
    assert api_url("http://h/api/v1/", "models") == "http://h/api/v1/models"


def test_abort_hints_show_the_redacted_url() -> None:
    settings = ClientSettings(
        base_url=SECRET_URL, api_key="sk", model="m", max_retries=5, timeout=120.0
    )
    for status in (401, 404):
        aborted = _abort_for(status, "nope", settings)
        assert aborted is not None
        assert "pa55" not in str(aborted) and "k3y" not in str(aborted)
        assert "http://***@127.0.0.1:8080/v1" in str(aborted)


def test_the_model_list_error_and_cache_hold_no_credentials(tmp_path: Path) -> None:
    request = httpx.Request("GET", api_url(SECRET_URL, "models"))
    status = httpx.HTTPStatusError(
        "Client error for url " + str(request.url),
        request=request,
        response=httpx.Response(403, request=request),
    )
    for exc in (status, httpx.ConnectError(f"cannot reach {SECRET_URL}")):
        message = fetch_error(SECRET_URL, exc)
        assert "pa55" not in message and "k3y" not in message, message
    path = tmp_path / "models.json"
    save_cache(path, SECRET_URL, [])
    assert "pa55" not in path.read_text() and "k3y" not in path.read_text()


def test_settings_recorded_by_an_older_version_are_read_redacted() -> None:
    stored = json.dumps({"base_url": SECRET_URL, "seed": 1})
    assert recorded_settings(stored).as_dict() == {
        "base_url": "http://***@127.0.0.1:8080/v1?api_key=***&api-version=***",
        "seed": 1,
    }
