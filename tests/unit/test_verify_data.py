"""Verification files and the judge, without a database: parsing, binding, the two rules."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("psycopg", reason="needs the verify extra: pip install -e '.[verify]'")

from secbench_tui.core.suites.markdown import load_markdown_suite  # noqa: E402
from secbench_tui.core.verify.data import DataError, load_app_data, parse_scenario  # noqa: E402
from secbench_tui.core.verify.execution import Execution  # noqa: E402
from secbench_tui.core.verify.judge import CaseRun, judge  # noqa: E402
from secbench_tui.core.verify.models import Proof  # noqa: E402
from secbench_tui.core.verify.sql import bind  # noqa: E402

SCENARIO = """# Description
What the rules demand.

# Parameters
{"current_user_id": 1, "po_id": "a"}
not json, ignored as the original does
{"current_user_id": 2, "po_id": "b"}

# Run
```sql
SELECT * FROM f(:po_id)
```

# Run 02
```sql
SELECT * FROM f(:po_id, 1)
```

# Refusals
42703 (undefined column)

# Property
```sql
SELECT r.row FROM result r WHERE r.row->>'id' <> :po_id
```
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_scenario_file_gives_parameters_runs_refusals_and_property(tmp_path: Path) -> None:
    scenario = parse_scenario(_write(tmp_path / "list-things.md", SCENARIO))
    assert scenario.name == "list-things"
    assert scenario.parameters == (
        {"current_user_id": 1, "po_id": "a"},
        {"current_user_id": 2, "po_id": "b"},
    )
    assert scenario.run_for("app/list-things-01-good.md") == "SELECT * FROM f(:po_id)"
    assert scenario.run_for("app/list-things-02-good.md") == "SELECT * FROM f(:po_id, 1)"
    assert scenario.refusals == ("42703",)
    assert scenario.property_sql and "result r" in scenario.property_sql
    assert scenario.rule == "property"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# Description\nx\n", "no '# Parameters' section"),
        ("# Parameters\nnothing here\n", "has no JSON object lines"),
        ('# Parameters\n{"a": 1,}\n', "parameter line 1 is not JSON"),
        pytest.param(
            '# Parameters\n{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
            "nested too deeply",
            id="deep-parameters",
        ),
        (
            '# Parameters\n{"a": 1}\n\n# Property\nno fence\n',
            "'# Property' needs a fenced SQL block",
        ),
    ],
)
def test_unusable_scenario_file_names_the_file_and_the_fix(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _write(tmp_path / "bad.md", text)
    with pytest.raises(DataError, match=message) as caught:
        parse_scenario(path)
    assert str(path) in str(caught.value)


def test_bind_turns_named_parameters_into_client_side_placeholders() -> None:
    sql = "SELECT '%' || :q, x::text, :missing FROM t WHERE a = :a AND b::int = :a"
    assert bind(sql, {"q": 1, "a": 2}) == (
        "SELECT '%%' || %(q)s, x::text, :missing FROM t WHERE a = %(a)s AND b::int = %(a)s"
    )


def test_original_parameter_file_beside_cases_is_data_not_a_case(tmp_path: Path) -> None:
    app = tmp_path / "suite" / "shop"
    _write(app / "SPEC.md", "# Prompt\nrules\n")
    _write(app / "get-order-01-good.md", "# Code\n```sql\nSELECT 1\n```\n# Expected\ngood\n")
    _write(app / "get-order.md", '# Description\nd\n\n# Parameters\n{"id": 1}\n')
    suite = load_markdown_suite(tmp_path / "suite")
    assert [c.case_id for c in suite.cases] == ["shop/get-order-01-good.md"]
    assert suite.skipped == []
    data, problems = load_app_data("shop", app)
    assert problems == [] and list(data.scenarios) == ["get-order"]
    assert data.scenarios["get-order"].rule == "original"


def _run(case: str, expected: str, *executions: Execution) -> CaseRun:
    return CaseRun("shop", f"shop/{case}", expected, executions)


def test_property_rule_needs_a_violation_for_bad_and_none_plus_an_effect_for_good(
    tmp_path: Path,
) -> None:
    scenario = parse_scenario(_write(tmp_path / "s.md", SCENARIO))
    broken = Execution(0, rows=[{"id": "x"}], violations=[{"row": {"id": "x"}}])
    kept = Execution(1, rows=[{"id": "b"}])
    refused = Execution(1, refused=True)
    proofs = judge(
        [
            _run("s-01-good.md", "good", Execution(0, rows=[{"id": "a"}]), kept),
            _run("s-02-good.md", "good", broken, kept),
            _run("s-03-bad.md", "bad", broken, kept),
            _run("s-04-bad.md", "bad", Execution(0, rows=[{"id": "a"}]), kept),
            _run("s-05-good.md", "good", Execution(0, refused=True), refused),
            _run("s-06-bad.md", "bad", Execution(0, error="42601: syntax error"), kept),
        ],
        scenario,
    )
    assert [p.proof for p in proofs] == [
        Proof.PROVEN,
        Proof.FAILED,
        Proof.PROVEN,
        Proof.FAILED,
        Proof.FAILED,
        Proof.FAILED,
    ]
    assert "parameter set 1" in proofs[1].detail and '"id": "x"' in proofs[1].detail
    assert "keeps the property on every parameter set" in proofs[3].detail
    assert "returns or changes nothing" in proofs[4].detail
    assert "error: 42601: syntax error" in proofs[5].detail


def test_original_rule_compares_with_the_first_good_case(tmp_path: Path) -> None:
    scenario = parse_scenario(_write(tmp_path / "s.md", '# Parameters\n{"a": 1}\n{"a": 2}\n'))

    def ex(i: int, rows: list[dict[str, int]]) -> Execution:
        return Execution(i, rows=rows, compared=rows)

    same = (ex(0, [{"id": 1}]), ex(1, []))
    proofs = judge(
        [
            _run("s-01-good.md", "good", *same),
            _run("s-02-good.md", "good", ex(0, [{"id": 1}]), ex(1, [{"id": 9}])),
            _run("s-03-bad.md", "bad", ex(0, [{"id": 1}]), ex(1, [{"id": 9}])),
            _run("s-04-bad.md", "bad", *same),
        ],
        scenario,
    )
    assert [p.proof for p in proofs] == [Proof.PROVEN, Proof.FAILED, Proof.PROVEN, Proof.FAILED]
    assert "differs from shop/s-01-good.md on parameter set 2" in proofs[1].detail
    assert "returns what shop/s-01-good.md returns" in proofs[3].detail


def test_equivalent_mutants_are_read_by_guard_text_and_an_old_line_key_is_named(
    tmp_path: Path,
) -> None:
    path = tmp_path / "get-order.md"
    path.write_text(
        '# Parameters\n{"id": 1}\n\n# Equivalent mutants\nWhy these break no rule.\n\n'
        "- get-order-01-good.md conjunct `o.status = :status`: a filter the request chooses\n"
        "- get-order-02-good.md boundary `m.expires_at > now()`: rule 3: either answer "
        "complies at the instant\n"
        "- get-order-02-good.md conjunct `org_id = :org` (2 places): redundant: the user's "
        "org: ratio 1:1\n",
        encoding="utf-8",
    )
    scenario = parse_scenario(path)
    assert [e.key for e in scenario.equivalents] == [
        "get-order-01-good.md conjunct `o.status = :status`",
        "get-order-02-good.md boundary `m.expires_at > now()`",
        "get-order-02-good.md conjunct `org_id = :org` (2 places)",
    ]
    mine = scenario.equivalents_of("shop/get-order-02-good.md")
    assert [e.reason for e in mine] == [
        "rule 3: either answer complies at the instant",
        "redundant: the user's org: ratio 1:1",
    ]
    assert [e.places for e in mine] == [1, 2]

    path.write_text(
        '# Parameters\n{"id": 1}\n\n# Equivalent mutants\n'
        "- get-order-01-good.md:4 conjunct: a line, which moves\n",
        encoding="utf-8",
    )
    with pytest.raises(DataError, match=r"line 1 must read .*a line number such as") as raised:
        parse_scenario(path)
    assert raised.value.declaration  # --lint fails it (a verify warning would not)
    path.write_text(
        '# Parameters\n{"id": 1}\n\n# Equivalent mutants\n'
        "- get-order-01-good.md conjunct `o.x = 1`\n",  # no reason
        encoding="utf-8",
    )
    with pytest.raises(DataError, match=r"get-order\.md: '# Equivalent mutants' line 1 must read"):
        parse_scenario(path)
