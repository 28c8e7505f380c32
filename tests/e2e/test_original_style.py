"""`--request-style security-bench` against a loopback server: what it reproduces beyond the
body (issue 22): the original's headers, and which cases the original's own pattern finds.

The original (glideapps/security-bench, src/evaluator.ts) reads a case's code with
`/# Code\\s*\\n\\s*```(?:sql)?\\s*\\n([\\s\\S]*?)\\n```/i`: a `# code` heading is found (its `i`
flag), a ```python fence is not (the case is skipped there, and so here, saying why).
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e.harness import run_cli
from tests.e2e.server import LoopbackServer


def _suite(root: Path) -> None:
    app = root / "shop"
    app.mkdir(parents=True)
    (app / "SPEC.md").write_text("# prompt\nOrders(id, tenant_id).\n", encoding="utf-8")
    bodies = {
        "lower-01-bad.md": "# code\n```sql\nSELECT 1; -- <<lower>>\n```\n\n# Expected\nbad\n",
        "upper-02-good.md": "# Code\n```\nSELECT 2; -- <<bare>>\n```\n\n# Expected\ngood\n",
        "python-03-good.md": "# Code\n```python\nx = 3  # <<python>>\n```\n\n# Expected\ngood\n",
    }
    for name, text in bodies.items():
        (app / name).write_text(text, encoding="utf-8")


def test_the_original_style_sends_its_headers_and_finds_the_blocks_it_finds(
    tmp_path: Path, server: LoopbackServer
) -> None:
    _suite(tmp_path / "suite")
    prompt = tmp_path / "default.txt"
    prompt.write_text("Answer in JSON.\n", encoding="utf-8")
    result = run_cli(
        server.base_url,
        tmp_path / "r.db",
        tmp_path / "suite",
        *("--request-style", "security-bench", "--prompt", str(prompt)),
    )

    assert result.returncode == 0, result.stderr
    sent = server.completions()
    assert sorted(r.body["messages"][3]["content"] for r in sent) == [
        "SELECT 1; -- <<lower>>",
        "SELECT 2; -- <<bare>>",
    ]
    assert all(r.body["messages"][1]["content"] == "Orders(id, tenant_id)." for r in sent)
    for request in sent:
        assert request.header("http-referer") == "https://github.com/security-bench"
        assert request.header("x-title") == "Security Benchmark Evaluator"
        assert request.header("user-agent") == "node"
    (skipped,) = [line for line in result.stderr.splitlines() if "python-03-good.md" in line]
    assert "the original evaluator would skip it" in skipped and "```sql" in skipped
