"""Fixtures for end-to-end tests: a loopback OpenRouter server and a way to run the real command."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.server import LoopbackServer


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A fresh loopback server per test; script it, point --base-url at `server.base_url`."""
    with LoopbackServer() as running:
        yield running
