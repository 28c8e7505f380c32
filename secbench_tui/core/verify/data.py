"""Verification data: the plain files a suite author keeps beside the cases.

Per app folder (see docs/verify.md, "Verification data"):

- `verify/fixtures.sql` (or `fixtures.sql` beside the cases): schema and seed rows;
- `verify/app.py`: for a Python app, the harness that maps the SPEC's models (its presence
  makes the app a Python app);
- per scenario, `verify/<scenario>.md`, or `<scenario>.md` beside the cases as the original
  security-bench writes it: `# Parameters` with one JSON object per line, and optional
  `# Setup`, `# Run`, `# Verify` and `# Property` blocks (SQL in a fenced block), and
  `# Equivalent mutants`: mutants (`--verify --mutants`) that are no real flaw, one a line,
  `- <case file>:<line> <kind>: <reason>`.

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
    """A verification file that cannot be used; the message names the file and the fix."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


@dataclass(frozen=True)
class Equivalent:
    """A mutant the suite author declares no real flaw, with the reason (`--lint` lists it)."""

    case_file: str  # e.g. list-bin-stock-01-good.md
    line: int  # line in the case's code block, as `--verify --mutants` reports it
    kind: str  # a MutantKind value, e.g. conjunct
    reason: str

    @property
    def key(self) -> str:
        return f"{self.case_file}:{self.line} {self.kind}"


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

    def equivalent(self, case_file: str, line: int, kind: str) -> Equivalent | None:
        return next(
            (
                e
                for e in self.equivalents
                if (e.case_file, e.line, e.kind) == (Path(case_file).name, line, kind)
            ),
            None,
        )

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


def _equivalents(body: str, path: Path) -> tuple[Equivalent, ...]:
    """`- <case file>:<line> <kind>: <reason>` lines (other lines are prose)."""
    found: list[Equivalent] = []
    for number, raw in enumerate(body.split("\n"), 1):
        line = raw.strip()
        if not line.startswith(("- ", "* ")):
            continue
        head, sep, reason = line[2:].partition(": ")
        where, _, kind = head.strip().partition(" ")
        case_file, _, at = where.rpartition(":")
        if not (sep and case_file and at.isdigit() and kind.strip() and reason.strip()):
            raise DataError(
                path,
                f"'# Equivalent mutants' line {number} must read "
                "'- <case file>:<line> <kind>: <reason>'",
            )
        found.append(Equivalent(case_file, int(at), kind.strip(), reason.strip()))
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
