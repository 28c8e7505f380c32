"""The results screen's status line: what is shown (how many of how many, in which order),
which filters and marks hold, the highlighted run's names whole, and, first, what to do when
the filters together match nothing.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from secbench_tui.core.store.runs import RunRecord
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui.widgets.result_filters import FILTERS
from secbench_tui.tui.widgets.results_table import ResultsTable


class ResultsStatus(Static):
    def show(
        self,
        table: ResultsTable,
        marked: set[int],
        following: bool,
        highlighted: RunRecord | None,
    ) -> None:
        """`following`: a run of this session is writing; `highlighted`: the run under the
        cursor of the focused runs table (its names whole: the table may have cut them)."""
        flt = table.filter
        order = "newest first" if table.newest_first else "oldest first"
        parts = [f"showing {table.row_count:,} of {table.total:,} results, {order}"]
        if table.sort_key != "id":
            way = "descending" if table.newest_first else "ascending"
            parts[0] = (
                f"showing {table.row_count:,} of {table.total:,} results, "
                f"by {table.sort_key.removesuffix('_id')} {way}"
            )
        if flt.run_ids:
            parts.append(f"run {flt.run_ids[0]}")
        chosen = (flt.models, flt.prompts, flt.apps, flt.outcomes)
        for label, values in zip(FILTERS, chosen, strict=True):
            if values:
                parts.append(f"{label} {inert_line(values[0])}")
        if flt.text:
            parts.append(f"text {inert_line(repr(flt.text))}")
        if marked:
            parts.append(f"marked runs {', '.join(str(r) for r in sorted(marked))}")
        if following:
            parts.append("a run is writing: following it")
        if highlighted is not None:
            name = f"run {highlighted.id}: {highlighted.model_name}"
            if highlighted.prompt_name:
                name += f" · {highlighted.prompt_name}"
            parts.insert(0, name)
        status = Text()
        if not table.total and (any(chosen) or flt.text):
            # first, where a narrow terminal cannot cut it: what to do about an empty table
            parts = [p.replace("showing 0 of 0 results", "0 results") for p in parts]
            status.append(
                "no result matches these filters together: change one, or ctrl+p Clear "
                "filters  ·  ",
                style="bold yellow",
            )
        status.append("  ·  ".join(inert_line(p) for p in parts), style="dim")
        self.update(status)
