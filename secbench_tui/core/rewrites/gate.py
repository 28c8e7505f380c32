"""The equivalence gate: a variant is sent only once execution shows it means what its
original means.

On the verify machinery (the app's fixtures in a fresh PostgreSQL database, each of its
scenario's parameter sets in a transaction that is rolled back), for every parameter set the
variant must give what its original gives: the same refusal, HTTP status, row count and
result rows (in order where the original orders them, else as a multiset), and the same
state of every table afterwards (for a Python app that includes the response and the files
written). The original runs twice: a parameter set on which it does not reproduce itself
proves nothing, and its variants are dropped. The verify machinery resets the sequences before
every execution, so an id drawn by one execution does not differ from the next only because a
sequence moved on.
Then the variant is judged with its original's label, beside the scenario's other cases,
exactly as `--verify` judges a case: it must be proven too.
"""

from __future__ import annotations

import ast
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from secbench_tui.core.models import Case, JSONObject
from secbench_tui.core.rewrites import sql as sql_relations
from secbench_tui.core.rewrites.relations import Variant, language_of
from secbench_tui.core.verify.data import (
    AppData,
    Scenario,
    load_app_data,
    parse_scenario,
    scenario_of,
)
from secbench_tui.core.verify.deadline import Limits, Watchdog, connect_admin
from secbench_tui.core.verify.execution import Execution, dumps
from secbench_tui.core.verify.judge import CaseRun, case_rule, judge
from secbench_tui.core.verify.models import Proof
from secbench_tui.core.verify.runner import Executor, Unverifiable, app_session
from secbench_tui.core.verify.sandbox import AppDatabase, Roles, sandbox_roles
from secbench_tui.core.verify.server import postgres
from secbench_tui.core.verify.stopping import Stop

# Tables a case's executor fills for the property to read, besides the app's own.
SQL_RESULT_TABLES = ("result",)
PYTHON_RESULT_TABLES = ("result", "response", "files")


@dataclass(frozen=True)
class Dropped:
    variant: Variant
    reason: str


@dataclass
class GateReport:
    """What the gate decided: variants proven, dropped (with why) and sent unproven."""

    engine: str = ""
    proven: list[Variant] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    unproven: list[Variant] = field(default_factory=list)
    seconds: float = 0.0


def _ordered(case: Case) -> bool:
    """Does the original fix the order of what it returns?"""
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


def _state_sql(tables: Sequence[str]) -> str:
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


def _table_names(db: AppDatabase) -> list[str]:
    """The app's tables, right after the fixtures loaded."""
    with connect_admin(db.admin_uri, db.watchdog.limits.deadline, db.name) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
        ).fetchall()
    return [str(r[0]) for r in rows]


def _fenced(title: str, code: str | None) -> str:
    return f"# {title}\n```sql\n{code}\n```\n\n" if code else ""


def _scenario_file(scenario: Scenario, folder: Path, setup: str, prop: str | None) -> Scenario:
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


def _tables(ex: Execution) -> Tables:
    """The result rows and each table's rows, by name, as text (compared cheaply first)."""
    tables = {RESULT: dumps(ex.rows)}
    for row in ex.violations:
        tables[str(row.get("table_name"))] = str(row.get("rows") or "[]")
    return tables


def _rows(text: str) -> list[JSONObject]:
    rows = json.loads(text)
    return [r if isinstance(r, dict) else {"": r} for r in rows]


def _unstable(first: Tables, second: Tables) -> dict[str, set[str]]:
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


def _difference(
    a: Execution, b: Execution, masked: dict[str, set[str]], ordered: bool
) -> str | None:
    for key in ("refused", "status", "affected"):
        if getattr(a, key) != getattr(b, key):
            return f"{key} differs ({getattr(a, key)!r} vs {getattr(b, key)!r})"
    ta, tb = _tables(a), _tables(b)
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
class _Baseline:
    """The original on one parameter set, as every variant of it is compared with: what it
    gave, and the columns it does not reproduce (or why it proves nothing there)."""

    first: Execution
    masked: dict[str, set[str]]
    unusable: str | None


def _baselines(
    original: tuple[Execution, ...], again: tuple[Execution, ...], scenario: Scenario, ordered: bool
) -> tuple[_Baseline, ...]:
    """Worked out once per original, not again for each of its variants."""
    found = []
    for first, second in zip(original, again, strict=True):
        where = _params(scenario, first.params_index)
        masked: dict[str, set[str]] = {}
        unusable = None
        if first.error is not None:
            unusable = f"the original does not run on {where}: {first.error}"
        else:
            masked = _unstable(_tables(first), _tables(second))
            if _difference(first, second, masked, ordered) is not None:
                unusable = (
                    f"the original does not reproduce itself on {where}: nothing to compare with"
                )
        found.append(_Baseline(first, masked, unusable))
    return tuple(found)


def _equivalence(
    baselines: tuple[_Baseline, ...],
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
        why = _difference(first, ours, masked, ordered)
        if why is not None:
            return f"not equivalent on {where}: {why}"
    return None


def _compared(
    baselines: tuple[_Baseline, ...],
    variant: tuple[Execution, ...],
    scenario: Scenario,
    ordered: bool,
) -> str | None:
    """`_equivalence`, or why not when what it compares is nested too deeply to read."""
    try:
        return _equivalence(baselines, variant, scenario, ordered)
    except RecursionError:
        return "what it returns or leaves is nested too deeply to compare"


def _as_run(case: Case, code: str) -> Case:
    """The original's identity (its scenario and `# Run NN` block) around other code."""
    return replace(case, code=code)


def _prove_scenario(
    execute: Executor,
    scenario: Scenario,
    state: Scenario,
    originals: Sequence[Case],
    variants: Sequence[Variant],
    report: GateReport,
) -> None:
    labelled: dict[str, tuple[Execution, ...]] = {}
    compared: dict[str, tuple[_Baseline, ...]] = {}
    needed = {v.original.case_id for v in variants}
    for case in originals:
        first = execute(case, state)
        if case.case_id in needed:
            again = execute(case, state)
            try:
                compared[case.case_id] = _baselines(first, again, scenario, _ordered(case))
            except RecursionError:  # what it left is too deep to read: its variants prove nothing
                deep = "the original leaves data nested too deeply to compare"
                compared[case.case_id] = tuple(_Baseline(ex, {}, deep) for ex in first)
        labelled[case.case_id] = execute(case, scenario) if scenario.property_sql else first
    runs = [
        CaseRun(c.app, c.case_id, c.expected, labelled[c.case_id], case_rule(c)) for c in originals
    ]
    for variant in variants:
        original = variant.original
        mine = execute(_as_run(original, variant.code), state)
        why = _compared(compared[original.case_id], mine, scenario, _ordered(original))
        if why is None:
            labelled_run = (
                execute(_as_run(original, variant.code), scenario)
                if scenario.property_sql
                else mine
            )
            run = CaseRun(
                original.app, variant.case_id, original.expected, labelled_run, case_rule(original)
            )
            proof = judge([*runs, run], scenario)[-1]
            if proof.proof is not Proof.PROVEN:
                why = f"does not verify as {original.expected}: {proof.detail or proof.proof.value}"
        if why is None:
            report.proven.append(variant)
        else:
            report.dropped.append(Dropped(variant, why))


def _prove_app(
    server: tuple[str, Roles, Watchdog],
    data: AppData,
    cases: Sequence[Case],
    variants: Sequence[Variant],
    report: GateReport,
    keep_unproven: bool,
) -> None:
    by_scenario: dict[str, list[Variant]] = {}
    for variant in variants:
        name = _scenario_name(data, variant)
        if name is None:
            _unverifiable(variant, NO_DATA, report, keep_unproven)
            continue
        by_scenario.setdefault(name, []).append(variant)
    if not by_scenario:
        return
    extra = PYTHON_RESULT_TABLES if data.harness is not None else SQL_RESULT_TABLES
    try:
        with (
            app_session(*server, data) as (db, execute),
            tempfile.TemporaryDirectory(prefix="secbench-rewrites-") as tmp,
        ):
            tables = _table_names(db)
            for name, group in by_scenario.items():
                original = data.scenarios[name]
                setup = original.setup or ""
                state_sql = _state_sql([*tables, *extra])
                scenario = _scenario_file(
                    original, Path(tmp) / "labelled", setup, original.property_sql
                )
                state = _scenario_file(original, Path(tmp) / "state", setup, state_sql)
                originals = [c for c in cases if scenario_of(c.case_id) == name]
                _prove_scenario(execute, scenario, state, originals, group, report)
    except Unverifiable as exc:
        decided = {id(v) for v in report.proven} | {id(d.variant) for d in report.dropped}
        for group in by_scenario.values():
            for variant in group:
                if id(variant) not in decided:
                    _unverifiable(variant, str(exc), report, keep_unproven)


NO_DATA = "its case has no verification data"


def _scenario_name(data: AppData, variant: Variant) -> str | None:
    """The verification scenario that can prove `variant`, if its app has one for it."""
    name = scenario_of(variant.original.case_id)
    if name is None or name not in data.scenarios or data.fixtures is None:
        return None
    return name


def _unverifiable(variant: Variant, why: str, report: GateReport, keep: bool) -> None:
    if keep:
        report.unproven.append(variant)
    else:
        report.dropped.append(Dropped(variant, f"not proven: {why} (--unproven-rewrites sends it)"))


def prove_variants(
    root: Path,
    cases: Sequence[Case],
    variants: Sequence[Variant],
    pg_url: str | None = None,
    keep_unproven: bool = False,
    progress: Callable[[str], None] | None = None,
    stop: Stop | None = None,
) -> GateReport:
    """Prove every variant against its original on the suite at `root`.

    Raises ServerError (from the verify machinery) when no PostgreSQL is at hand; the caller
    decides whether unproven variants may go (`--unproven-rewrites`). Raises Stopped once
    `stop` is set (Ctrl+C, SIGTERM, the app's stop): the statement in flight ends at once,
    and the databases, roles and embedded server are removed on the way out.
    """
    started = time.monotonic()
    report = GateReport()
    apps = {
        app: load_app_data(app, root / app)[0] for app in sorted({v.original.app for v in variants})
    }
    if not any(_scenario_name(apps[v.original.app], v) for v in variants):
        for variant in variants:  # nothing to prove anything with: no server is started
            _unverifiable(variant, NO_DATA, report, keep_unproven)
        report.seconds = time.monotonic() - started
        return report
    with postgres(pg_url, stop) as (uri, engine), sandbox_roles(uri) as roles:
        report.engine = engine
        server = (uri, roles, Watchdog(uri, Limits(), stop))
        for app, data in apps.items():
            if progress is not None:
                progress(app)
            mine = [v for v in variants if v.original.app == app]
            app_cases = [c for c in cases if c.app == app]
            _prove_app(server, data, app_cases, mine, report, keep_unproven)
    report.seconds = time.monotonic() - started
    return report


def unproven_report(variants: Sequence[Variant], why: str, keep: bool) -> GateReport:
    """Every variant unproven (kept, with `--unproven-rewrites`) or dropped, for one reason."""
    report = GateReport()
    for variant in variants:
        _unverifiable(variant, why, report, keep)
    return report
