"""Fixtures for end-to-end tests: a loopback OpenRouter server and a way to run the real command."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# `tests.e2e.server` must import however pytest was started (`pytest` or `python -m pytest`).
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.e2e.server import LoopbackServer  # noqa: E402


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A fresh loopback server per test; script it, point --base-url at `server.base_url`."""
    with LoopbackServer() as running:
        yield running
