"""Setup: choose the model, the suite and the run's knobs; `ctrl+r` starts the run."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from pydantic import ValidationError
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Header, Input, Label, Static

from secbench_tui.config import Settings
from secbench_tui.core import catalog as model_catalog
from secbench_tui.core.providers.baselines import is_baseline
from secbench_tui.tui.messages import CatalogLoaded
from secbench_tui.tui.screens.base import BaseScreen
from secbench_tui.tui.screens.confirm import ConfirmScreen
from secbench_tui.tui.widgets.model_picker import ModelPicker
from secbench_tui.tui.widgets.suite_picker import SuitePicker

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


def is_remote(base_url: str) -> bool:
    return (urlparse(base_url).hostname or "") not in LOCAL_HOSTS


def is_openrouter(base_url: str) -> bool:
    return (urlparse(base_url).hostname or "").endswith("openrouter.ai")


def settings_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    field = ".".join(str(p) for p in error["loc"])
    return f"{field}: {error['msg'].removeprefix('Value error, ')}"


class SetupScreen(BaseScreen):
    BINDINGS = [
        Binding("ctrl+r", "start", "Run", id="setup.run", priority=True),
        Binding("slash", "filter_models", "Filter models", id="setup.filter"),
    ]

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings

    def compose(self) -> ComposeResult:
        s = self.settings
        yield Header()
        with Horizontal(id="setup-panes"):
            with Vertical(id="model-pane", classes="pane") as pane:
                pane.border_title = "Model"
                yield ModelPicker(s.model, id="model-picker")
            with Vertical(id="suite-pane", classes="pane") as pane:
                pane.border_title = "Suite"
                yield SuitePicker(s.cases_dir, s.apps, s.tasks, s.method, id="suite-picker")
                with Horizontal(id="knobs"):
                    with Vertical():
                        yield Label("limit")
                        yield Input(_text(s.limit), placeholder="all", type="integer", id="limit")
                    with Vertical():
                        yield Label("temperature")
                        yield Input(
                            _text(s.temperature),
                            placeholder="default",
                            type="number",
                            id="temperature",
                        )
                    with Vertical():
                        yield Label("concurrency")
                        yield Input(str(s.concurrency), type="integer", id="concurrency")
        yield Static(id="setup-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "setup"
        self.query_one("#model-list").focus()
        picker = self.query_one(ModelPicker)
        chosen = [self.settings.model] if self.settings.model else []
        picker.set_catalog(model_catalog.Catalog(model_catalog.arrange([], chosen), "none"))
        self.load_catalog()

    @work(exclusive=True, group="catalog", exit_on_error=False)
    async def load_catalog(self) -> None:
        """The cached list at once, then the fresh one when the endpoint answers."""
        app = self.secbench
        used: list[str] = []
        try:
            used = await model_catalog.recent_models(await app.store())
        except Exception as exc:  # a bad --db should not hide the model list
            self.notify(str(exc), title="database", severity="warning")
        # the model given first, then the ones used before; only those are tagged "recent"
        first = list(
            dict.fromkeys([*([self.settings.model] if self.settings.model else []), *used])
        )
        base_url = self.settings.base_url
        cached = model_catalog.cached_catalog(base_url, first, app.cache_dir)
        cached.recent = used
        self.post_message(CatalogLoaded(cached))
        if app.offline_catalog:
            return
        fresh = await model_catalog.load_catalog(base_url, first, app.cache_dir)
        fresh.recent = used
        self.post_message(CatalogLoaded(fresh))
        if fresh.error:
            shown = "the cached list" if fresh.source == "cache" else "the baselines"
            self.notify(
                f"{fresh.error}.\nShowing {shown} and recent models; a model id typed in the "
                "filter works too.",
                title="model list offline",
                severity="warning",
                timeout=8,
            )

    def on_catalog_loaded(self, message: CatalogLoaded) -> None:
        self.query_one(ModelPicker).set_catalog(message.catalog)
        self.refresh_status()

    def action_filter_models(self) -> None:
        self.query_one(ModelPicker).focus_filter()

    @on(ModelPicker.Chosen)
    @on(SuitePicker.Changed)
    @on(Input.Changed, "#limit")
    def refresh_status(self) -> None:
        model = self.query_one(ModelPicker).chosen
        suite = self.query_one(SuitePicker)
        n = suite.case_count()
        limit = self.query_one("#limit", Input).value.strip()
        cases = f"{n} cases"
        if limit.isdigit() and suite.case_count(int(limit)) < n:
            per_task = " per task" if suite.choice.vuldetectbench else ""
            cases = f"{suite.case_count(int(limit))} of {n} cases (limit {limit}{per_task})"
        s = self.settings
        key = "key set" if s.key else "no key"
        if model and is_baseline(model):
            key = "offline baseline: no key needed"
        elif model and not s.key:
            key = "no key: set OPENROUTER_API_KEY" if is_remote(s.base_url) else "no key (local)"
        status = Text.assemble(
            ("model ", "dim"),
            (model or "none: choose one", "bold" if model else "bold red"),
            ("  ·  ", "dim"),
            cases,
            ("  ·  ", "dim"),
            f"db {s.db}",
            ("  ·  ", "dim"),
            (key, "yellow" if key.startswith("no key") else "green"),
            ("  ·  ctrl+r runs", "dim"),
        )
        self.query_one("#setup-status", Static).update(status)

    def chosen_settings(self) -> Settings:
        """The settings on screen, validated like the flags are."""
        updates: dict[str, Any] = dict(self.query_one(SuitePicker).updates())
        updates["model"] = self.query_one(ModelPicker).chosen
        for field in ("limit", "temperature", "concurrency"):
            value = self.query_one(f"#{field}", Input).value.strip()
            updates[field] = value or None
        if updates["concurrency"] is None:
            updates["concurrency"] = 1
        data = self.settings.model_dump()
        data.update(updates)
        return Settings.model_validate(data)

    def action_start(self) -> None:
        try:
            settings = self.chosen_settings()
        except ValidationError as exc:
            self.notify(settings_error(exc), title="check the settings", severity="error")
            return
        if not settings.model:
            self.notify("choose a model first (/ filters the list)", severity="warning")
            return
        edited = self.query_one(SuitePicker).edited_path
        if edited is not None:
            self.notify(
                f"The suite folder reads {edited} but is not loaded: press Enter in it to load "
                "it (and see its apps), or put back the folder shown.",
                title="suite folder not loaded",
                severity="warning",
            )
            return
        if not self.query_one(SuitePicker).selected:
            self.notify("choose at least one app or task", severity="warning")
            return
        if is_baseline(settings.model) or settings.key or not is_remote(settings.base_url):
            self.secbench.start_run(settings)
            return
        if is_openrouter(settings.base_url):  # it refuses every request without a key
            self.notify(
                "OpenRouter needs a key: set OPENROUTER_API_KEY in the environment or in .env "
                "and start the app again, or choose a baseline/* model to run offline.",
                title="no API key",
                severity="error",
                timeout=12,
            )
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.secbench.start_run(settings)

        self.app.push_screen(
            ConfirmScreen(
                f"No API key is set for {settings.base_url}.\n"
                "Set OPENROUTER_API_KEY in the environment or in .env; without one every "
                "request will most likely fail.\n\nStart anyway?",
                yes="Start",
                no="Back",
            ),
            answered,
        )


def _text(value: object) -> str:
    return "" if value is None else str(value)
