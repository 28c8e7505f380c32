"""What every screen shares: failures become notifications (`tui.errors`), in one place."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen

from secbench_tui.tui.errors import Guarded, WorkReported, describe_error
from secbench_tui.tui.host import Host

__all__ = ["BaseScreen", "describe_error", "host_of"]


def host_of(screen: Screen[Any]) -> Host:
    app = screen.app
    assert isinstance(app, Host), f"{type(app).__name__} is not a secbench-tui host"
    return app


class BaseScreen(Guarded, WorkReported, Screen[Any]):
    @property
    def secbench(self) -> Host:
        """The app, as far as a screen needs it (`tui.host`)."""
        return host_of(self)

    def export_selection(self) -> list[int]:
        """Run ids `e` should export from this screen; empty means the report's default."""
        return []
