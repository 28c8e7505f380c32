"""The list of models to choose from: `GET {base_url}/models`, cached on disk.

The endpoint needs no key, so the list loads before any key is set. The last good answer is
kept in `$XDG_CACHE_HOME/secbench-tui/models-<host>.json` (default `~/.cache`), so the list
still works offline; a model id typed by hand is always accepted. The offline baselines are
always listed, and models used before (from the database's runs) come first.

A command reads the catalog once, through `read_catalog`, and passes the `Catalog` on: a plan
looks its models up there (what a reasoning model is sent, a model's context, its prices), so
the run, the app's estimate and `--dry-run` read the same entries.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple
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


class _Cache(NamedTuple):
    """A cache file as read: its models, when they were fetched, and whether it lists every
    field as the server gave it (`CACHE_FORMAT`; files written before it may lack whether a
    model reasons)."""

    models: list[ModelInfo]
    fetched_at: str | None
    whole: bool


def _read_cache(path: Path) -> _Cache | None:
    """The cache file, or None when there is no usable one."""
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
    return _Cache(models, fetched if isinstance(fetched, str) else None, whole)


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


Fetch = Literal["never", "missing", "always"]


async def read_catalog(
    base_url: str,
    *,
    fetch: Fetch,
    wanted: Sequence[str] = (),
    recent: Sequence[str] = (),
    directory: Path | None = None,
    timeout: float = 10.0,
    client: httpx.AsyncClient | None = None,
) -> Catalog:
    """The catalog, the one way to get it: the cache file, and `GET {base_url}/models` as
    `fetch` says: "never" (what shows at once, or never the network), "missing" (only when
    the cache lacks one of the `wanted` models, or, in a file written before `CACHE_FORMAT`,
    whether it reasons), "always" (the list to choose from; prices as they are now).

    A fetched list is cached, so the next command starts without asking, also against a
    server that does not say which models reason. When the fetch fails (offline, a server
    without /models, a bad body, a bad port), the cache answers, or the baselines alone, and
    `error` says why; a model the list does not hold is not known (`find` gives None) and
    callers keep their defaults.
    """
    path = cache_path(base_url, directory)
    cached = _read_cache(path)
    if fetch == "never" or (fetch == "missing" and not _lacks(cached, wanted)):
        return _cached(cached, recent)
    try:
        models = await fetch_models(base_url, client, timeout)
    except Exception as exc:  # any failure is offline: the cache answers
        found = _cached(cached, recent)
        found.error = fetch_error(base_url, exc)
        return found
    try:
        fetched_at: str | None = save_cache(path, base_url, models)
    except OSError:
        fetched_at = None  # an unwritable cache folder costs only the next command's request
    return Catalog(arrange(models, recent), "network", fetched_at, recent=list(recent))


def _lacks(cached: _Cache | None, wanted: Sequence[str]) -> bool:
    """Does the cache lack one of `wanted` (a baseline is never lacking), or, in a file of an
    older format, whether one of them reasons?"""
    asked = [m for m in wanted if m not in BASELINES]
    if not asked:
        return False
    if cached is None:
        return True
    known = {m.id for m in cached.models if cached.whole or m.reasoning is not None}
    return any(m not in known for m in asked)


def _cached(cached: _Cache | None, recent: Sequence[str]) -> Catalog:
    """What the cache holds, or the baselines alone."""
    if cached is None:
        return Catalog(arrange([], recent), "none", recent=list(recent))
    return Catalog(arrange(cached.models, recent), "cache", cached.fetched_at, recent=list(recent))
