"""The example suite of docs/suites.md, as printed there, passes `--lint` and runs."""

from __future__ import annotations

import re
from pathlib import Path

from secbench_tui.core.lint.suite import lint_suite
from secbench_tui.core.suites.markdown import discover_apps

SUITES_DOC = Path(__file__).resolve().parents[2] / "docs" / "suites.md"


def write_example_suite(root: Path) -> Path:
    text = SUITES_DOC.read_text(encoding="utf-8")
    section = text.split("## A complete example", 1)[1].split("\n## ", 1)[0]
    spec, good = re.findall(r"````markdown\n(.*?)````", section, re.S)
    others = section.split("The other three cases' code", 1)[1]
    sql = re.search(r"```sql\n(.*?)```", others, re.S)
    assert sql is not None
    codes = [c.strip() + "\n" for c in sql.group(1).split("\n\n")]
    app = root / "my-suite" / "billing"
    app.mkdir(parents=True)
    (app / "SPEC.md").write_text(spec, encoding="utf-8")
    (app / "list-invoices-01-good.md").write_text(good, encoding="utf-8")
    template = re.sub(r"```sql\n.*?```", "```sql\n{code}```", good, flags=re.S)
    for name, code in zip(
        ("list-invoices-02-bad", "get-invoice-01-good", "get-invoice-02-bad"), codes, strict=True
    ):
        label = name.rsplit("-", 1)[1]
        case = template.replace("{code}", code).replace("\ngood\n", f"\n{label}\n")
        (app / f"{name}.md").write_text(case, encoding="utf-8")
    return root / "my-suite"


def test_the_documented_suite_passes_lint(tmp_path: Path) -> None:
    suite = write_example_suite(tmp_path)
    report = lint_suite(suite)
    assert not report.failed, [str(f) for f in report.findings if f.fails]
    assert report.cases == 4
    (app,) = discover_apps(suite)
    assert len(app.case_files) == 4
