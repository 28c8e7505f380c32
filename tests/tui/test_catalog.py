"""The model list: GET /models from the loopback server, the disk cache, offline use, order."""

from __future__ import annotations

import json
from pathlib import Path

import aiosqlite

from secbench_tui.core.models import RecordedSettings
from secbench_tui.core.run import catalog
from secbench_tui.core.run.providers.baselines import BASELINES
from secbench_tui.core.store.database import Store
from tests.e2e.server import LoopbackServer


async def never_asked(url: str, directory: Path) -> catalog.Catalog:
    """The catalog without the network: what the cache holds, or the baselines alone."""
    return await catalog.read_catalog(url, fetch="never", directory=directory)


async def test_fetches_models_with_prices_context_and_structured_support(
    server: LoopbackServer, tmp_path: Path
) -> None:
    found = await catalog.read_catalog(server.base_url, fetch="always", directory=tmp_path)
    assert found.source == "network" and found.error is None
    mini = found.find("openai/gpt-4o-mini")
    r1 = found.find("deepseek/deepseek-r1:free")
    assert mini is not None and r1 is not None
    served = {m["id"]: m for m in server.models}
    expected_prompt = float(served["openai/gpt-4o-mini"]["pricing"]["prompt"]) * 1_000_000
    assert mini.prompt_price is not None
    assert abs(mini.prompt_price - expected_prompt) < 1e-9
    assert mini.context_length == served["openai/gpt-4o-mini"]["context_length"]
    assert mini.structured is True  # lists response_format / structured_outputs
    assert r1.structured is False and r1.prompt_price == 0.0


async def test_cache_file_is_per_host_under_xdg_cache_home(
    server: LoopbackServer, tmp_path: Path
) -> None:
    await catalog.read_catalog(
        server.base_url, fetch="always"
    )  # XDG_CACHE_HOME is tmp_path/cache here
    path = tmp_path / "cache" / "secbench-tui" / f"models-127.0.0.1-{server.port}.json"
    assert path.is_file()
    cached = json.loads(path.read_text())
    assert {m["id"] for m in cached["models"]} == {m["id"] for m in server.models}


async def test_offline_falls_back_to_the_cache(server: LoopbackServer, tmp_path: Path) -> None:
    url = server.base_url
    await catalog.read_catalog(url, fetch="always", directory=tmp_path)
    server.stop()
    offline = await catalog.read_catalog(url, fetch="always", directory=tmp_path, timeout=2)
    assert offline.source == "cache"
    assert offline.error and "/models failed" in offline.error
    assert offline.find("openai/gpt-4o-mini") is not None


async def test_offline_without_cache_still_lists_the_baselines(tmp_path: Path) -> None:
    # a port nothing listens on: bind one, close it, use it
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/api/v1"
    found = await catalog.read_catalog(url, fetch="always", directory=tmp_path)
    assert found.source == "none" and found.error
    assert [m.id for m in found.models] == list(BASELINES)


def test_recent_models_come_first_then_baselines_then_the_rest() -> None:
    listed = [catalog.ModelInfo("z/last"), catalog.ModelInfo("a/first"), catalog.ModelInfo("m/x")]
    ordered = [m.id for m in catalog.arrange(listed, ["m/x", "typed/not-listed"])]
    assert ordered == ["m/x", "typed/not-listed", *BASELINES, "a/first", "z/last"]


def test_filter_matches_every_word_of_the_query() -> None:
    found = catalog.Catalog(
        catalog.arrange([catalog.ModelInfo("openai/gpt-4o-mini", "OpenAI: GPT-4o-mini")], []),
        "cache",
    )
    assert [m.id for m in found.filter("openai mini")] == ["openai/gpt-4o-mini"]
    assert [m.id for m in found.filter("random")] == ["baseline/random", "baseline/random-exploit"]
    assert [m.id for m in found.filter("random exploit")] == ["baseline/random-exploit"]
    assert found.filter("openai claude") == []


async def test_a_damaged_cache_is_ignored(tmp_path: Path) -> None:
    path = catalog.cache_path("http://127.0.0.1:9/api/v1", tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    assert (await never_asked("http://127.0.0.1:9/api/v1", tmp_path)).source == "none"


async def test_recent_models_are_read_from_the_runs_table(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    try:
        for model in ("a/one", "b/two", "a/one"):
            await store.create_run(
                model=model,
                suite_kind="markdown",
                suite_path="",
                suite_hash="",
                prompt_hash="",
                settings=RecordedSettings(),
                fingerprint="",
                tool_version="t",
                total_cases=0,
            )
        assert await catalog.recent_models(store) == ["a/one", "b/two"]
    finally:
        await store.close()
    async with aiosqlite.connect(tmp_path / "r.db") as db:  # the file is real
        assert (await (await db.execute("SELECT COUNT(*) FROM runs")).fetchone())[0] == 3


async def test_a_cache_with_damaged_entries_keeps_the_sound_ones(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/api/v1"
    path = catalog.cache_path(url, tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sound = {"id": "a/sound", "name": "Sound", "context_length": 8000, "prompt_price": 1}
    for models in (
        [1, "text", None, {"id": 5}, {"name": "no id"}, sound],
        [{"id": "b/typed-badly", "context_length": "big", "prompt_price": "x"}, sound],
    ):
        path.write_text(json.dumps({"fetched_at": "2025-01-01T00:00:00Z", "models": models}))
        found = await never_asked(url, tmp_path)
        assert found.source == "cache"
        listed = [m for m in found.models if not m.offline]
        assert catalog.ModelInfo("a/sound", "Sound", 8000, 1.0) in listed
        for model in listed:  # every field has the type the list draws with
            assert isinstance(model.id, str) and isinstance(model.name, str)
            assert model.context_length is None or isinstance(model.context_length, int)
            assert model.prompt_price is None or isinstance(model.prompt_price, float)
    assert [m.id for m in listed if m.id != "a/sound"] == ["b/typed-badly"]
    assert listed[-1].context_length is None and listed[-1].prompt_price is None
    path.write_text(json.dumps({"models": {"a": 1}}))
    assert (await never_asked(url, tmp_path)).source == "none"


async def test_a_base_url_with_an_impossible_port_is_an_error_not_a_crash(tmp_path: Path) -> None:
    url = "http://127.0.0.1:99999/api/v1"
    found = await catalog.read_catalog(url, fetch="always", directory=tmp_path)
    assert found.source == "none" and found.error
    assert [m.id for m in found.models] == list(BASELINES)


async def test_models_that_reason_are_known_from_the_catalog_and_its_cache(
    server: LoopbackServer, tmp_path: Path
) -> None:
    from secbench_tui.tui.widgets.model_picker import model_detail, model_row

    found = await catalog.read_catalog(server.base_url, fetch="always", directory=tmp_path)
    r1, mini = found.find("deepseek/deepseek-r1:free"), found.find("openai/gpt-4o-mini")
    assert r1 is not None and mini is not None
    assert (r1.reasoning, mini.reasoning) == (True, False)
    assert mini.max_completion_tokens == 16384 and r1.max_completion_tokens is None
    cached = await never_asked(server.base_url, tmp_path)
    assert cached.find("deepseek/deepseek-r1:free") == r1  # the cache keeps both fields
    assert "reasons" in model_row(r1, False, False).plain
    assert "reasons" not in model_row(mini, False, False).plain
    assert "reasons before answering" in model_detail(r1).plain
    server.models = []  # the cache answers now; the network is not asked again
    asked = server.catalog_requests
    known = await catalog.read_catalog(
        server.base_url, fetch="missing", wanted=[r1.id], directory=tmp_path
    )
    assert known.find(r1.id) == r1 and server.catalog_requests == asked


async def test_a_server_that_does_not_say_which_models_reason_is_asked_once(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """A local server lists its models without `supported_parameters`; each run asked it for
    the list again, since the cache could not say whether the model reasons."""
    server.models = [
        {k: v for k, v in m.items() if k != "supported_parameters"} for m in server.models
    ]
    model = "openai/gpt-4o-mini"

    async def entry(wanted: str) -> catalog.ModelInfo | None:
        found = await catalog.read_catalog(
            server.base_url, fetch="missing", wanted=[wanted], directory=tmp_path
        )
        return found.find(wanted)

    first = await entry(model)
    assert first is not None and first.reasoning is None
    asked = server.catalog_requests
    assert await entry(model) == first
    assert server.catalog_requests == asked  # the cache answers
    assert await entry("vendor/new") is None
    assert server.catalog_requests == asked + 1  # a model it does not list is asked about
    assert await entry("baseline/random") is not None  # a baseline is never asked about
    assert server.catalog_requests == asked + 1
    # a cache written before every field was kept: asked again once, then rewritten
    path = catalog.cache_path(server.base_url, tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["format"]
    path.write_text(json.dumps(data), encoding="utf-8")
    for _ in range(2):
        assert await entry(model) == first
    assert server.catalog_requests == asked + 2
