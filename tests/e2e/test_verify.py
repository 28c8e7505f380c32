"""`secbench-tui --verify` on a real PostgreSQL: planted mislabels are caught and named.

A copy of the whole bundled suite gets, beside its own cases, bad cases holding a good
sibling's code and good cases holding a bad sibling's code, in an SQL app and in the Python
app; the command must fail naming each, and prove every bundled case's label; and every bad
case's witness (`--json`), replayed as an exploit, is proven (`--prove-findings`). (This is CI's
proof of the bundled labels: .ci/run does not run `--verify` again.) Needs the verify extra
(pgserver); skipped without it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from secbench_tui.config import bundled_cases_dir
from tests.e2e.harness import cli_env

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pgserver = pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")
pytest.importorskip("fastapi", reason="needs the verify extra (fastapi)")

PLANTS = {
    # (app, case copied as a new case with the code of another case, the case whose code
    # it gets)
    ("purchase-order", "approve-po-03-bad.md", "approve-po-01-good.md"),
    ("purchase-order", "get-supplier-01-good.md", "get-supplier-03-bad.md"),
    ("clinic-portal-api", "get-patient-03-bad.md", "get-patient-01-good.md"),
    ("clinic-portal-api", "sign-prescription-02-good.md", "sign-prescription-04-bad.md"),
}

pytestmark = pytest.mark.long  # PostgreSQL work: started first


def _verify(cases: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--verify", "--cases", str(cases), *extra],
        cwd=cases.parent,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _plant(target: Path, source: Path) -> Path:
    """A new case of `target`'s scenario (number 9x) with its description, label and rule,
    and `source`'s code section."""
    scenario, number, label = target.name.rsplit("-", 2)
    planted = target.with_name(f"{scenario}-{90 + int(number)}-{label}")
    code = re.compile(r"# Code\n.*?(?=\n# Expected)", re.S)
    donor = code.search(source.read_text(encoding="utf-8"))
    assert donor is not None
    text = target.read_text(encoding="utf-8")
    planted.write_text(code.sub(lambda _: donor.group(0), text), encoding="utf-8")
    return planted


def _lines(out: str, word: str) -> set[str]:
    return {m.group(1) for m in re.finditer(rf"^{word}\s+(\S+)", out, re.M)}


def test_planted_mislabels_fail_and_are_named_and_every_bundled_label_is_proven(
    tmp_path: Path, pg_url: str
) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(bundled_cases_dir(), suite, ignore=shutil.ignore_patterns("__pycache__"))
    bundled = {
        f"{case.parent.name}/{case.name}" for case in suite.glob("*/*.md") if case.name != "SPEC.md"
    }
    assert len(bundled) == 68 + 56 + 72  # the three apps, every case
    planted = {
        f"{app}/{_plant(suite / app / target, suite / app / source).name}"
        for app, target, source in PLANTS
    }

    done = _verify(suite, "--pg-url", pg_url, "--json", str(tmp_path / "witnesses.json"))

    assert done.returncode == 1, done.stdout + done.stderr
    assert _lines(done.stdout, "FAILED") == planted, done.stdout
    assert _lines(done.stdout, "proven") == bundled, done.stdout  # nothing else failed
    for case in planted:
        assert case in done.stdout.splitlines()[-1]  # the closing line names every failure
    assert "ran on PostgreSQL 16" in done.stdout
    assert re.search(r"labelled bad but keeps the property", done.stdout)
    assert re.search(r"labelled good but breaks the property on parameter set \d", done.stdout)
    _replay_witnesses(tmp_path / "witnesses.json", bundled, pg_url)


def _replay_witnesses(witnesses: Path, bundled: set[str], pg_url: str) -> None:
    """Every bundled bad case's witness, sent back as a model's exploit (`--verify --json`
    writes it as one), is proven by `--prove-findings` on the bundled suite (not the copy,
    whose planted good cases are flawed): on the flawed case, by its rule, and on none of its
    compliant twins."""
    import json

    from secbench_tui.core.suites.markdown import load_markdown_suite
    from secbench_tui.core.verify.exploits import ExploitOutcome, Finding, prove_findings

    suite = bundled_cases_dir()
    cases = {c.case_id: c for c in load_markdown_suite(suite).cases}
    document = json.loads(witnesses.read_text(encoding="utf-8"))
    findings = []
    for record in document["cases"]:
        if record["case_id"] not in bundled or record["expected"] != "bad":
            continue
        witness = record["witness"]
        rule = record["rule"] if not record["other_rule"] else witness["rules"][0]
        case = cases[record["case_id"]]
        findings.append(Finding(case.case_id, case, int(rule), witness["exploit"]))
    assert len(findings) == 98  # every bad case of the bundled suite

    report = prove_findings(suite, findings, pg_url)

    refuted = {p.key: p.detail for p in report.proofs if p.outcome is not ExploitOutcome.PROVEN}
    assert refuted == {}
    assert all(len(p.twins) == 2 for p in report.proofs)  # both compliant cases ran it


ORIGINAL_FIXTURES = """
CREATE TABLE orders (id int PRIMARY KEY, org_id int NOT NULL, total int NOT NULL);
INSERT INTO orders VALUES (1, 1, 10), (2, 1, 20), (3, 2, 30);
"""


def _case(path: Path, code: str, expected: str) -> None:
    path.write_text(f"# Code\n```sql\n{code}\n```\n\n# Expected\n{expected}\n", encoding="utf-8")


def test_a_suite_in_the_original_format_verifies_by_the_original_rule(tmp_path: Path) -> None:
    app = tmp_path / "suite" / "shop"
    app.mkdir(parents=True)
    (app / "SPEC.md").write_text("# Prompt\nOrders belong to an org.\n", encoding="utf-8")
    (app / "fixtures.sql").write_text(ORIGINAL_FIXTURES, encoding="utf-8")
    (app / "get-order.md").write_text(
        '# Description\nOne order.\n\n# Parameters\n{"id": 1, "org": 1}\n{"id": 3, "org": 1}\n',
        encoding="utf-8",
    )
    _case(
        app / "get-order-01-good.md",
        "SELECT id, total FROM orders WHERE id = :id AND org_id = :org",
        "good",
    )
    _case(
        app / "get-order-02-good.md",
        "SELECT o.id, o.total FROM orders o WHERE o.org_id = :org AND o.id = :id",
        "good",
    )
    _case(app / "get-order-03-bad.md", "SELECT id, total FROM orders WHERE id = :id", "bad")
    _case(
        app / "get-order-04-bad.md",
        "SELECT id, total FROM orders WHERE id = :id AND org_id = :org",
        "bad",
    )
    _case(app / "list-orders-01-good.md", "SELECT 1", "good")

    done = _verify(tmp_path / "suite")  # the embedded PostgreSQL

    assert done.returncode == 1, done.stdout + done.stderr
    assert _lines(done.stdout, "proven") == {
        "shop/get-order-01-good.md",
        "shop/get-order-02-good.md",
        "shop/get-order-03-bad.md",
    }
    assert _lines(done.stdout, "FAILED") == {"shop/get-order-04-bad.md"}
    assert re.search(
        r"^not verifiable\s+shop/list-orders-01-good.md .*no verification data", done.stdout, re.M
    )
    assert "(pgserver)" in done.stdout


def test_a_handler_that_does_not_load_fails_with_its_error(tmp_path: Path, pg_url: str) -> None:
    app = tmp_path / "suite" / "clinic-portal-api"
    shutil.copytree(bundled_cases_dir() / "clinic-portal-api", app)
    for case in app.glob("*-0*.md"):
        if not case.name.startswith("get-patient-"):
            case.unlink()
    broken = app / "get-patient-01-good.md"
    text = broken.read_text(encoding="utf-8")
    broken.write_text(text.replace("response_model=PatientOut", "response_model=NoSuchOut"))

    done = _verify(tmp_path / "suite", "--pg-url", pg_url)

    assert done.returncode == 1, done.stdout + done.stderr
    assert _lines(done.stdout, "FAILED") == {"clinic-portal-api/get-patient-01-good.md"}
    assert "the handler does not load: NameError: name 'NoSuchOut' is not defined" in done.stdout
    assert len(_lines(done.stdout, "proven")) == 3


def test_an_unusable_suite_is_a_usage_error(tmp_path: Path) -> None:
    done = _verify(tmp_path / "missing")
    assert done.returncode == 2
    assert "--cases" in done.stderr and "not a directory" in done.stderr


def test_filter_picks_the_cases_verify_runs(tmp_path: Path, pg_url: str) -> None:
    """`--verify --filter 'app/x-01*'` ran the whole suite: the glob was silently ignored."""
    suite = tmp_path / "suite"
    shutil.copytree(bundled_cases_dir() / "purchase-order", suite / "purchase-order")
    shutil.copytree(bundled_cases_dir() / "clinic-portal-api", suite / "clinic-portal-api")

    done = _verify(suite, "--pg-url", pg_url, "--filter", "purchase-order/add-po-line-0[13]*")

    assert done.returncode == 0, done.stdout + done.stderr
    assert _lines(done.stdout, "proven") == {
        "purchase-order/add-po-line-01-good.md",
        "purchase-order/add-po-line-03-bad.md",
    }, done.stdout
    assert "clinic-portal-api" not in done.stdout

    none = _verify(suite, "--pg-url", pg_url, "--filter", "nope/*")
    assert none.returncode == 2, none.stdout + none.stderr
    assert "--filter nope/*" in none.stderr and "matches no case" in none.stderr


# Org B's supplier, shown under the id of a live supplier of the caller's organization (a1):
# by a column named id, and by a second column named id after the real one.
SPOOFED_KEYS = {
    "get-supplier-91-good.md": """
SELECT '20000000-0000-0000-0000-0000000000a1'::uuid AS id, s.name, s.contact_email, s.country
FROM suppliers s
WHERE s.id = '20000000-0000-0000-0000-0000000000b1';""",
    "get-supplier-92-good.md": """
SELECT s.id AS supplier, s.name, s.country, '20000000-0000-0000-0000-0000000000a1'::uuid AS id
FROM suppliers s
WHERE s.id = '20000000-0000-0000-0000-0000000000b1';""",
}


def test_a_row_shown_under_another_rows_id_is_judged_as_the_row_it_shows(
    tmp_path: Path, pg_url: str
) -> None:
    """Properties find the table row a result row shows by `verify_key`, which took a column
    named `id` on trust: another organization's supplier, shown under the id of one of the
    caller's own, was proven good. A model's fix could leak rows that way."""
    suite = tmp_path / "suite"
    shutil.copytree(bundled_cases_dir() / "purchase-order", suite / "purchase-order")
    for name, code in SPOOFED_KEYS.items():
        _case(suite / "purchase-order" / name, code.strip(), "good")

    done = _verify(suite, "--pg-url", pg_url, "--filter", "purchase-order/get-supplier-*")

    assert done.returncode == 1, done.stdout + done.stderr
    assert _lines(done.stdout, "FAILED") == {f"purchase-order/{name}" for name in SPOOFED_KEYS}, (
        done.stdout
    )
    assert {
        "purchase-order/get-supplier-01-good.md",
        "purchase-order/get-supplier-03-bad.md",
    } <= _lines(done.stdout, "proven"), done.stdout
