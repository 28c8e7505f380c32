"""Benchmark `--lint` on cases of growing size: its time must grow linearly with the suite.

Writes a suite with one app of four cases (two good, two bad, so the trivial classifiers run)
whose first case is padded to each size with realistic code: SQL with comments, string
literals and dollar quotes, and Python with docstrings, `#` comments and SQL inside strings.
Times `lint_suite` on each (best of --repeat) and loading alone (parsing the case files), and
prints the time per MB against the smallest size measured in the same run: a linear lint keeps
that ratio near 1, a quadratic one makes it grow with the size. Asserts nothing.

    python scripts/bench_lint.py [--sizes 0.1,0.5,1.5,6] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from secbench_tui.core.lint.suite import lint_suite  # noqa: E402
from secbench_tui.core.suites.markdown import parse_case_file  # noqa: E402

SQL_BLOCK = """\
-- list one tenant's orders (block {n})
SELECT o.id, o.total, 'it''s a -- literal' AS note, $tag$ body -- not a comment $tag$
FROM orders o /* joined
   over two lines */ WHERE o.tenant_id = :tenant_id AND o.id = {n};
# mysql-style comment at the start of a line
"""
PY_BLOCK = '''\
def handler_{n}(request, db):
    """Return order {n} of the caller's tenant."""
    # fetch with the tenant filter
    rows = db.execute("SELECT id FROM orders -- inline sql comment\\n WHERE id = :id", {{}})
    return [r for r in rows if r["total"] > {n}]  # keep the big ones
'''


def padded_code(language: str, size: int) -> str:
    block = SQL_BLOCK if language == "sql" else PY_BLOCK
    parts, total, n = [], 0, 0
    while total < size:
        part = block.format(n=n)
        parts.append(part)
        total += len(part)
        n += 1
    return "".join(parts)


def write_suite(root: Path, language: str, size: int) -> None:
    app = root / "shop"
    app.mkdir(parents=True)
    (app / "SPEC.md").write_text("# Prompt\nThe shop. Orders(id, tenant_id, total).\n")
    small = "SELECT id FROM orders WHERE tenant_id = :t AND id = :id;"
    codes = [padded_code(language, size), small + " -- a", small, small + " -- b"]
    for i, (code, label) in enumerate(zip(codes, ("bad", "good", "bad", "good"), strict=True)):
        (app / f"orders-{i + 1:02d}-{label}.md").write_text(
            f"# Description\nRule 1.\n\n# Code\n```{language}\n{code}\n```\n\n"
            f"# Expected\n{label}\n",
            encoding="utf-8",
        )


def best_of(repeat: int, action) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="0.1,0.5,1.5,6", help="case sizes in MB")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [float(s) for s in args.sizes.split(",")]
    for language in ("sql", "python"):
        print(f"{language} case: size MB, lint s, load s, lint s per MB, ratio to smallest")
        baseline = None
        for mb in sizes:
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp) / "suite"
                write_suite(root, language, int(mb * 1_000_000))
                big = sorted((root / "shop").glob("orders-01-*.md"))[0]
                lint = best_of(args.repeat, lambda r=root: lint_suite(r))
                load = best_of(args.repeat, lambda p=big: parse_case_file(p))
            per_mb = lint / mb
            baseline = baseline or per_mb
            print(f"  {mb:6.2f}  {lint:8.3f}  {load:7.3f}  {per_mb:8.3f}  {per_mb / baseline:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
