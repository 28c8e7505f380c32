"""What it means for code to give what other code gives, proven by execution: the rewrite
gate's comparison, shared by the gate (a variant against its original) and the fix task (a
fix against its compliant twins, `core.fixes.verifying`).

Two executions of one parameter set agree when they give the same refusal, HTTP status, row
count and result rows (in order where the reference orders them, else as a multiset), and
leave the same rows in every table (for a Python app the response and the files written too).
The state of the tables is read by a property made for it (`state_sql`), run as the scenario's
own property is. The reference runs twice: a column whose values differ between its two runs
(a `now()`, a random token) is left out of the comparison (`unstable`), since nothing can be
proven about it, and a parameter set on which it does not reproduce itself even then proves
nothing (`Baseline.unusable`). The verify machinery resets the sequences before every
execution, so an id drawn by one execution does not differ from the next only because a
sequence moved on.

The gate keeps its decisions (`proofs`): a change here that decides differently must raise
`proofs.GATE_VERSION`, or proofs kept before it are read back as if it had not happened.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from secbench_tui.core.models import Case, JSONObject
from secbench_tui.core.rewrites import sql as sql_relations
from secbench_tui.core.rewrites.relations import language_of
from secbench_tui.core.verify.data import Scenario, parse_scenario
from secbench_tui.core.verify.deadline import connect_admin
from secbench_tui.core.verify.execution import Execution, dumps
from secbench_tui.core.verify.sandbox import AppDatabase

# Tables a case's executor fills for the property to read, besides the app's own.
SQL_RESULT_TABLES = ("result",)
PYTHON_RESULT_TABLES = ("result", "response", "files")


def ordered(case: Case) -> bool:
    """Does the case fix the order of what it returns?"""
    if language_of(case) == "python":
        try:
            tree = ast.parse(case.code)
        except (SyntaxError, RecursionError, MemoryError):
            return False
        return any(
            isinstance(n, ast.Attribute) and n.attr in {"order_by", "sort", "sorted"}
            for n in ast.walk(tree)
        ) or any(isinstance(n, ast.Name) and n.id == "sorted" for n in ast.walk(tree))
    try:
        statements = sql_relations.parse(case.code)
    except (sql_relations.NotApplicable, RecursionError):
        return True  # a function body (or too deep to read): compare in order, the stricter test
    last = statements[-1]
    return last.args.get("order") is not None


def state_sql(tables: Sequence[str]) -> str:
    """One row per table: its name and all its rows as canonical JSON text."""
    parts = []
    for table in tables:
        quoted = '"' + table.replace('"', '""') + '"'
        literal = table.replace("'", "''")
        parts.append(
            f"SELECT '{literal}' AS table_name, CAST(COALESCE((SELECT jsonb_agg(x ORDER BY "
            f"CAST(x AS text)) FROM {quoted} x), CAST('[]' AS jsonb)) AS text) AS rows"
        )
    return "\nUNION ALL\n".join(parts)


def table_names(db: AppDatabase) -> list[str]:
    """The app's tables, right after the fixtures loaded."""
    with connect_admin(db.admin_uri, db.watchdog.limits.deadline, db.name) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
        ).fetchall()
    return [str(r[0]) for r in rows]


def _fenced(title: str, code: str | None) -> str:
    return f"# {title}\n```sql\n{code}\n```\n\n" if code else ""


def scenario_file(scenario: Scenario, folder: Path, setup: str, prop: str | None) -> Scenario:
    """The scenario with another `# Setup` and `# Property`, written where the verify
    machinery reads it (a Python app's child process reads the file, not the object)."""
    folder.mkdir(parents=True, exist_ok=True)
    params = "\n".join(json.dumps(p, sort_keys=True) for p in scenario.parameters)
    text = f"# Parameters\n```json\n{params}\n```\n\n"
    text += _fenced("Setup", setup) + _fenced("Run", scenario.run)
    text += "".join(_fenced(f"Run {n}", code) for n, code in scenario.runs)
    text += _fenced("Verify", scenario.verify) + _fenced("Property", prop)
    if scenario.refusals:
        text += "# Refusals\n" + " ".join(scenario.refusals) + "\n"
    path = folder / f"{scenario.name}.md"
    path.write_text(text, encoding="utf-8")
    return parse_scenario(path)


Tables = dict[str, str]  # table name -> its rows as canonical JSON text
RESULT = ":result"  # what the case returned, beside the tables


def tables(ex: Execution) -> Tables:
    """The result rows and each table's rows, by name, as text (compared cheaply first)."""
    tables = {RESULT: dumps(ex.rows)}
    for row in ex.violations:
        tables[str(row.get("table_name"))] = str(row.get("rows") or "[]")
    return tables


def _rows(text: str) -> list[JSONObject]:
    rows = json.loads(text)
    return [r if isinstance(r, dict) else {"": r} for r in rows]


def unstable(first: Tables, second: Tables) -> dict[str, set[str]]:
    """Columns whose values the original does not reproduce (a `now()`, a random token):
    left out of the comparison, since nothing can be proven about them."""
    masked: dict[str, set[str]] = {}
    for name, text in first.items():
        if second.get(name) == text:
            continue
        rows, other = _rows(text), _rows(second.get(name, "[]"))
        for column in {c for r in rows + other for c in r}:
            values = sorted(dumps(r.get(column)) for r in rows)
            if values != sorted(dumps(r.get(column)) for r in other):
                masked.setdefault(name, set()).add(column)
    return masked


def _canon(text: str, masked: set[str], ordered: bool) -> list[str]:
    kept = [dumps({k: v for k, v in r.items() if k not in masked}) for r in _rows(text)]
    return kept if ordered else sorted(kept)


def difference(
    a: Execution, b: Execution, masked: dict[str, set[str]], ordered: bool
) -> str | None:
    for key in ("refused", "status", "affected"):
        if getattr(a, key) != getattr(b, key):
            return f"{key} differs ({getattr(a, key)!r} vs {getattr(b, key)!r})"
    ta, tb = tables(a), tables(b)
    for name in sorted(set(ta) | set(tb)):
        left_text, right_text = ta.get(name, "[]"), tb.get(name, "[]")
        if left_text == right_text:
            continue
        drop = masked.get(name, set())
        keep_order = ordered and name == RESULT
        if _canon(left_text, drop, keep_order) != _canon(right_text, drop, keep_order):
            if name == RESULT:
                return "the result rows differ"
            return f"table {name} differs afterwards"
    return None


def _params(scenario: Scenario, index: int) -> str:
    return f"parameter set {index + 1}"


@dataclass(frozen=True)
class Baseline:
    """The original on one parameter set, as every variant of it is compared with: what it
    gave, and the columns it does not reproduce (or why it proves nothing there)."""

    first: Execution
    masked: dict[str, set[str]]
    unusable: str | None


def baselines(
    original: tuple[Execution, ...], again: tuple[Execution, ...], scenario: Scenario, ordered: bool
) -> tuple[Baseline, ...]:
    """Worked out once per original, not again for each of its variants."""
    found = []
    for first, second in zip(original, again, strict=True):
        where = _params(scenario, first.params_index)
        masked: dict[str, set[str]] = {}
        unusable = None
        if first.error is not None:
            unusable = f"the original does not run on {where}: {first.error}"
        else:
            masked = unstable(tables(first), tables(second))
            if difference(first, second, masked, ordered) is not None:
                unusable = (
                    f"the original does not reproduce itself on {where}: nothing to compare with"
                )
        found.append(Baseline(first, masked, unusable))
    return tuple(found)


def equivalence(
    baselines: tuple[Baseline, ...],
    variant: tuple[Execution, ...],
    scenario: Scenario,
    ordered: bool,
) -> str | None:
    """Why the variant is not equivalent, or None."""
    for base, ours in zip(baselines, variant, strict=True):
        first, masked = base.first, base.masked
        where = _params(scenario, first.params_index)
        if base.unusable is not None:
            return base.unusable
        if ours.error is not None:
            return f"fails on {where}: {ours.error}"
        why = difference(first, ours, masked, ordered)
        if why is not None:
            return f"not equivalent on {where}: {why}"
    return None


def compared(
    baselines: tuple[Baseline, ...],
    variant: tuple[Execution, ...],
    scenario: Scenario,
    ordered: bool,
) -> str | None:
    """`_equivalence`, or why not when what it compares is nested too deeply to read."""
    try:
        return equivalence(baselines, variant, scenario, ordered)
    except RecursionError:
        return "what it returns or leaves is nested too deeply to compare"


def safe_difference(
    a: Execution, b: Execution, masked: dict[str, set[str]], ordered: bool
) -> str | None:
    """`difference`, or why not when what it compares is nested too deeply to read."""
    try:
        return difference(a, b, masked, ordered)
    except RecursionError:
        return "what it returns or leaves is nested too deeply to compare"


def safe_baselines(
    first: tuple[Execution, ...], again: tuple[Execution, ...], scenario: Scenario, ordered: bool
) -> tuple[Baseline, ...]:
    """`baselines`, each unusable when what the reference left is nested too deeply to read."""
    try:
        return baselines(first, again, scenario, ordered)
    except RecursionError:
        deep = "the original leaves data nested too deeply to compare"
        return tuple(Baseline(ex, {}, deep) for ex in first)


def scenario_pair(
    scenario: Scenario, folder: Path, tables: Sequence[str], python: bool
) -> tuple[Scenario, Scenario]:
    """The scenario as it judges a case (its own `# Property`), and as it reads the state
    back (`state_sql` of the app's tables and of what the executor fills), each written in a
    folder of its own under `folder` where the verify machinery reads it."""
    extra = PYTHON_RESULT_TABLES if python else SQL_RESULT_TABLES
    setup = scenario.setup or ""
    labelled = scenario_file(scenario, folder / "labelled", setup, scenario.property_sql)
    state = scenario_file(scenario, folder / "state", setup, state_sql([*tables, *extra]))
    return labelled, state
