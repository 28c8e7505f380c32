"""The results screen's pane of one result in full (`case_detail.render_result`: the case, its
variants, the reply and how it was read), or the request it was asked with (`t`). It reads
that one row by id, never a page.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from rich.console import RenderableType
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from secbench_tui.core.store.requests import SentRequest
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.runs import RunRecord
from secbench_tui.tui.errors import Guarded, WorkReported
from secbench_tui.tui.widgets.case_detail import render_request, render_result


class ResultReads(Protocol):
    """What the pane reads: one result, its case's family (an original and its variants),
    and the request it was asked with."""

    async def result(self, evaluation_id: int) -> ResultRow | None: ...

    async def case_family(self, run_id: int, original: str) -> list[ResultRow]: ...

    async def sent_request(self, result_id: int) -> SentRequest | None: ...


class ResultDetail(Guarded, WorkReported, VerticalScroll):
    """`listed(id)`: whether a result is still in the table (a filter may have changed while
    it was read); `run_of(id)`: a run's record, for its prompt and settings."""

    def __init__(
        self,
        store: Callable[[], Awaitable[ResultReads]],
        listed: Callable[[int], bool],
        run_of: Callable[[int], RunRecord | None],
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.store = store
        self.listed = listed
        self.run_of = run_of
        self.showing_request = False  # the request sent (`t`), not the result
        self.border_title = "Result"

    def compose(self) -> ComposeResult:
        yield Static(Text("Highlight a result to see it here", style="dim"), id="detail")

    @work(exclusive=True, group="detail", exit_on_error=False, name="show_detail")
    async def show(self, result_id: int | None) -> None:
        if result_id is None:
            return
        store = await self.store()
        row: ResultRow | None = await store.result(result_id)
        if self.showing_request:
            sent = await store.sent_request(result_id)
            if not self.listed(result_id) or not self.showing_request:
                return
            run = self._run(row)
            settings = run.settings.as_dict() if run is not None else None
            shown = render_request(row, sent, settings) if row else gone(result_id)
            self._draw(f"Result {result_id}: request (t: result)", shown)
            return
        family: list[ResultRow] = []
        if row is not None and row.get("suite_kind") != "vuldetectbench":
            variant = row.get("variant")
            original = (variant["original"] if variant else None) or row.get("case_id")
            family = await store.case_family(int(row.get("run_id") or 0), str(original))
        if not self.listed(result_id):
            return  # the filter changed while it was read: that result is not listed now
        run = self._run(row)
        prompt = run.prompt_name if run is not None else None
        shown = render_result(row, prompt, family) if row else gone(result_id)
        self._draw(f"Result {result_id} (t: request sent)", shown)

    def _run(self, row: ResultRow | None) -> RunRecord | None:
        run_id = row.get("run_id") if row else None
        return self.run_of(int(run_id)) if run_id is not None else None

    def nothing(self) -> None:
        """No result is listed: a result still being read must not land after this."""
        self.workers.cancel_group(self, "detail")
        self.query_one("#detail", Static).update(Text("No results match", style="dim"))
        self.border_title = "Result"

    def _draw(self, title: str, shown: RenderableType) -> None:
        self.border_title = title
        self.query_one("#detail", Static).update(shown)
        self.scroll_home(animate=False)


def gone(result_id: int) -> Text:
    return Text(f"result {result_id} is gone")
