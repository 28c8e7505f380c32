"""`--task fix` without a database: the reply's schema, reading the fixed code, the change
size, the baselines' answers, the plan, and the figures made from stored rows."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from secbench_tui.config import RunSettings, Settings
from secbench_tui.core.fixes.models import FixOutcome
from secbench_tui.core.models import Case, Message, SuiteKind
from secbench_tui.core.results.fixes import fix_summary, fix_text, fixed_code_of, proposed_code_of
from secbench_tui.core.results.lines import plain
from secbench_tui.core.results.summary import fix_lines as render_fix_lines
from secbench_tui.core.run.catalog import Catalog
from secbench_tui.core.run.providers.baselines import BaselineProvider
from secbench_tui.core.run.providers.openai_compat import ClientSettings, OpenAICompatibleProvider
from secbench_tui.core.suites.fix_reply import fix_schema, proposal_schema
from secbench_tui.core.suites.markdown import load_markdown_suite, with_code
from secbench_tui.core.suites.prompts import bundled_prompt_names, resolve_prompts
from secbench_tui.core.suites.twins import Twin, changed_lines, diff_lines, nearest
from secbench_tui.errors import UsageError
from secbench_tui.planning.cells import matrix_cells
from secbench_tui.planning.suites import load_suite

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "suite"


# --- the reply --------------------------------------------------------------------------


def test_the_fix_schema_asks_for_the_verdict_then_the_whole_fixed_code() -> None:
    schema = fix_schema()
    order = ["explanation", "assessment", "violations", "fixed_code"]
    assert list(schema["properties"]) == order and schema["required"] == order
    assert schema["additionalProperties"] is False and "$defs" not in json.dumps(schema)
    assert list(proposal_schema()["properties"]) == ["explanation", "code"]


async def test_a_fix_run_sends_the_fix_schema_in_its_response_format() -> None:
    sent: list[dict[str, object]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        reply = {"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}]}
        return httpx.Response(200, json=reply)

    case = Case(
        kind=SuiteKind.MARKDOWN,
        app="a",
        case_id="a/x-01-bad.md",
        test_file="x",
        expected="bad",
        code="SELECT 1;",
        messages=(Message(role="user", content="P"),),
    )
    for reply in ("verdict", "fix", "proposal"):
        settings = ClientSettings(
            base_url="http://127.0.0.1:9/v1", model="m/x", max_retries=0, timeout=5.0
        )
        settings.reply = reply  # type: ignore[assignment]
        client = httpx.AsyncClient(transport=httpx.MockTransport(handle))
        provider = OpenAICompatibleProvider(settings, client=client)
        await provider.complete(case)
        await provider.aclose()
    names = [body["response_format"]["json_schema"]["name"] for body in sent]  # type: ignore[index]
    assert names == ["security_verdict", "security_fix", "case_proposal"]
    fix_body = sent[1]["response_format"]["json_schema"]["schema"]  # type: ignore[index]
    assert fix_body == fix_schema()


def test_the_fix_prompt_is_bundled_but_is_no_strategy_of_finding() -> None:
    assert "fix" not in bundled_prompt_names()
    assert "fix" not in [p.name for p in resolve_prompts(["all"])]
    (prompt,) = resolve_prompts(["fix"])
    assert '"fixed_code"' in prompt.text and prompt.source == "bundled"


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        ('{"assessment": "bad", "violations": [], "fixed_code": "SELECT 2;"}', "SELECT 2;"),
        ('Here:\n```json\n{"Fixed_Code": "SELECT 2;"}\n```', "SELECT 2;"),
        (json.dumps({"fixed_code": "```sql\nSELECT 2;\n```"}), "SELECT 2;"),
        ('{"fixed_code": "SELECT 2;"} and {"fixed_code": "SELECT 3;"}', None),  # no guessing
        ('{"fixed_code": "   "}', None),
        ('{"fixed_code": 7}', None),
        ('{"assessment": "bad"}', None),
        ("SELECT 2;", None),
        (None, None),
    ],
)
def test_the_fixed_code_is_read_as_a_verdict_is_and_never_guessed(
    reply: str | None, code: str | None
) -> None:
    assert fixed_code_of(reply) == code


def test_a_proposal_gives_its_code_under_code() -> None:
    assert proposed_code_of('{"explanation": "x", "code": "SELECT 1;"}') == "SELECT 1;"
    assert proposed_code_of('{"explanation": "x"}') is None


# --- the change size and the twins -----------------------------------------------------


def test_a_change_counts_the_lines_replaced_added_or_removed() -> None:
    before = "SELECT a\nFROM t\nWHERE x = 1;\n"
    assert changed_lines(before, before) == 0
    assert changed_lines(before, "SELECT a   \nFROM t\nWHERE x = 1;\n\n\n") == 0  # layout
    assert changed_lines(before, "SELECT a\nFROM t\nWHERE x = 2;") == 1
    assert changed_lines(before, "SELECT a\nFROM t\nWHERE x = 1\n  AND y = 2;") == 2
    assert changed_lines(before, "SELECT a\nFROM t\n;") == 1  # one line replaced
    assert changed_lines(before, "DELETE FROM everything;") == 3
    assert diff_lines(before, before, "a", "b") == []
    assert "+WHERE x = 2;" in diff_lines(before, "SELECT a\nFROM t\nWHERE x = 2;", "a", "b")


def test_the_nearest_twin_is_the_one_changed_least_first_by_id_on_a_tie() -> None:
    twins = [Twin("a/s-02-good.md", "A\nB\nC"), Twin("a/s-01-good.md", "A\nB\nD")]
    assert nearest("A\nB\nC", twins) == twins[0]
    assert nearest("A\nX\nY", twins) == twins[1]  # both change 2 lines: the first id
    assert nearest("A", []) is None


# --- the baselines ---------------------------------------------------------------------


def _suite(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    app = root / "shop"
    app.mkdir(parents=True)
    (app / "SPEC.md").write_text("# Prompt\nShop.\n\n1. Scope by tenant.\n2. Hide cost.\n")
    codes = {
        "orders-01-good.md": ("SELECT id FROM orders\nWHERE tenant = :t\nAND id = :id;", "good"),
        "orders-02-good.md": ("SELECT id, total\nFROM orders o\nWHERE o.tenant = :t;", "good"),
        "orders-03-bad.md": ("SELECT id FROM orders\nWHERE id = :id;", "bad"),
    }
    for name, (code, label) in codes.items():
        rule = "\n# Rule\n1\n" if label == "bad" else ""
        (app / name).write_text(f"# Code\n```sql\n{code}\n```\n{rule}\n# Expected\n{label}\n")
    return root


def test_echo_returns_the_code_and_twin_the_nearest_compliant_twin(tmp_path: Path) -> None:
    suite = load_markdown_suite(_suite(tmp_path))
    bad = next(c for c in suite.cases if c.expected == "bad")
    echo = json.loads(BaselineProvider("baseline/echo").answer(bad))
    assert echo["fixed_code"] == bad.code and echo["assessment"] == "good"
    twin = json.loads(BaselineProvider("baseline/twin").answer(bad))
    assert twin["fixed_code"] == "SELECT id FROM orders\nWHERE tenant = :t\nAND id = :id;"
    assert twin["assessment"] == "bad" and twin["violations"][0]["rule"] == 1
    good = next(c for c in suite.cases if c.expected == "good")
    assert json.loads(BaselineProvider("baseline/twin").answer(good))["fixed_code"] == good.code


# --- the plan --------------------------------------------------------------------------


def test_a_fix_run_asks_only_the_bad_cases_with_the_fix_prompt() -> None:
    settings = Settings(models=["baseline/twin"], cases=FIXTURE, task="fix")
    (cell,) = matrix_cells(settings, Catalog([], "none"))
    assert cell.prompt is not None and cell.prompt.name == "fix"
    suite = load_suite(cell)
    assert suite.cases and {c.expected for c in suite.cases} == {"bad"}
    assert cell.recorded().task == "fix"
    assert "task" not in RunSettings(model="m", cases=FIXTURE).recorded().as_dict()


def test_a_fix_run_refuses_what_cannot_apply(tmp_path: Path) -> None:
    vdb = tmp_path / "vdb"
    vdb.mkdir()
    (vdb / "task1_code.jsonl").write_text("")
    for settings, words in (
        (Settings(models=["m/x"], cases=vdb, task="fix"), "markdown suites"),
        (
            Settings(models=["m/x"], cases=FIXTURE, task="fix", rewrites=["layout"]),
            "--rewrites applies to --task find",
        ),
        (
            Settings(models=["m/x"], cases=FIXTURE, task="fix", prove_findings=True),
            "--prove-findings applies to --task find",
        ),
        (
            Settings(models=["m/x"], cases=FIXTURE, task="fix", request_style="security-bench"),
            "--request-style security-bench",
        ),
    ):
        with pytest.raises(UsageError, match=words):
            matrix_cells(settings, Catalog([], "none"))


# --- the case file a proposal is written as --------------------------------------------


def test_a_proposal_replaces_only_the_code_block_and_keeps_the_line_endings() -> None:
    text = "# Description\r\nx\r\n\r\n# Code\r\n```sql\r\nSELECT 1;\r\n```\r\n"
    text += "\r\n# Expected\r\nbad\r\n"
    assert with_code(text, "SELECT 2;\nSELECT 3;\n") == text.replace(
        "SELECT 1;", "SELECT 2;\r\nSELECT 3;"
    )
    fenced_elsewhere = "# Notes\n```\nnot code\n```\n# Code\n```python\nx = 1\n```\n"
    assert with_code(fenced_elsewhere, "x = 2") == fenced_elsewhere.replace("x = 1", "x = 2")
    assert with_code("# Expected\nbad\n", "x") is None


# --- the figures -----------------------------------------------------------------------


def _fixed(
    case: str, outcome: FixOutcome | None, lines: int | None = 1, app: str = "shop", **kw: object
) -> dict[str, object]:
    return {
        "app": app,
        "case_id": f"{app}/{case}",
        "expected_result": "bad",
        "suite_kind": "markdown",
        "repeat": 0,
        "variant": None,
        "gold": json.dumps({"rules": [kw.pop("rule", 1)], "lines": []}),
        "fix_outcome": outcome.value if outcome else None,
        "fix_change_lines": lines,
        **kw,
    }


def test_the_figures_rate_each_outcome_over_the_cases_a_fix_can_be_judged_on() -> None:
    rows = [
        _fixed("a-01-bad.md", FixOutcome.PROVEN, 1),
        _fixed("a-02-bad.md", FixOutcome.PROVEN, 3, rule=2),
        _fixed("b-01-bad.md", FixOutcome.SECURE_BROKEN, 5, app="clinic"),
        _fixed("b-02-bad.md", FixOutcome.FUNCTIONAL_INSECURE, 1, app="clinic"),
        _fixed("c-01-bad.md", FixOutcome.UNPARSED, None),
        _fixed("c-02-bad.md", FixOutcome.NOT_VERIFIABLE, None),  # not judged
        _fixed("c-03-bad.md", None, None),  # not verified yet
        _fixed("a-01-bad.md", FixOutcome.INSECURE, 9, repeat=1),  # a repeat: not counted
        {**_fixed("a-01-good.md", FixOutcome.PROVEN), "expected_result": "good"},  # no fix
    ]
    f = fix_summary(rows)  # type: ignore[arg-type]
    assert f is not None
    assert (f.bad_cases, f.judged, f.proven, f.unverified, f.not_verifiable) == (7, 6, 2, 1, 1)
    assert f.proven_rate == pytest.approx(2 / 6) and f.proven_rate_ci is not None
    assert f.proven_rate_ci[0] < 2 / 6 < f.proven_rate_ci[1]
    assert (f.secure_broken, f.functional_insecure, f.did_not_parse) == (1, 1, 1)
    assert f.median_change_lines == 2.0 and f.median_change_lines_proven == 2.0
    assert {app: t.proven for app, t in f.apps.items()} == {"clinic": 0, "shop": 2}
    assert list(f.rules) == ["1", "2"]
    text = plain(render_fix_lines(f))
    assert "fixes: proven 33.3%" in text and "of 6 bad cases (2 proven)" in text
    assert "floor: baseline/echo 0%, ceiling: baseline/twin 100%" in text
    assert "1 fixes not verified yet: --rescore verifies them" in text
    assert "by app: clinic 0/2  shop 2/4" in text and "by rule: rule 1" in text
    assert fix_summary([{**rows[0], "expected_result": "good"}]) is None  # type: ignore[list-item]


def test_the_result_detail_says_why_a_fix_is_not_proven_with_the_rows() -> None:
    detail = {
        "broken": {
            "set": 2,
            "params": {"id": 7},
            "why": "the result rows differ",
            "rows": [{"id": 7}],
            "twin_rows": [{"id": 7, "total": 3}],
            "violations": [],
        }
    }
    row = _fixed(
        "a-01-bad.md",
        FixOutcome.SECURE_BROKEN,
        2,
        fix_secure=True,
        fix_functional=False,
        fix_reason="differs from its twin on parameter set 2",
        fix_twin="shop/a-02-good.md",
        fix_detail=json.dumps(detail),
    )
    text = "\n".join(fix_text(row))  # type: ignore[arg-type]
    assert text.startswith("secure but broken: secure yes, functional no")
    assert "differs from the twin on parameter set 2" in text and '{"id": 7}' in text
    assert 'the twin returned: {"id": 7, "total": 3}' in text
    assert fix_text({"fix_outcome": None}) == []  # type: ignore[typeddict-item]
