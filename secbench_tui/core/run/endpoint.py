"""Is the endpoint there? One quick request before a run starts, so a dead endpoint is named
before any case is asked rather than after a screen of failures.

Any HTTP answer at all (even 401 or 404) shows a server is listening; only a connection that
cannot be made, or no answer in time, counts as unreachable.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx

from secbench_tui.core.run.http import async_client
from secbench_tui.core.run.providers.retry import one_line
from secbench_tui.core.untrusted import redact_url


@dataclass(frozen=True)
class EndpointCheck:
    """What `GET {base_url}/models` found."""

    base_url: str
    reachable: bool
    detail: str  # one line: "HTTP 200", "ConnectError: [Errno 111] Connection refused"

    @property
    def message(self) -> str:
        where = redact_url(self.base_url)
        if self.reachable:
            return f"{where} answered ({self.detail})"
        return (
            f"cannot reach {where} ({self.detail}); check that the server is running and "
            "that the base URL is right (host, port, http or https)"
        )


async def check_endpoint(
    base_url: str, timeout: float = 5.0, client: httpx.AsyncClient | None = None
) -> EndpointCheck:
    """`GET {base_url}/models` within `timeout` seconds, whole; never raises."""
    url = base_url.rstrip("/") + "/models"
    owned = client is None
    http = client or async_client(timeout)
    try:
        async with asyncio.timeout(timeout):  # whole: a server that trickles counts as down
            response = await http.get(url, headers={"Accept": "application/json"})
    except TimeoutError:
        return EndpointCheck(base_url, False, f"no answer within {timeout:g}s")
    except httpx.HTTPError as exc:
        return EndpointCheck(base_url, False, one_line(f"{type(exc).__name__}: {exc}", 200))
    except ValueError as exc:  # a URL httpx cannot even parse
        return EndpointCheck(base_url, False, one_line(f"{type(exc).__name__}: {exc}", 200))
    finally:
        if owned:
            await http.aclose()
    return EndpointCheck(base_url, True, f"HTTP {response.status_code}")
