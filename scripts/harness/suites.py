"""Markdown suites the loopback server answers correctly, at the size of the bundled one.

Each case's code carries an `expect:good` / `expect:bad` marker, which the server
(`harness.loopback`) answers, so every case of a benchmark run comes out correct and a wrong
score shows a fault in the run, not in the model.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from scripts.harness import REPO_ROOT

BUNDLED = REPO_ROOT / "secbench_tui" / "cases"


def write_suite(root: Path, apps: dict[str, Sequence[str]]) -> Path:
    """One folder per app; `apps` maps an app to its cases' expected verdicts, in order."""
    for app, verdicts in apps.items():
        folder = root / app
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SPEC.md").write_text(
            f"# Prompt\nThe {app} service. Orders(id, tenant_id, total).\n"
            "1. Every query filters by tenant_id.\n",
            encoding="utf-8",
        )
        for n, expected in enumerate(verdicts, start=1):
            where = "" if expected == "bad" else " AND tenant_id = :tenant_id"
            (folder / f"case-{n:04d}-{expected}.md").write_text(
                f"# Code\n```sql\n-- <<case:{app}-{n:04d}>> expect:{expected}\n"
                f"SELECT id, total FROM orders WHERE id = :id{where};\n```\n\n"
                f"# Expected\n{expected}\n",
                encoding="utf-8",
            )
    return root


def make_suite(root: Path, cases: int, apps: int = 10) -> Path:
    """`cases` cases in `apps` apps (at least one case each), each app with a SPEC.md as
    large as the bundled ones.

    The bundled apps' `# Prompt` sections run to about 11 kB and are sent with every case,
    so a benchmark with a one-line SPEC.md would flatter memory and JSON costs.
    """
    apps = max(1, min(apps, cases))
    per_app = [cases // apps + (1 if a < cases % apps else 0) for a in range(apps)]
    verdicts = {
        f"app{a:02d}": ["good" if i % 2 else "bad" for i in range(n)] for a, n in enumerate(per_app)
    }
    write_suite(root, verdicts)
    bundled = sorted(BUNDLED.glob("*/SPEC.md"))
    for n, app in enumerate(sorted(verdicts)):
        if bundled:
            shutil.copyfile(bundled[n % len(bundled)], root / app / "SPEC.md")
    return root


def case_count(root: Path) -> int:
    """The cases of a suite written here (every markdown file but the SPECs)."""
    return sum(1 for p in root.glob("*/*.md") if p.name != "SPEC.md")
