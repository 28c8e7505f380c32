"""The list of models to choose from: `GET {base_url}/models`, cached on disk.

The endpoint needs no key, so the list loads before any key is set. The last good answer is
kept in `$XDG_CACHE_HOME/secbench-tui/models-<host>.json` (default `~/.cache`), so the list
still works offline; a model id typed by hand is always accepted. The offline baselines are
always listed, and models used before (from the database's runs) come first.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx

from secbench_tui.core.models import JSONObject
from secbench_tui.core.run.http import async_client
from secbench_tui.core.run.providers.baselines import BASELINES
from secbench_tui.core.run.providers.openai_compat import api_url
from secbench_tui.core.store.database import Store
from secbench_tui.core.untrusted import redact_url

# A cache file of this format lists each model with every field as the server gave it (None:
# the server does not say), so a model it lists needs no new request to be known.
CACHE_FORMAT = 2

STRUCTURED_PARAMETERS = frozenset({"structured_outputs", "response_format"})
REASONING_PARAMETERS = frozenset({"reasoning", "include_reasoning"})


@dataclass(frozen=True)
class ModelInfo:
    """One model as the chooser shows it. Prices are USD per million tokens."""

    id: str
    name: str = ""
    context_length: int | None = None
    prompt_price: float | None = None
    completion_price: float | None = None
    structured: bool | None = None  # None: not known (a typed id, a server that does not say)
    offline: bool = False
    reasoning: bool | None = None  # reasons before answering; None: not known
    max_completion_tokens: int | None = None

    def matches(self, query: str) -> bool:
        """Every word of `query` appears in the id or the name (case-insensitive)."""
        haystack = f"{self.id} {self.name}".lower()
        return all(word in haystack for word in query.lower().split())


@dataclass
class Catalog:
    """The models on offer and where the list came from."""

    models: list[ModelInfo]
    source: str  # "network" | "cache" | "none"
    fetched_at: str | None = None
    error: str | None = None
    recent: list[str] = field(default_factory=list)

    def find(self, model_id: str) -> ModelInfo | None:
        return next((m for m in self.models if m.id == model_id), None)

    def filter(self, query: str, limit: int | None = None) -> list[ModelInfo]:
        found = [m for m in self.models if m.matches(query)] if query.strip() else self.models
        return found[:limit] if limit is not None else found


def baseline_models() -> list[ModelInfo]:
    return [
        ModelInfo(
            id=b,
            name=f"offline baseline: {b.split('/', 1)[1]}",
            prompt_price=0.0,
            completion_price=0.0,
            structured=True,
            offline=True,
        )
        for b in BASELINES
    ]


def cache_dir(env: dict[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "secbench-tui"


def cache_path(base_url: str, directory: Path | None = None) -> Path:
    """One cache file per endpoint: `models-<host>[-<port>].json`."""
    parsed = urlparse(base_url)
    host = parsed.hostname or "local"
    try:
        port = parsed.port
    except ValueError:  # out of range: the request fails and says so, the name need not
        port = None
    if port:
        host += f"-{port}"
    safe = re.sub(r"[^A-Za-z0-9.-]+", "-", host)
    return (directory or cache_dir()) / f"models-{safe}.json"


def _per_million(value: Any) -> float | None:
    try:
        price = float(value)
    except (TypeError, ValueError):
        return None
    return None if price < 0 else price * 1_000_000  # OpenRouter: -1 means "varies"


def parse_models(body: Any) -> list[ModelInfo]:
    """Models from an OpenRouter / OpenAI `GET /models` body; malformed entries are skipped."""
    entries = body.get("data") if isinstance(body, dict) else body
    if not isinstance(entries, list):
        raise ValueError("the body has no 'data' list of models")
    models: list[ModelInfo] = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        raw_pricing = entry.get("pricing")
        pricing: JSONObject = raw_pricing if isinstance(raw_pricing, dict) else {}
        params = entry.get("supported_parameters")
        context = entry.get("context_length")
        top = entry.get("top_provider")
        most = top.get("max_completion_tokens") if isinstance(top, dict) else None
        models.append(
            ModelInfo(
                id=entry["id"],
                name=str(entry.get("name") or ""),
                context_length=context if isinstance(context, int) else None,
                prompt_price=_per_million(pricing.get("prompt")),
                completion_price=_per_million(pricing.get("completion")),
                structured=(
                    bool(STRUCTURED_PARAMETERS.intersection(params))
                    if isinstance(params, list)
                    else None
                ),
                reasoning=(
                    bool(REASONING_PARAMETERS.intersection(params))
                    if isinstance(params, list)
                    else None
                ),
                max_completion_tokens=_positive_int(most),
            )
        )
    return models


def _positive_int(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return value if ok else None


async def fetch_models(
    base_url: str, client: httpx.AsyncClient | None = None, timeout: float = 10.0
) -> list[ModelInfo]:
    """`GET {base_url}/models` (no key needed). Raises httpx errors or ValueError."""
    url = api_url(base_url, "models")
    owned = client is None
    http = client or async_client(timeout)
    try:
        response = await http.get(url, headers={"Accept": "application/json"})
        response.raise_for_status()
        return parse_models(response.json())
    finally:
        if owned:
            await http.aclose()


def fetch_error(base_url: str, exc: BaseException) -> str:
    """Why `GET /models` failed, in words that never show credentials in the URL (httpx puts
    the whole URL in its status errors)."""
    shown = redact_url(base_url)
    if isinstance(exc, httpx.HTTPStatusError):
        why = f"HTTP {exc.response.status_code}"
    else:
        why = f"{type(exc).__name__}: {exc}"
        if shown != base_url:
            why = why.replace(base_url.rstrip("/"), shown.rstrip("/"))
    return f"GET {api_url(shown, 'models')} failed ({why})"


def save_cache(path: Path, base_url: str, models: Sequence[ModelInfo]) -> str:
    fetched_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    path.parent.mkdir(parents=True, exist_ok=True)
    models_data = [asdict(m) for m in models]
    data = {
        "format": CACHE_FORMAT,
        "base_url": redact_url(base_url),
        "fetched_at": fetched_at,
        "models": models_data,
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(path)
    return fetched_at


def _cached_model(entry: Any) -> ModelInfo | None:
    """One model as `save_cache` wrote it; None for an entry that is not one. A field of
    the wrong type (a damaged or hand-edited file) reads as unknown, never as a crash."""
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
        return None

    def number(key: str) -> int | float | None:
        value = entry.get(key)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    name, structured, context = entry.get("name"), entry.get("structured"), number("context_length")
    prompt_price, completion_price = number("prompt_price"), number("completion_price")
    reasoning = entry.get("reasoning")
    return ModelInfo(
        id=entry["id"],
        name=name if isinstance(name, str) else "",
        context_length=context if isinstance(context, int) else None,
        prompt_price=None if prompt_price is None else float(prompt_price),
        completion_price=None if completion_price is None else float(completion_price),
        structured=structured if isinstance(structured, bool) else None,
        reasoning=reasoning if isinstance(reasoning, bool) else None,
        max_completion_tokens=_positive_int(entry.get("max_completion_tokens")),
    )


def load_cache(path: Path) -> tuple[list[ModelInfo], str | None] | None:
    """The cached list and when it was fetched, or None when there is no usable cache."""
    read = _read_cache(path)
    return None if read is None else (read[0], read[1])


def _read_cache(path: Path) -> tuple[list[ModelInfo], str | None, bool] | None:
    """`load_cache`, and whether the file lists every field as the server gave it
    (`CACHE_FORMAT`; files written before it may lack whether a model reasons)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entries = data.get("models") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    models = [m for m in map(_cached_model, entries) if m is not None]
    fetched = data.get("fetched_at")
    whole = data.get("format") == CACHE_FORMAT
    return models, fetched if isinstance(fetched, str) else None, whole


def arrange(models: Iterable[ModelInfo], recent: Sequence[str]) -> list[ModelInfo]:
    """Recent models first (most recent first), then the baselines, then the rest by id."""
    by_id = {m.id: m for m in baseline_models()}
    for model in models:
        by_id.setdefault(model.id, model)
    first = [by_id.get(r) or ModelInfo(id=r) for r in dict.fromkeys(recent)]
    seen = {m.id for m in first}
    baselines = [m for m in baseline_models() if m.id not in seen]
    seen.update(m.id for m in baselines)
    rest = sorted((m for m in by_id.values() if m.id not in seen), key=lambda m: m.id)
    return first + baselines + rest


async def recent_models(store: Store, limit: int = 10) -> list[str]:
    """Models of the latest runs in the database, most recent first."""
    cursor = await store.db.execute(
        "SELECT model_name FROM runs GROUP BY model_name ORDER BY MAX(id) DESC LIMIT ?",
        (limit,),
    )
    return [str(row[0]) for row in await cursor.fetchall()]


def cached_catalog(
    base_url: str, recent: Sequence[str] = (), directory: Path | None = None
) -> Catalog:
    """What can be shown at once, without the network: the cache, or the baselines alone."""
    cached = load_cache(cache_path(base_url, directory))
    if cached is None:
        return Catalog(arrange([], recent), "none", recent=list(recent))
    models, fetched_at = cached
    return Catalog(arrange(models, recent), "cache", fetched_at, recent=list(recent))


async def load_catalog(
    base_url: str,
    recent: Sequence[str] = (),
    directory: Path | None = None,
    client: httpx.AsyncClient | None = None,
    timeout: float = 10.0,
) -> Catalog:
    """Fetch and cache the list; offline (or on any failure) fall back to the cache."""
    path = cache_path(base_url, directory)
    try:
        models = await fetch_models(base_url, client, timeout)
    except Exception as exc:  # any failure (an httpx error, a bad body, a bad port) is offline
        fallback = cached_catalog(base_url, recent, directory)
        fallback.error = fetch_error(base_url, exc)
        return fallback
    try:
        fetched_at: str | None = save_cache(path, base_url, models)
    except OSError:
        fetched_at = None  # an unwritable cache folder costs only the offline fallback
    return Catalog(arrange(models, recent), "network", fetched_at, recent=list(recent))


async def lookup_model(
    base_url: str,
    model_id: str,
    directory: Path | None = None,
    timeout: float = 10.0,
    fetch: bool = True,
) -> ModelInfo | None:
    """One model's entry (see `lookup_models`)."""
    return (await lookup_models(base_url, [model_id], directory, timeout, fetch))[model_id]


async def lookup_models(
    base_url: str,
    model_ids: Sequence[str],
    directory: Path | None = None,
    timeout: float = 10.0,
    fetch: bool = True,
) -> dict[str, ModelInfo | None]:
    """Each model's entry: from the cache when it lists the model (a cache written before
    `CACHE_FORMAT` only when it says whether the model reasons), else from one
    `GET {base_url}/models` for all the others, which is then cached, so the next run starts
    without asking, also against a server that does not say which models reason. None for a
    model not listed, or when the list cannot be had: callers then keep their defaults."""
    found: dict[str, ModelInfo | None] = dict.fromkeys(model_ids)
    path = cache_path(base_url, directory)
    cached = _read_cache(path)
    if cached is not None:
        models, _, whole = cached
        for model in models:
            if model.id in found and (whole or model.reasoning is not None):
                found[model.id] = model
    missing = [m for m, info in found.items() if info is None]
    if not missing or not fetch:
        return found
    try:
        models = await fetch_models(base_url, timeout=timeout)
    except Exception:  # offline, a server without /models, a bad body: not known
        return found
    try:
        save_cache(path, base_url, models)
    except OSError:
        pass  # an unwritable cache folder costs only the next run's request
    listed = {m.id: m for m in models}
    for model_id in missing:
        found[model_id] = listed.get(model_id)
    return found
