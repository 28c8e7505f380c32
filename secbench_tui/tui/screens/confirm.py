"""A yes/no question in a modal: stop the run? quit anyway? start without a key?"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from secbench_tui.tui.errors import Guarded
from secbench_tui.tui.plain import plain


class ConfirmScreen(Guarded, ModalScreen[bool]):
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.question = question
        self.yes_label = yes
        self.no_label = no

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(plain(self.question), id="confirm-question")
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.yes_label} (y)", id="yes", variant="warning")
                yield Button(f"{self.no_label} (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
