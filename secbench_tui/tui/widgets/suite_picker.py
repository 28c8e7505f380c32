"""Choose what to ask: apps of a markdown suite (with case counts) or VulDetectBench tasks.

Counting is by file names and lines only, so a large suite lists at once; the cases are read
when the run starts, by the same `session.load_suite` the headless runner uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Label, Select, SelectionList, Static
from textual.widgets.selection_list import Selection

from secbench_tui.config import VDB_METHODS
from secbench_tui.core.suites.markdown import SuiteError, read_app_prompt
from secbench_tui.core.untrusted import inert
from secbench_tui.planning.cells import is_vuldetectbench
from secbench_tui.tui.errors import Guarded
from secbench_tui.tui.plain import plain_line
from secbench_tui.tui.widgets.checklist import CheckList

ALL_TASKS = {1, 2, 3, 4, 5}  # the default of --tasks, which is no request for a task


@dataclass(frozen=True)
class SuiteChoice:
    """What the picker shows for one folder: apps or tasks, with how many cases each has."""

    root: Path
    vuldetectbench: bool
    groups: list[tuple[str, int]]  # (app name | task number as text, cases)
    problem: str | None = None
    unusable: tuple[str, ...] = ()  # app folders whose SPEC.md cannot be used, and why


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def scan_suite(root: Path) -> SuiteChoice:
    if not root.is_dir():
        return SuiteChoice(root, False, [], f"{root}: no such folder")
    if is_vuldetectbench(root):
        tasks = [
            (str(n), _count_lines(root / f"task{n}_code.jsonl"))
            for n in range(1, 6)
            if (root / f"task{n}_code.jsonl").is_file()
        ]
        return SuiteChoice(root, True, tasks)
    folders = [f for f in sorted(root.iterdir()) if f.is_dir() and (f / "SPEC.md").is_file()]
    apps, unusable = [], []
    for folder in folders:
        try:
            read_app_prompt(folder / "SPEC.md")
        except SuiteError as exc:  # no "# Prompt": it would fail only when the run starts
            unusable.append(str(exc))
            continue
        apps.append((folder.name, sum(1 for p in folder.glob("*.md") if p.name != "SPEC.md")))
    problem = None if apps else f"{root}: no usable app folders (a SPEC.md with '# Prompt')"
    return SuiteChoice(root, False, apps, problem, tuple(unusable))


class SuitePicker(Guarded, Vertical):
    class Changed(Message):
        """The folder or the selection changed; the screen recounts."""

    def __init__(
        self,
        root: Path,
        apps: list[str] | None,
        tasks: list[int],
        method: str | None,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.choice = scan_suite(root)
        self._apps = apps
        self._tasks = tasks
        self._method = method

    def compose(self) -> ComposeResult:
        yield Input(str(self.choice.root), placeholder="suite folder", id="cases-path")
        yield Static(id="suite-kind")
        yield CheckList[str](id="groups")
        with Horizontal(id="method-row"):
            yield Label("method ")
            yield Select(
                [(m, m) for m in VDB_METHODS],
                value=self._method if self._method in VDB_METHODS else Select.NULL,
                prompt="default",
                id="method",
            )

    def on_mount(self) -> None:
        self._fill()

    def _fill(self) -> None:
        choice = self.choice
        groups = self.query_one("#groups", SelectionList)
        groups.clear_options()
        if choice.vuldetectbench:
            picked = {str(t) for t in self._tasks} if self._tasks else {n for n, _ in choice.groups}
            groups.add_options(
                Selection(plain_line(f"task{name} ({n})"), name, name in picked)
                for name, n in choice.groups
            )
            kind = "VulDetectBench tasks (cases) · space ticks"
        else:
            picked = set(self._apps) if self._apps else {name for name, _ in choice.groups}
            groups.add_options(
                Selection(plain_line(f"{name} ({n})"), name, name in picked)
                for name, n in choice.groups
            )
            kind = "apps (cases) · space ticks"
        shown = Text(inert(choice.problem)) if choice.problem else Text(kind)
        for reason in choice.unusable:
            shown.append("\nnot listed: " + inert(reason), style="yellow")
        self.query_one("#suite-kind", Static).update(shown)
        self.query_one("#method-row").display = choice.vuldetectbench
        if choice.vuldetectbench and set(self._tasks) == ALL_TASKS:
            picked &= {name for name, _ in choice.groups}  # the default: whatever it has
        self._warn_unknown(picked)
        self._apps, self._tasks = None, []  # another folder starts with everything ticked
        self.post_message(self.Changed())

    def _warn_unknown(self, picked: set[str]) -> None:
        """Apps or tasks asked for (--apps, --tasks) that this folder does not have."""
        names = [name for name, _ in self.choice.groups]
        unknown = sorted(picked - set(names))
        if not unknown or self.choice.problem:
            return
        if self.choice.vuldetectbench:
            flag, unknown, names = (
                "--tasks",
                [f"task{n}" for n in unknown],
                [f"task{n}" for n in names],
            )
        else:
            flag = "--apps"
        self.notify(
            f"{flag}: {', '.join(unknown)} not in {self.choice.root}; it has {', '.join(names)}",
            title="not in this suite",
            severity="warning",
            timeout=10,
        )

    @on(Input.Submitted, "#cases-path")
    def _path_submitted(self, event: Input.Submitted) -> None:
        self.choice = scan_suite(Path(event.value).expanduser())
        self._fill()

    @on(SelectionList.SelectedChanged, "#groups")
    @on(Select.Changed, "#method")
    def _selection_changed(self) -> None:
        self.post_message(self.Changed())

    @property
    def edited_path(self) -> str | None:
        """The folder typed in the path field but not loaded yet (Enter loads it)."""
        typed = self.query_one("#cases-path", Input).value.strip()
        return typed if Path(typed).expanduser() != self.choice.root else None

    @property
    def selected(self) -> list[str]:
        return list(self.query_one("#groups", SelectionList).selected)

    @property
    def method(self) -> str | None:
        value = self.query_one("#method", Select).value
        return value if isinstance(value, str) else None

    def case_count(self, limit: int | None = None) -> int:
        """Cases the chosen apps or tasks hold; with `limit`, how many a run would ask (the
        first `limit` of a markdown suite, of each VulDetectBench task: as `load_suite`)."""
        chosen = set(self.selected)
        counts = [n for name, n in self.choice.groups if name in chosen]
        if limit is None:
            return sum(counts)
        if self.choice.vuldetectbench:
            return sum(min(n, limit) for n in counts)
        return min(sum(counts), limit)

    def updates(self) -> dict[str, object]:
        """The Settings fields this picker decides."""
        if self.choice.vuldetectbench:
            return {
                "cases": self.choice.root,
                "tasks": [int(t) for t in self.selected],
                "method": self.method,
                "apps": None,
            }
        # with an unusable app in the folder, "all" must name the usable ones
        everything = len(self.selected) == len(self.choice.groups) and not self.choice.unusable
        return {"cases": self.choice.root, "apps": None if everything else self.selected}
