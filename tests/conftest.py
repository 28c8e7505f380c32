"""What every test shares: nothing outside its own folders.

The tests run in parallel (`pytest -n auto`), so none may write where another reads: the model
catalog the program caches under `$XDG_CACHE_HOME` goes to the test's own folder (inherited by
the commands the tests start), never to the user's `~/.cache`.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `long` first (in their own order): with `-n auto` the run then ends on
    short tests that fill both workers, not on one long test started last."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
