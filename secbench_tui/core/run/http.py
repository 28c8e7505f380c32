"""The HTTP clients of a run, made one way: every client of the process shares one TLS context.

Building a TLS context reads the whole certificate bundle (about 20 ms); a run that asks for
the model list and then runs its cases would otherwise build it twice.
"""

from __future__ import annotations

import ssl
from functools import cache

import httpx


@cache
def tls_context() -> ssl.SSLContext:
    """The default verifying context (certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR)."""
    return httpx.create_ssl_context()


def async_client(
    timeout: httpx.Timeout | float, limits: httpx.Limits | None = None
) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` with the shared TLS context."""
    if limits is None:
        return httpx.AsyncClient(timeout=timeout, verify=tls_context())
    return httpx.AsyncClient(timeout=timeout, limits=limits, verify=tls_context())
