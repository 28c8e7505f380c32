"""Verification data: the plain files a suite author keeps beside the cases.

Per app folder (see docs/verify.md, "Verification data"):

- `verify/fixtures.sql` (or `fixtures.sql` beside the cases): schema and seed rows;
- `verify/app.py`: for a Python app, the harness that maps the SPEC's models (its presence
  makes the app a Python app);
- per scenario, `verify/<scenario>.md`, or `<scenario>.md` beside the cases as the original
  security-bench writes it: `# Parameters` with one JSON object per line, and optional
  `# Setup`, `# Run`, `# Verify` and `# Property` blocks (SQL in a fenced block), and
  `# Equivalent mutants`: mutants (`--verify --mutants`) that are no real flaw, one a line,
  "- <case file> <kind> `<guard>`: <reason>", the guard named by its text (not its line, which
  moves), as `--verify --mutants` prints it; a text ending in `...` names the guard it begins,
  and `(N places)` after it says the same guard stands N times in the case.

A case `<scenario>-NN-good.md` belongs to the scenario `<scenario>` (`core.case_names`: any
number of digits).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from secbench_tui.core.case_names import read_name
from secbench_tui.core.suites.markdown import extract_code, is_parameter_file, split_sections
from secbench_tui.core.verify.execution import Parameters

VERIFY_DIR = "verify"
FIXTURES = "fixtures.sql"
HARNESS = "app.py"


class DataError(Exception):
    """A verification file that cannot be used; the message names the file and the fix.
    `declaration`: the problem is a line of its `# Equivalent mutants` (which `--lint` fails)."""

    def __init__(self, path: Path, problem: str, declaration: bool = False) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.declaration = declaration


@dataclass(frozen=True)
class Equivalent:
    """A mutant the suite author declares no real flaw, with the reason (`--lint` lists it
    and fails it unless it names exactly one mutant of a case that exists)."""

    case_file: str  # e.g. list-bin-stock-01-good.md
    kind: str  # a MutantKind value, e.g. conjunct
    guard: str  # the guard's text as written (`core.verify.mutants.declarations` normalises it)
    reason: str
    places: int = 1  # `(N places)`: the same guard, N times in the case, none a real flaw

    @property
    def key(self) -> str:
        places = f" ({self.places} places)" if self.places > 1 else ""
        return f"{self.case_file} {self.kind} `{self.guard}`{places}"

    @property
    def prefix(self) -> bool:
        """Does it name the guard by its beginning (a text ending in `...`)?"""
        return self.guard.endswith("...")


@dataclass(frozen=True)
class Scenario:
    name: str
    path: Path
    parameters: tuple[Parameters, ...]
    setup: str | None = None  # SQL run in the transaction before the case
    run: str | None = None  # SQL run after the case code (e.g. calling a function it defines)
    verify: str | None = None  # read-back after a write: its rows are the result
    property_sql: str | None = None  # SQL returning the rows that break the scenario's rules
    runs: tuple[tuple[str, str], ...] = ()  # `# Run NN`: the run block for case number NN
    refusals: tuple[str, ...] = ()  # `# Refusals`: more SQLSTATEs that mean "refused"
    equivalents: tuple[Equivalent, ...] = ()  # `# Equivalent mutants`
    # rows added before `# Setup`, as the case role: an exploit's (`--prove-findings`), each
    # a table and its columns' values; a scenario file gives none
    rows: tuple[tuple[str, dict[str, object]], ...] = ()

    def equivalents_of(self, case_file: str) -> tuple[Equivalent, ...]:
        """The declarations naming a mutant of the case file (`app/x-01-good.md` or its name)."""
        return tuple(e for e in self.equivalents if same_case(e.case_file, case_file))

    def run_for(self, case_id: str) -> str | None:
        """`# Run NN` for the case `<scenario>-NN-...md` when there is one, else `# Run`
        (numbers compared as numbers: `# Run 3` is the run of `-003-`)."""
        name = read_name(case_id)
        number = name.number if name else None
        return next((sql for n, sql in self.runs if int(n) == number), self.run)

    @property
    def rule(self) -> str:
        return "property" if self.property_sql else "original"


@dataclass(frozen=True)
class AppData:
    name: str
    root: Path
    fixtures: Path | None
    harness: Path | None
    scenarios: dict[str, Scenario]


def same_case(declared: str, case_file: str) -> bool:
    """Does a file name a declaration gives name this case file? By the one naming rule
    (scenario, number as a number, label), so `x-02-good.md` names `x-002-good.md`; a name
    outside the rule only by itself."""
    name = Path(case_file).name
    one, other = read_name(declared), read_name(name)
    return declared == name or (one is not None and one == other)


def scenario_of(case_file: str) -> str | None:
    """The scenario of a case file (its name without the folder), by the shared rule."""
    name = read_name(Path(case_file).name)
    return name.scenario if name else None


def _block(sections: dict[str, str], name: str, path: Path) -> str | None:
    if name not in sections:
        return None
    code = extract_code(sections[name])
    if code is None or not code.strip():
        raise DataError(path, f"'# {name.title()}' needs a fenced SQL block (```sql ... ```)")
    return code.strip()


EQUIVALENT_FORM = "'- <case file> <kind> `<guard>`: <reason>'"


def _places(text: str) -> int | None:
    """`(3 places)` -> 3; None when it is not that."""
    words = text.removeprefix("(").removesuffix(")").split()
    if len(words) == 2 and words[0].isdigit() and words[1] == "places" and text[-1:] == ")":
        return int(words[0]) if int(words[0]) > 1 else None
    return None


def _equivalent(line: str) -> Equivalent | None:
    """One `- <case file> <kind> `<guard>` [(N places)]: <reason>` line, or None when it is
    not one (a guard holds no backtick: neither SQL nor a Python expression has one)."""
    case_file, _, rest = line[2:].strip().partition(" ")
    kind, _, rest = rest.strip().partition(" ")
    rest = rest.strip()
    end = rest.find("`", 1)
    if not (case_file and kind and rest.startswith("`") and end > 1):
        return None
    guard = rest[1:end].strip()
    middle, sep, reason = rest[end + 1 :].partition(": ")
    places = _places(middle.strip()) if middle.strip() else 1
    if not (guard and sep and reason.strip() and places):
        return None
    return Equivalent(case_file, kind, guard, reason.strip(), places)


def _equivalents(body: str, path: Path) -> tuple[Equivalent, ...]:
    """`- <case file> <kind> `<guard>`: <reason>` lines (other lines are prose)."""
    found: list[Equivalent] = []
    for number, raw in enumerate(body.split("\n"), 1):
        line = raw.strip()
        if not line.startswith(("- ", "* ")):
            continue
        declared = _equivalent(line)
        if declared is None:
            head = line[2:].split(" ", 1)[0]
            moved = (
                f" (a line number such as '{head}' moves with every edit: name the guard by "
                "its text, as --verify --mutants prints it)"
                if head.rpartition(":")[2].isdigit()
                else ""
            )
            raise DataError(
                path,
                f"'# Equivalent mutants' line {number} must read {EQUIVALENT_FORM}{moved}",
                declaration=True,
            )
        found.append(declared)
    return tuple(found)


def parse_scenario(path: Path) -> Scenario:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(path, f"cannot read ({exc})") from exc
    sections = split_sections(text)
    if "parameters" not in sections:
        raise DataError(path, "no '# Parameters' section (one JSON object per line)")
    params: list[Parameters] = []
    body = sections["parameters"]
    fenced = extract_code(body)
    for number, line in enumerate((fenced if fenced is not None else body).split("\n"), 1):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"parameter line {number} is not JSON ({exc.msg})") from exc
        except RecursionError:
            raise DataError(path, f"parameter line {number} is JSON nested too deeply") from None
        if not isinstance(value, dict):
            raise DataError(path, f"parameter line {number} must be a JSON object")
        params.append(value)
    if not params:
        raise DataError(path, "'# Parameters' has no JSON object lines")
    return Scenario(
        name=path.stem,
        path=path,
        parameters=tuple(params),
        setup=_block(sections, "setup", path),
        run=_block(sections, "run", path),
        verify=_block(sections, "verify", path),
        property_sql=_block(sections, "property", path),
        refusals=tuple(re.findall(r"\b[0-9A-Z]{5}\b", sections.get("refusals", ""))),
        equivalents=_equivalents(sections.get("equivalent mutants", ""), path),
        runs=tuple(
            (key.split()[1], _block(sections, key, path) or "")
            for key in sections
            if re.fullmatch(r"run \d+", key)
        ),
    )


def load_app_data(app: str, root: Path) -> tuple[AppData, list[DataError]]:
    """The app's verification data and the files that could not be used (each says why)."""
    problems: list[DataError] = []
    vdir = root / VERIFY_DIR
    fixtures = next((p for p in (vdir / FIXTURES, root / FIXTURES) if p.is_file()), None)
    harness = vdir / HARNESS if (vdir / HARNESS).is_file() else None
    candidates = [p for p in sorted(root.glob("*.md")) if is_parameter_file(p)]
    if vdir.is_dir():
        candidates += sorted(p for p in vdir.glob("*.md") if p.is_file())
    scenarios: dict[str, Scenario] = {}
    for path in candidates:
        try:
            scenario = parse_scenario(path)
        except DataError as exc:
            problems.append(exc)
            continue
        scenarios[scenario.name] = scenario
    return AppData(app, root, fixtures, harness, scenarios), problems
