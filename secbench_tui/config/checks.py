"""The checks of settings beyond their types and bounds, each with words for the user.

The settings models (`config.models`) run these as pydantic validators; a ValueError's message
is what `config.errors.describe_error` says after the setting's flag.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from pydantic import SecretStr

from secbench_tui.config.flags import VDB_PLAIN
from secbench_tui.core.untrusted import redact_url


def usable_key(value: SecretStr | None) -> SecretStr | None:
    """The key as pasted, without the quotes and spaces a copy brings; None when empty."""
    if value is None:
        return None
    key = value.get_secret_value().strip().strip("'\"")
    if not all("!" <= ch <= "~" for ch in key):
        raise ValueError(  # shown after the variable's name, which is not repeated
            "holds spaces, line breaks or non-ASCII characters; copy the key again into "
            "the environment or .env"
        )
    return SecretStr(key) if key else None


def http_url(value: str) -> str:
    """An API root the client can use, without a trailing slash."""
    try:
        parsed = urlparse(value.strip())
    except ValueError as exc:  # `http://[::1`: urlparse's own words would name no fix
        raise ValueError(
            f"{redact_url(value)!r} is not a URL the client can use ({exc}); give the API root, "
            "e.g. http://127.0.0.1:11434/v1"
        ) from exc
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(
            f"{redact_url(value)!r} is not an http(s) URL; give the API root, "
            "e.g. http://127.0.0.1:11434/v1"
        )
    import httpx  # already loaded with the settings; the client would refuse it later

    try:
        httpx.URL(value.strip())
        parsed.port  # noqa: B018 - raises on a port out of range, which httpx lets through
    except (httpx.InvalidURL, ValueError) as exc:
        raise ValueError(
            f"{redact_url(value)!r} is not a URL the client can use ({exc}); give the "
            "API root, e.g. http://127.0.0.1:11434/v1"
        ) from exc
    return value.strip().rstrip("/")


def known_tasks(value: list[int]) -> list[int]:
    bad = [t for t in value if t not in (1, 2, 3, 4, 5)]
    if bad or not value:
        raise ValueError("takes numbers from 1 to 5, e.g. --tasks 1,3")
    return sorted(set(value))


def once_each(value: list[Any]) -> list[Any]:
    """A model or method given twice is run once."""
    return list(dict.fromkeys(value))


def known_methods(value: Any, methods: tuple[str, ...]) -> Any:
    """Named as the flag takes them: `plain` is the benchmark's prompts without a method."""
    given = value if isinstance(value, list) else [value]
    bad = [m for m in given if m is not None and m not in methods]
    if bad:
        raise ValueError(f"must be {VDB_PLAIN} or one of {', '.join(methods)} (got {bad[0]!r})")
    return value
