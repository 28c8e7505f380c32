"""Verify: prove the selected suite's labels on PostgreSQL (`--verify`), one row per case.

The verification runs in a thread (psycopg and the embedded server block); each case's proof
is handed to the screen as it is decided. Enter on a row opens its proof: the parameter set,
the rules and the rows that prove it (the witness). Leaving the screen stops the verification at the
next case; the embedded server is stopped and removed either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Header, Static
from textual.widgets.data_table import ColumnKey, RowKey
from textual.worker import get_current_worker

from secbench_tui.core.untrusted import inert, inert_line
from secbench_tui.core.verify.extra import missing
from secbench_tui.core.verify.judge import proof_text, witness_line
from secbench_tui.core.verify.models import CaseProof, Proof, VerifyReport
from secbench_tui.core.verify.stopping import Stop, Stopped
from secbench_tui.tui.screens.base import BaseScreen, describe_error
from secbench_tui.tui.widgets.footer import KeyFooter

PROOF_STYLES = {Proof.PROVEN: "green", Proof.FAILED: "bold red", Proof.NOT_VERIFIABLE: "yellow"}


class VerifyStopped(Exception):
    """The screen was left: stop verifying at the next case."""


class ProofScreen(ModalScreen[None]):
    """One case's proof in full: its witness (parameter set, rules, rows) or why it failed."""

    BINDINGS = [Binding("escape", "dismiss", "Close", id="proof.close")]
    DEFAULT_CSS = """
    ProofScreen { align: center middle; }
    ProofScreen > VerticalScroll { width: 90%; height: 80%; border: round $accent; padding: 0 1; }
    """

    def __init__(self, proof: CaseProof) -> None:
        super().__init__()
        self.proof = proof

    def compose(self) -> ComposeResult:
        text = Text("\n".join(inert_line(line) for line in proof_text(self.proof)))
        with VerticalScroll():
            yield Static(text, id="proof-text")


class VerifyScreen(BaseScreen):
    BINDINGS = [Binding("escape", "back", "Back to setup", id="verify.back")]

    def __init__(self, cases_dir: Path, apps: Sequence[str] | None) -> None:
        super().__init__()
        self.cases_dir = cases_dir
        self.apps = list(apps) if apps else None
        self.report: VerifyReport | None = None
        self.proofs: dict[RowKey, CaseProof] = {}  # by the table's row key
        self.failed: str | None = None  # why the verification stopped, if it did
        self.halt = Stop()  # set when the screen goes: the statement in flight ends at once

    def compose(self) -> ComposeResult:
        yield Header()
        which = ", ".join(self.apps) if self.apps else "every app"
        yield Static(
            inert_line(f"Verifying {self.cases_dir} ({which}) on the embedded PostgreSQL…"),
            id="verify-status",
        )
        yield DataTable(id="verify-table", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = "verify labels"
        table = self.query_one(DataTable)
        table.add_columns("proof", "case", "label")
        table.add_column("why", key="why")
        table.border_title = "Cases (enter: a case's proof)"
        table.focus()
        self.run_verify()

    @work(thread=True, exclusive=True, group="verify", exit_on_error=False)
    def run_verify(self) -> None:
        from secbench_tui.core.suites.markdown import SuiteError

        try:
            from secbench_tui.core.verify.runner import verify_suite
            from secbench_tui.core.verify.server import ServerError
        except ImportError as exc:  # the verify extra is not installed: say how to get it
            self.app.call_from_thread(self.show_problem, missing(exc))
            return
        worker = get_current_worker()

        def progress(proof: CaseProof) -> None:
            if worker.is_cancelled:
                raise VerifyStopped
            self.app.call_from_thread(self.add_proof, proof)

        try:
            report = verify_suite(self.cases_dir, self.apps, None, progress, stop=self.halt)
        except (VerifyStopped, Stopped):
            return
        except (SuiteError, ServerError) as exc:
            self.app.call_from_thread(self.show_problem, str(exc))
            return
        except Exception as exc:  # the verification broke: the screen says so, not "Verifying…"
            self.app.call_from_thread(self.show_problem, describe_error(exc))
            return
        self.app.call_from_thread(self.finish, report)

    def on_unmount(self) -> None:
        self.halt.set()

    def add_proof(self, proof: CaseProof) -> None:
        key = self.query_one(DataTable).add_row(
            Text(proof.proof.value, style=PROOF_STYLES[proof.proof]),
            Text(inert_line(proof.case_id)),
            Text(inert_line(proof.expected)),
            self._why(proof),
        )
        self.proofs[key] = proof
        self._fit_why()

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_why)

    def _fit_why(self) -> None:
        """The `why` column takes the width the others leave, its long texts cut with `…`
        (enter opens a row's proof in full), so no column runs off the screen."""
        table = self.query_one(DataTable)
        others = sum(c.get_render_width(table) for c in table.ordered_columns if c.key != "why")
        width = max(12, table.size.width - others - 2 - 2)  # its padding, a scrollbar
        why = table.columns[ColumnKey("why")]
        if why.width != width or why.auto_width:
            why.auto_width = False
            why.width = width
            for key, proof in self.proofs.items():
                table.update_cell(key, "why", self._why(proof))
            table.refresh()

    @staticmethod
    def _why(proof: CaseProof) -> Text:
        """Why a case is or is not proven: its witness, or what stopped the proof."""
        detail = "" if proof.proof is Proof.PROVEN else proof.detail
        if proof.proof is Proof.PROVEN and proof.witness is not None:
            detail = witness_line(proof.witness)
        return Text(inert_line(detail), no_wrap=True, overflow="ellipsis")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        proof = self.proofs.get(event.row_key)
        if proof is not None:
            self.app.push_screen(ProofScreen(proof))

    def show_problem(self, message: str) -> None:
        """The verification stopped: what is listed stays, the status says why and how on."""
        self.failed = message
        done = len(self.proofs)
        self.query_one("#verify-status", Static).update(
            Text.assemble(
                ("Verification stopped", "bold red"),
                f" after {done} case{'s' if done != 1 else ''}: " if done else ": ",
                (inert(message), "red"),
                ("\nescape goes back to setup", "bold"),
            )
        )

    def finish(self, report: VerifyReport) -> None:
        self.report = report
        counts = ", ".join(f"{report.count(p)} {p.value}" for p in Proof)
        verdict = ("every verifiable case proven", "green") if report.ok else ("FAIL", "bold red")
        self.query_one("#verify-status", Static).update(
            Text.assemble(
                (inert_line(f"ran on {report.engine}"), "dim"),
                ("  ·  ", "dim"),
                f"{len(report.cases)} cases: {counts} in {report.seconds:.1f} s",
                ("  ·  ", "dim"),
                verdict,
            )
        )

    def action_back(self) -> None:
        self.workers.cancel_group(self, "verify")
        self.app.pop_screen()
