"""Setup: choose the models, the suite, the evaluation prompts and the run's knobs; the
estimate of requests, tokens and cost (as `--dry-run` prints it) follows every change;
`ctrl+r` starts the runs (one per model x prompt)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import ValidationError
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Checkbox, Header, Input, Label, Select, SelectionList, Static
from textual.widgets.selection_list import Selection

from secbench_tui.config import Settings, describe_error
from secbench_tui.core.run import catalog as model_catalog
from secbench_tui.core.run.endpoint import check_endpoint
from secbench_tui.core.run.estimate import Estimate, estimate_lines
from secbench_tui.core.run.providers.baselines import is_baseline
from secbench_tui.core.suites.prompts import LOCAL_PROMPT, bundled_prompt_names
from secbench_tui.core.untrusted import inert, inert_line, redact_url
from secbench_tui.tui.messages import CatalogLoaded
from secbench_tui.tui.screens.base import BaseScreen
from secbench_tui.tui.screens.confirm import ConfirmScreen
from secbench_tui.tui.widgets.checklist import CheckList
from secbench_tui.tui.widgets.footer import KeyFooter
from secbench_tui.tui.widgets.model_picker import ModelPicker
from secbench_tui.tui.widgets.suite_picker import SuitePicker

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


def is_remote(base_url: str) -> bool:
    return (urlparse(base_url).hostname or "") not in LOCAL_HOSTS


def is_openrouter(base_url: str) -> bool:
    return (urlparse(base_url).hostname or "").endswith("openrouter.ai")


SHORT_SCREEN = (100, 32)  # columns, lines: under either, the compact layout


class SetupScreen(BaseScreen):
    BINDINGS = [
        Binding("ctrl+r", "start", "Run", id="setup.run", priority=True),
        Binding("slash", "filter_models", "Filter models", id="setup.filter"),
        Binding("ctrl+v", "verify", "Verify labels", id="setup.verify", priority=True),
        Binding("space", "toggle_model", "Add/remove model", id="setup.add_model"),
        Binding("escape", "leave_field", "Leave the field", id="setup.leave_field"),
    ]

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        self.estimated: Estimate | None = None  # the latest estimate shown
        self._estimates = 0

    def compose(self) -> ComposeResult:
        s = self.settings
        yield Header()
        with Horizontal(id="setup-panes"):
            with Vertical(id="model-pane", classes="pane") as pane:
                pane.border_title = "Model"
                yield ModelPicker(first(s.models), s.models[1:], id="model-picker")
            with Vertical(id="suite-pane", classes="pane") as pane:
                pane.border_title = "Suite"
                yield SuitePicker(s.cases_dir, s.apps, s.tasks, first(s.methods), id="suite-picker")
                prompts = CheckList[str](*prompt_options(s.prompts), id="prompt-list")
                prompts.border_title = "Evaluation prompts"
                yield prompts
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
                yield Checkbox(
                    "batch API: half price, slower",
                    s.batch,
                    id="batch",
                    tooltip="--batch: each run's cases go to the provider as batches, "
                    "answered within 24 hours",
                )
        yield Static(id="setup-status")
        yield Static(id="estimate")
        yield KeyFooter()

    def on_resize(self) -> None:
        """A small terminal (80x24) gets one-line fields and panes of equal width, so the
        apps, the prompts and the knobs all show; the fields' borders come back when larger."""
        short = self.size.height < SHORT_SCREEN[1] or self.size.width < SHORT_SCREEN[0]
        self.set_class(short, "-short")
        for field in self.query(Input):
            field.compact = short
        for choice in self.query(Select):
            choice.compact = short
        self.query_one("#batch", Checkbox).compact = short

    def on_mount(self) -> None:
        self.sub_title = "setup"
        self.query_one("#model-list").focus()
        picker = self.query_one(ModelPicker)
        chosen = self.settings.models[:1]
        picker.set_catalog(model_catalog.Catalog(model_catalog.arrange([], chosen), "none"))
        self.load_catalog()

    _offline_notice: str | None = None  # the model list's failure, not yet said

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
        first = list(dict.fromkeys([*self.settings.models[:1], *used]))
        base_url = self.settings.base_url
        cached = await model_catalog.read_catalog(
            base_url, fetch="never", recent=first, directory=app.cache_dir
        )
        cached.recent = used
        self.post_message(CatalogLoaded(cached))
        if app.offline_catalog:
            return
        fresh = await model_catalog.read_catalog(
            base_url, fetch="always", recent=first, directory=app.cache_dir
        )
        fresh.recent = used
        self.post_message(CatalogLoaded(fresh))
        if fresh.error:
            shown = "the cached list" if fresh.source == "cache" else "the baselines"
            self._offline_notice = (
                f"{fresh.error}.\nShowing {shown} and recent models; a model id typed in the "
                "filter works too."
            )
            self._say_offline()

    def _say_offline(self) -> None:
        """The model list's failure, said on this screen only: over the results or a run it
        would hide a table's columns and concern nothing there (said on coming back)."""
        if self._offline_notice and self.app.screen is self:  # not is_current: true below too
            notice, self._offline_notice = self._offline_notice, None
            self.notify(notice, title="model list offline", severity="warning", timeout=8)

    def on_catalog_loaded(self, message: CatalogLoaded) -> None:
        self.query_one(ModelPicker).set_catalog(message.catalog)
        self.refresh_status()

    def action_filter_models(self) -> None:
        self.query_one(ModelPicker).focus_filter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """In a text field `/` and space are typed, not keys of the screen: the footer does
        not offer them there, and escape leaves the field (to the model list)."""
        typing = isinstance(self.focused, Input)
        if action in ("filter_models", "toggle_model"):
            return not typing
        if action == "leave_field":
            return typing
        return True

    def action_leave_field(self) -> None:
        self.query_one("#model-list").focus()

    def on_descendant_focus(self) -> None:
        self.refresh_bindings()

    def on_screen_resume(self) -> None:
        """Back from a run: what it stored is reused now, so the estimate is drawn again."""
        if self.is_mounted:
            self.refresh_estimate()
            self._say_offline()

    def action_toggle_model(self) -> None:
        self.query_one(ModelPicker).toggle_highlighted()

    @work(group="estimate", exit_on_error=False)
    async def refresh_estimate(self) -> None:
        """What the runs on screen would ask and cost, as `--dry-run` says it. Each change
        starts one; only the latest shows (none is cancelled: tests wait for them all)."""
        self._estimates += 1
        mine = self._estimates
        field = self.query_one("#estimate", Static)
        try:
            settings = self.chosen_settings()
            if not settings.models:
                field.update("")
                return
            from secbench_tui.planning.plan import plan as make_plan

            catalog = self.query_one(ModelPicker).catalog  # what the run will be given
            plan = await asyncio.to_thread(make_plan, settings, catalog)
            found = await plan.estimate(await self.secbench.store())
        except Exception as exc:  # settings still being typed: say what is wrong, quietly
            if mine == self._estimates:
                field.update(Text(f"estimate: {describe(exc)}", style="dim"))
            return
        if mine != self._estimates:
            return
        lines = estimate_lines(found)
        runs = f"{len(plan.cells)} run(s): " if len(plan.cells) > 1 else ""
        # the total and how it was estimated; with --batch, the total and the batch price
        shown = [lines[-3], lines[-1]] if found.batched else lines[-2:]
        field.update(Text(runs + "\n".join(shown), style="dim"))
        self.estimated = found

    @on(ModelPicker.Chosen)
    @on(SuitePicker.Changed)
    @on(SelectionList.SelectedChanged, "#prompt-list")
    @on(Input.Changed, "#limit")
    @on(Checkbox.Changed, "#batch")
    def refresh_status(self) -> None:
        self.refresh_estimate()
        picker = self.query_one(ModelPicker)
        model = ", ".join(picker.selected) or None
        suite = self.query_one(SuitePicker)
        # VulDetectBench prompts are the benchmark's own: its method chooses among them
        self.query_one("#prompt-list").display = not suite.choice.vuldetectbench
        n = suite.case_count()
        limit = self.query_one("#limit", Input).value.strip()
        cases = f"{n} cases"
        if limit.isdigit() and suite.case_count(int(limit)) < n:
            per_task = " per task" if suite.choice.vuldetectbench else ""
            cases = f"{suite.case_count(int(limit))} of {n} cases (limit {limit}{per_task})"
        s = self.settings
        key = "key set" if s.key else "no key"
        if picker.selected and all(is_baseline(m) for m in picker.selected):
            key = "offline baseline: no key needed"
        elif model and not s.key:
            key = "no key: set OPENROUTER_API_KEY" if is_remote(s.base_url) else "no key (local)"
        status = Text.assemble(
            ("model ", "dim"),
            (inert_line(model) if model else "none: choose one", "bold" if model else "bold red"),
            ("  ·  ", "dim"),
            cases,
            ("  ·  ", "dim"),
            f"db {inert_line(s.db)}",
            ("  ·  ", "dim"),
            (key, "yellow" if key.startswith("no key") else "green"),
            ("  ·  ctrl+r runs", "dim"),
        )
        self.query_one("#setup-status", Static).update(status)

    def chosen_settings(self) -> Settings:
        """The settings on screen, validated like the flags are."""
        suite = self.query_one(SuitePicker)
        updates: dict[str, Any] = dict(suite.updates())
        picker = self.query_one(ModelPicker)
        updates["models"] = picker.selected or ([picker.chosen] if picker.chosen else [])
        updates["methods"] = []  # the method on screen (the suite picker's `method`)
        prompts = list(self.query_one("#prompt-list", SelectionList).selected)
        updates["prompts"] = [] if suite.choice.vuldetectbench else prompts
        for field in ("limit", "temperature", "concurrency"):
            value = self.query_one(f"#{field}", Input).value.strip()
            updates[field] = value or None
        if updates["concurrency"] is None:  # an empty field: the declared default
            updates["concurrency"] = Settings.model_fields["concurrency"].default
        updates["batch"] = self.query_one("#batch", Checkbox).value
        return self.settings.replace(**updates)

    def action_start(self) -> None:
        try:
            settings = self.chosen_settings()
        except ValidationError as exc:
            self.notify(describe_error(exc), title="check the settings", severity="error")
            return
        if not settings.models:
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
        vuldetectbench = self.query_one(SuitePicker).choice.vuldetectbench
        if not vuldetectbench and not settings.prompts:
            self.notify("choose at least one evaluation prompt", severity="warning")
            return
        if all(is_baseline(m) for m in settings.models):
            self.secbench.start_run(settings, self.query_one(ModelPicker).catalog)
        elif self.secbench.offline_catalog:  # asked never to touch the network from here
            self.confirm_key_then_start(settings)
        else:
            self.check_then_start(settings)

    @work(exclusive=True, group="endpoint", exit_on_error=False)
    async def check_then_start(self, settings: Settings) -> None:
        """Say what the endpoint answered before a run is started against it."""
        self.notify(f"checking {redact_url(settings.base_url)}…", timeout=3)
        found = await check_endpoint(settings.base_url)
        if found.reachable:
            self.confirm_key_then_start(settings)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.confirm_key_then_start(settings)

        self.app.push_screen(
            ConfirmScreen(
                f"{inert(found.message)}.\n\nA run would stop after a few failed attempts "
                "and record nothing. Start anyway?",
                yes="Start anyway",
                no="Back",
            ),
            answered,
        )

    def confirm_key_then_start(self, settings: Settings) -> None:
        if settings.key or not is_remote(settings.base_url):
            self.secbench.start_run(settings, self.query_one(ModelPicker).catalog)
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
                self.secbench.start_run(settings, self.query_one(ModelPicker).catalog)

        self.app.push_screen(
            ConfirmScreen(
                f"No API key is set for {redact_url(settings.base_url)}.\n"
                "Set OPENROUTER_API_KEY in the environment or in .env; without one every "
                "request will most likely fail.\n\nStart anyway?",
                yes="Start",
                no="Back",
            ),
            answered,
        )

    def action_verify(self) -> None:
        """Prove the selected apps' labels on PostgreSQL (what `--verify` does)."""
        picker = self.query_one(SuitePicker)
        if picker.choice.vuldetectbench or picker.choice.problem:
            self.notify(
                "Verification runs the cases of a markdown suite; load one first.",
                severity="warning",
            )
            return
        if not picker.selected:
            self.notify("choose at least one app", severity="warning")
            return
        from secbench_tui.config import is_bundled_suite
        from secbench_tui.core.verify import SUITE_CODE_NOTICE
        from secbench_tui.tui.screens.verify import VerifyScreen

        root, apps = picker.choice.root, list(picker.selected)

        def answered(go: bool | None) -> None:
            if go:
                self.app.push_screen(VerifyScreen(root, apps))

        if is_bundled_suite(root):
            answered(True)
            return
        question = f"{root}\n\nThis is not the bundled suite: {SUITE_CODE_NOTICE}.\n\nVerify it?"
        self.app.push_screen(ConfirmScreen(question, yes="Verify", no="Back"), answered)


def first(values: Sequence[str | None]) -> str | None:
    return values[0] if values else None


def _text(value: object) -> str:
    return "" if value is None else str(value)


def describe(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        return describe_error(exc)
    return str(exc)


def prompt_options(given: list[str]) -> list[Selection[str]]:
    """The bundled prompts, `./evaluation-prompt.txt` when present, and any given by flag;
    those given are ticked (by default the local file, else `default`)."""
    names: list[str] = []
    if Path(LOCAL_PROMPT).is_file():
        names.append(LOCAL_PROMPT)
    names += [*bundled_prompt_names(), *given]
    ticked = set(given) or {LOCAL_PROMPT if Path(LOCAL_PROMPT).is_file() else "default"}
    return [Selection(inert_line(name), name, name in ticked) for name in dict.fromkeys(names)]
