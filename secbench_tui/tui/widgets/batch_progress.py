"""The run screen's batches (`--batch`): each batch's status and counts, and what the run
waits on (the provider, not this tool), redrawn after every poll.

Hidden until a run has a batch. The lines are the headless runner's (`core.run.batch.progress`
renders them once); the provider's ids and statuses in them are already made inert there, and
the text is shown as it is, never read as markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from secbench_tui.core.run.batch.progress import batch_line, waiting_line
from secbench_tui.core.run.events import BatchProgress


class BatchPanel(Static):
    """The batches of every run of the screen, by the run's place in the plan."""

    DEFAULT_CSS = """
    BatchPanel { display: none; height: auto; max-height: 8; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.progress: dict[int, BatchProgress] = {}

    def show(self, progress: BatchProgress, slot: int = 0) -> None:
        self.progress[slot] = progress
        self.display = True
        self.update(self.render_progress())

    def render_progress(self) -> Text:
        text = Text()
        for slot in sorted(self.progress):
            progress = self.progress[slot]
            for view in progress.batches:
                text.append(batch_line(view) + "\n", style="dim" if view.read else "")
            text.append(waiting_line(progress) + "\n", style="bold yellow")
        text.rstrip()
        return text
