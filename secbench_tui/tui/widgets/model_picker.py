"""Choose a model: type to filter the catalog, or type an id it does not list.

Enter chooses one model; `space` (a binding of the setup screen) adds the highlighted model to
the choice or takes it out, so several models run side by side (one run per model x prompt).

The catalog (`core.catalog`) may hold hundreds of models; the list shows the first
`MAX_SHOWN` matches, which is plenty once a few letters are typed.
"""

from __future__ import annotations

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from secbench_tui.core.run.catalog import Catalog, ModelInfo
from secbench_tui.core.untrusted import inert_line
from secbench_tui.tui import format as fmt
from secbench_tui.tui.errors import Guarded

MAX_SHOWN = 300
ID_WIDTH = 32  # the widest id column; narrower when the pane is (see `id_width`)
FIXED_WIDTH = 2 + 6 + 14 + 5  # marker, context, prices, json
PRICES_WIDTH = 6 + 14  # context and prices: the first to go in a narrow pane
TAG_WIDTH = 8  # " offline", " recent"


def id_width(list_width: int) -> tuple[int, bool]:
    """Room for the id in a row that fits `list_width` cells (padding and scrollbar out),
    and whether the offline/recent tag fits too (it goes first when the pane is narrow)."""
    room = list_width - 4 - FIXED_WIDTH
    if not priced(list_width):  # the id matters more: context and prices are in the detail
        room += PRICES_WIDTH
    if room - TAG_WIDTH >= 20:
        return min(ID_WIDTH, room - TAG_WIDTH), True
    return max(8, min(ID_WIDTH, room)), False


def priced(list_width: int) -> bool:
    """Whether the context and price columns fit beside an id of 20 cells (an 80-column
    terminal's pane does not: they are in the highlighted model's detail below the list)."""
    return not list_width or list_width - 4 - FIXED_WIDTH >= 20


def header(width: int = ID_WIDTH, prices: bool = True) -> str:
    if not prices:
        return f"  {'model':<{width}} json"
    return f"  {'model':<{width}} {'ctx':>5} {'$/M in/out':>13} json"


def fit(text: str, width: int) -> str:
    return f"{text:<{width}}" if len(text) <= width else text[: width - 1] + "…"


def model_row(
    model: ModelInfo,
    chosen: bool,
    recent: bool,
    width: int = ID_WIDTH,
    tag: bool = True,
    prices: bool = True,
) -> Text:
    """One line: id, context, prices per million tokens, structured output, tags (offline or
    recent; `reasons` for a model whose catalog entry says it reasons before answering)."""
    row = Text(no_wrap=True, overflow="ellipsis")
    row.append("● " if chosen else "  ", style="bold green")
    row.append(fit(inert_line(model.id), width), style="bold" if chosen else "")
    if prices:
        ctx = "" if model.context_length is None else f"{model.context_length // 1000}k"
        row.append(f" {ctx:>5}", style="dim")
        row.append(f" {fmt.short_price(model):>13}", style="dim")
    row.append(" json" if model.structured else "     ", style="cyan")
    if tag and model.offline:
        row.append(" offline", style="magenta")
    elif tag and recent:
        row.append(" recent", style="yellow")
    if tag and model.reasoning:
        row.append(" reasons", style="blue")
    return row


def model_detail(model: ModelInfo | None, typed: str = "") -> Text:
    if model is None:
        if typed:
            return Text.assemble(
                ("Not in the list: ", "dim"),
                (inert_line(typed), "bold"),
                (" (Enter uses it as typed)", "dim"),
            )
        return Text("No model matches; type a full model id and press Enter", style="dim")
    detail = Text.assemble(
        (inert_line(model.id), "bold"),
        (f"  {inert_line(model.name)}\n" if model.name else "\n", "dim"),
        f"{fmt.context(model)} · {fmt.price(model)} · {fmt.structured(model)}",
    )
    if model.reasoning:
        detail.append(
            " · reasons before answering (max_tokens up to 32768 unless --max-tokens)", style="blue"
        )
    return detail


class ModelPicker(Guarded, Vertical):
    class Chosen(Message):
        def __init__(self, model_id: str) -> None:
            super().__init__()
            self.model_id = model_id

    chosen: reactive[str | None] = reactive(None)

    def __init__(
        self, chosen: str | None = None, also: list[str] | None = None, **kwargs: object
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.catalog = Catalog([], "none")
        self.set_reactive(ModelPicker.chosen, chosen)
        self.also = [m for m in dict.fromkeys(also or []) if m != chosen]  # the other models
        self._shown: list[ModelInfo] = []

    @property
    def selected(self) -> list[str]:
        """Every model chosen, the first one first."""
        return ([self.chosen] if self.chosen else []) + [m for m in self.also if m != self.chosen]

    def compose(self) -> ComposeResult:
        yield Input(
            placeholder="/ to filter, or type a model id",
            id="model-filter",
            select_on_focus=False,
        )
        yield Static(Text(header(), style="dim"), id="model-header")
        yield OptionList(id="model-list")
        yield Static(id="model-detail")
        yield Static(id="model-source")

    def set_catalog(self, catalog: Catalog) -> None:
        self.catalog = catalog
        if catalog.source == "network":
            source = f"{len(catalog.models)} models, fetched now"
        elif catalog.source == "cache":
            source = f"{len(catalog.models)} models, cached {catalog.fetched_at or ''}".strip()
        else:
            source = "no model list yet: baselines and recent models"
        if catalog.error:
            source += " · offline"
        self.query_one("#model-source", Static).update(Text(source, style="dim"))
        self.refilter()

    @property
    def query_text(self) -> str:
        return self.query_one("#model-filter", Input).value.strip()

    def refilter(self) -> None:
        """Show the models matching the filter; keep the highlight where it was (a list that
        arrives late must not move it under the user's Enter), else on the chosen model."""
        option_list = self.query_one("#model-list", OptionList)
        found = self.catalog.filter(self.query_text)
        self._shown = found[:MAX_SHOWN]
        recent = set(self.catalog.recent)
        width, tag = id_width(self.size.width) if self.size.width else (ID_WIDTH, True)
        prices = priced(self.size.width)
        selected = set(self.selected)
        self.query_one("#model-header", Static).update(Text(header(width, prices), style="dim"))
        options: list[Option | None] = [
            Option(model_row(m, m.id in selected, m.id in recent, width, tag, prices), id=m.id)
            for m in self._shown
        ]
        if len(found) > MAX_SHOWN:
            options.append(
                Option(Text(f"  … {len(found) - MAX_SHOWN} more: type to narrow"), disabled=True)
            )
        highlighted = option_list.highlighted_option
        option_list.set_options(options)
        ids = [m.id for m in self._shown]
        keep = highlighted.id if highlighted is not None and highlighted.id in ids else self.chosen
        if keep in ids:
            option_list.highlighted = ids.index(keep)
        elif ids:
            option_list.highlighted = 0
        self._show_detail()

    def _show_detail(self) -> None:
        option_list = self.query_one("#model-list", OptionList)
        option = option_list.highlighted_option
        model = self.catalog.find(option.id) if option is not None and option.id else None
        self.query_one("#model-detail", Static).update(model_detail(model, self.query_text))

    def on_resize(self) -> None:
        self.refilter()  # the id column follows the pane's width

    def watch_chosen(self) -> None:
        if self.is_mounted:
            self.refilter()

    def choose(self, model_id: str) -> None:
        """Enter: this model alone."""
        self.also = []
        self.chosen = model_id
        self.refilter()
        self.post_message(self.Chosen(model_id))

    def toggle_highlighted(self) -> None:
        """Add the highlighted model to the choice, or take it out."""
        option = self.query_one("#model-list", OptionList).highlighted_option
        if option is None or not option.id:
            return
        model_id = option.id
        if model_id not in self.selected:
            if self.chosen is None:
                self.chosen = model_id
            else:
                self.also.append(model_id)
        elif model_id == self.chosen:
            self.chosen = self.also.pop(0) if self.also else None
        else:
            self.also.remove(model_id)
        self.refilter()
        self.post_message(self.Chosen(model_id))

    def focus_filter(self) -> None:
        self.query_one("#model-filter", Input).focus()

    @on(Input.Changed, "#model-filter")
    def _filter_changed(self) -> None:
        self.refilter()

    @on(Input.Submitted, "#model-filter")
    def _filter_submitted(self) -> None:
        typed = self.query_text
        option = self.query_one("#model-list", OptionList).highlighted_option
        exact = self.catalog.find(typed) if typed else None
        found = exact.id if exact is not None else option.id if option is not None else None
        picked = found or typed
        if not picked:
            pass
        elif len(self.selected) > 1:  # a matrix is being built: Enter adds, never replaces it
            if picked not in self.selected:
                self.also.append(picked)
                self.refilter()
                self.post_message(self.Chosen(picked))
        else:
            self.choose(picked)
        self.query_one("#model-list", OptionList).focus()

    @on(OptionList.OptionHighlighted, "#model-list")
    def _highlighted(self) -> None:
        self._show_detail()

    @on(OptionList.OptionSelected, "#model-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.choose(event.option.id)

    def on_key(self, event: events.Key) -> None:
        """Down from the filter moves into the list; typing on the list types into the filter.

        Keys that something on screen is bound to (q, r, e, ?...) keep their meaning, so only
        the other letters reach the filter. Keys typed faster than focus moves are kept too.
        """
        field = self.query_one("#model-filter", Input)
        if event.key == "down" and field.has_focus:
            event.stop()
            self.query_one("#model-list", OptionList).focus()
        elif (
            not field.has_focus
            and event.is_printable
            and event.character
            and event.key not in self.screen.active_bindings
        ):
            event.stop()
            field.value += event.character
            field.cursor_position = len(field.value)
            field.focus()
