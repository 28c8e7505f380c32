"""Case labels that tell the rows of a table apart in the width its case column has.

A case id is a file path (`clinic-portal-api/list-appointments-01-good.md`, with
`#relation/seed` after it for a `--rewrites` variant); two ids cut to a column's width by
their middles alone may come out the same (`clin…api/list…-01-good.md` for two scenarios).
`case_labels` gives every id of the rows shown a label of at most `width` cells, read by the
one rule on case file names (`core.case_names.CASE_FILE`), as

    clinic-portal-api/list-appointments-01 good      (the file's `.md` left out)
    purchase-order/approve-po-02 bad #layout         (a variant: its relation; its seed
                                                      where two differ by it alone)

and shortens it only as far as the width asks, while the labels stay different: first the
app to its first word (`clinic/`) and the relation's words but its last to their initials
(`#c-safe`); then the scenario loses its middle, the cut moved towards its start or its end
wherever that keeps two scenarios apart; where that is not enough, the app to a short prefix
(`cli/`), the label word where the rest already tells the case apart, and last the app to
`…`. The scenario's start and the case number always stay. An id that does not
follow the rule (a VulDetectBench sample) loses its middle. Labels are made of `inert_line`
text: the ids came from files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from secbench_tui.core.case_names import CASE_FILE
from secbench_tui.core.untrusted import inert_line

ELLIPSIS = "…"
CASE_MIN = 28  # every table gives its case column at least this many cells (it scrolls)
SCENARIO_MIN = 6  # a scenario keeps at least this many cells (its whole name when shorter)
APP_PREFIX = 3  # an app cut to a prefix keeps at least this many characters


@dataclass(frozen=True)
class CaseParts:
    """A case id read by the rule: `app`/`scenario`-`number` `label`, `#relation/seed`."""

    app: str
    scenario: str
    number: str  # as written (`01`, `001`)
    label: str
    relation: str
    seed: str

    @classmethod
    def read(cls, case_id: str) -> CaseParts | None:
        base, hash_, variant = case_id.partition("#")
        relation, _, seed = variant.partition("/") if hash_ else ("", "", "")
        app, _, name = base.rpartition("/")
        match = CASE_FILE.match(name)
        if match is None:
            return None
        return cls(app, match["scenario"], match["number"], match["label"], relation, seed)


@dataclass(frozen=True)
class _Stage:
    """How much of each part a label keeps at one step of shortening."""

    app: str  # full | word | prefix | none (`…`)
    relation: bool  # the relation whole (else its words but the last as initials)
    label: bool  # the label word (good / bad) always (else where it is needed)


_STAGES = (
    _Stage("full", True, True),
    _Stage("word", True, True),
    _Stage("word", False, True),
    _Stage("prefix", False, True),
    _Stage("prefix", False, False),
    _Stage("none", False, False),
)
CUT_FROM = 2  # the first stage at which a scenario is cut rather than the label shortened


def case_labels(case_ids: Iterable[str], width: int) -> dict[str, str]:
    """A label per id, at most `width` cells each, different for different ids wherever the
    width allows it (see the module's docstring)."""
    ids = list(dict.fromkeys(case_ids))
    shown = {case_id: inert_line(case_id) for case_id in ids}
    parts = {case_id: CaseParts.read(text) for case_id, text in shown.items()}
    read = {case_id: p for case_id, p in parts.items() if p is not None}
    labels = {case_id: _cut(shown[case_id], width) for case_id in ids if case_id not in read}
    if read:
        labels |= _labels(read, width, set(labels.values()))
    return labels


def scenario_labels(scenarios: Iterable[str], width: int) -> dict[str, str]:
    """A label per scenario (`app/scenario`, as `core.case_names.scenario_of` names it), at
    most `width` cells each, shortened as case labels are."""
    names = list(dict.fromkeys(scenarios))
    read: dict[str, CaseParts] = {}
    for name in names:
        app, _, scenario = inert_line(name).rpartition("/")
        read[name] = CaseParts(app, scenario, "", "", "", "")
    return _labels(read, width, set())


@dataclass
class ShownLabels:
    """The labels of the case ids a table shows, kept different as rows come and go and as
    its case column's width changes: `update` says which rows already drawn need a new one."""

    width: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    scenarios: bool = False  # the ids are scenarios (`scenario_labels`), not cases

    def update(self, case_ids: Iterable[str], width: int) -> set[str]:
        """Labels for `case_ids` (every id shown) at `width`; returns the ids that had a
        label before and have another now."""
        ids = list(dict.fromkeys(case_ids))
        if width == self.width and set(ids) == self.labels.keys():
            return set()
        new = (scenario_labels if self.scenarios else case_labels)(ids, max(1, width))
        changed = {i for i, old in self.labels.items() if i in new and new[i] != old}
        self.labels, self.width = new, width
        return changed

    def __getitem__(self, case_id: str) -> str:
        label = self.labels.get(case_id)
        if label is not None:
            return label
        return (scenario_labels if self.scenarios else case_labels)([case_id], max(1, self.width))[
            case_id
        ]


def case_label(case_id: str, width: int) -> str:
    """One id's label alone (where no other row is shown beside it)."""
    return case_labels([case_id], width)[case_id]


def _labels(read: dict[str, CaseParts], width: int, taken: set[str]) -> dict[str, str]:
    """Labels of ids that follow the rule: the first stage whose labels differ and keep every
    scenario whole; else, once the app is down to its word and the relations to initials
    (`CUT_FROM`), the first whose labels differ."""
    best: dict[str, str] = {}
    for number, stage in enumerate(_STAGES):
        found = _at_stage(read, width, stage, taken)
        if found is None:
            continue
        labels, unique, whole = found
        if unique and (whole or number >= CUT_FROM):
            return labels
        if unique and not best:
            best = labels
    if best:
        return best
    tight = _at_stage(read, width, _STAGES[-1], taken, floor=1)  # a scenario keeps a cell
    if tight is not None:
        return tight[0]
    return {case_id: _cut(_whole(p), width) for case_id, p in read.items()}


def _at_stage(
    read: dict[str, CaseParts],
    width: int,
    stage: _Stage,
    taken: set[str],
    floor: int = SCENARIO_MIN,
) -> tuple[dict[str, str], bool, bool] | None:
    """The labels at `stage` (None when a scenario would keep fewer than `floor` cells of
    itself), whether they all differ, and whether every scenario is whole."""
    apps = _app_names({p.app for p in read.values()}, stage.app)
    seeds = _seeds_needed(read.values())
    labels_needed = _labels_needed(read.values()) if not stage.label else None
    heads: dict[str, str] = {}  # id -> the label's start (app and `/`)
    tails: dict[str, str] = {}  # id -> what follows the scenario
    budgets: dict[str, int] = {}
    for case_id, p in read.items():
        heads[case_id] = f"{apps[p.app]}/" if p.app else ""
        label = f" {p.label}" if labels_needed is None or _key(p) in labels_needed else ""
        variant = ""
        if p.relation:
            relation = p.relation if stage.relation else _initials(p.relation)
            seed = f"/{p.seed}" if p.seed and _base(p) in seeds else ""
            variant = f" #{relation}{seed}"
        tails[case_id] = f"-{p.number}{label}{variant}" if p.number else ""
        budgets[case_id] = width - len(heads[case_id]) - len(tails[case_id])
        if budgets[case_id] < min(len(p.scenario), floor):
            return None
    scenarios = _scenario_cuts(read, heads, budgets)
    labels = {case_id: heads[case_id] + scenarios[case_id] + tails[case_id] for case_id in read}
    values = list(labels.values())
    unique = len(set(values)) == len(values) and not taken & set(values)
    whole = all(budgets[case_id] >= len(p.scenario) for case_id, p in read.items())
    return labels, unique, whole


def _scenario_cuts(
    read: dict[str, CaseParts], heads: dict[str, str], budgets: dict[str, int]
) -> dict[str, str]:
    """Each row's scenario cut to its budget, the cut moved wherever two scenarios of one app
    would otherwise look alike."""
    choice: dict[tuple[str, str, int], int] = {}  # (app, scenario, budget) -> option tried

    def cut(case_id: str) -> str:
        p = read[case_id]
        options = _middles(p.scenario, budgets[case_id])
        index = choice.get((heads[case_id], p.scenario, budgets[case_id]), 0)
        return options[min(index, len(options) - 1)]

    for _ in range(64):  # each round moves the cut of the scenarios still alike
        seen: dict[tuple[str, str, int], set[str]] = {}
        for case_id, p in read.items():
            key = (heads[case_id], cut(case_id), budgets[case_id])
            seen.setdefault(key, set()).add(p.scenario)
        alike = [names for names in seen.values() if len(names) > 1]
        if not alike:
            break
        moved = False
        for (head, _, budget), names in ((k, v) for k, v in seen.items() if len(v) > 1):
            for name in sorted(names)[1:]:  # the first keeps its cut, the others move
                key = (head, name, budget)
                if choice.get(key, 0) + 1 < len(_middles(name, budget)):
                    choice[key] = choice.get(key, 0) + 1
                    moved = True
        if not moved:
            break
    return {case_id: cut(case_id) for case_id in read}


def _middles(text: str, width: int) -> list[str]:
    """`text` in `width` cells: whole when it fits, else with its middle cut: the cut at the
    centre first, then one cell towards the end, one towards the start, and so on (the start
    always keeps a cell)."""
    if len(text) <= width:
        return [text]
    if width <= 1:
        return [ELLIPSIS[:width]]
    keep = width - 1
    centre = (keep + 1) // 2
    heads = [centre]
    for step in range(1, keep + 1):
        heads += [h for h in (centre + step, centre - step) if 1 <= h <= keep]
    return [text[:head] + ELLIPSIS + text[len(text) - (keep - head) :] for head in heads]


def _cut(text: str, width: int) -> str:
    """The middle cut at the centre (an id that does not follow the rule)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    keep = width - 1
    head = (keep + 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (keep - head) :]


def _initials(relation: str) -> str:
    """`comment-safe` -> `c-safe`, `misleading-function-name` -> `m-f-name`."""
    *words, last = relation.split("-")
    return "-".join([*(w[:1] for w in words), last])


def _app_names(apps: set[str], level: str) -> dict[str, str]:
    """Each app as shown at `level`: whole, its first word(s), or a short prefix, each the
    shortest that still tells the apps shown apart."""
    if level == "full":
        return {app: app for app in apps}
    if level == "none":
        return dict.fromkeys(apps, ELLIPSIS)
    words = {app: _shortest(app, apps, _word_prefixes(app)) for app in apps}
    if level == "word":
        return words
    return {
        app: _shortest(app, apps, [app[:n] for n in range(APP_PREFIX, len(words[app]) + 1)])
        for app in apps
    }


def _word_prefixes(app: str) -> list[str]:
    words = app.split("-")
    return ["-".join(words[: n + 1]) for n in range(len(words))]


def _shortest(app: str, apps: set[str], candidates: Sequence[str]) -> str:
    """The first of `candidates` no other app starts with the same way."""
    others = [other for other in apps if other != app]
    for candidate in candidates:
        if not any(other.startswith(candidate) for other in others):
            return candidate
    return app


def _base(p: CaseParts) -> tuple[str, str, str, str, str]:
    return (p.app, p.scenario, p.number, p.label, p.relation)


def _seeds_needed(parts: Iterable[CaseParts]) -> set[tuple[str, str, str, str, str]]:
    """Variants that differ from another shown only by their seed."""
    seeds: dict[tuple[str, str, str, str, str], set[str]] = {}
    for p in parts:
        seeds.setdefault(_base(p), set()).add(p.seed)
    return {base for base, found in seeds.items() if len(found) > 1}


def _key(p: CaseParts) -> tuple[str, str, str, str, str]:
    return (p.app, p.scenario, p.number, p.relation, p.seed)


def _labels_needed(parts: Iterable[CaseParts]) -> set[tuple[str, str, str, str, str]]:
    """Cases told apart from another shown only by their label word (`-01-good` beside
    `-01-bad`)."""
    labels: dict[tuple[str, str, str, str, str], set[str]] = {}
    for p in parts:
        labels.setdefault(_key(p), set()).add(p.label)
    return {key for key, found in labels.items() if len(found) > 1}


def _whole(p: CaseParts) -> str:
    variant = f" #{p.relation}/{p.seed}" if p.relation else ""
    return f"{p.app}/{p.scenario}-{p.number} {p.label}{variant}"
