"""Scores no strategy can earn without the skill (issue 31): loopback models that game one
figure each land on that figure's chance level, as the run computes and prints it.

Each strategy plays the bundled suite (or, for the surface cue, a leaky suite written here)
through the real command; the chance levels are the ones `--summary-json` gives under
`chance`, computed by the tool from the cases run, and each is also checked against a count
made here where one is simple to make.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.gaming import (
    Play,
    always_bad_citing,
    every_rule,
    gold_rule_every_line,
    gold_rule_quoting,
    most_frequent_rule,
    read_suite,
    responder,
    surface_cue,
)
from tests.e2e.harness import REPO_ROOT, cli_env, run_cli
from tests.e2e.server import LoopbackServer

BUNDLED = REPO_ROOT / "secbench_tui" / "cases"


def play(
    server: LoopbackServer, tmp_path: Path, suite: Path, strategy: Play, *extra: str
) -> tuple[dict[str, Any], str]:
    cases, _ = read_suite(suite)
    server.default = responder(cases, strategy)
    out = tmp_path / "summary.json"
    db = tmp_path / "results.db"
    done = run_cli(server.base_url, db, suite, "--summary-json", str(out), *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text()), done.stdout


def test_citing_every_rule_earns_the_every_rule_chance_level(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """Perfect verdicts, every rule cited on every bad case: P-C is the verdicts' own, the
    right reason is what citing every rule earns without reading (0 on the bundled suite)."""
    _, spec = read_suite(BUNDLED)
    summary, _ = play(server, tmp_path, BUNDLED, every_rule(spec))
    reason, chance = summary["reason"], summary["chance"]
    assert summary["pairwise"]["p_c"] == 1.0
    assert reason["right_rule"] == chance["right_reason"]["every_rule"] == 0.0
    assert reason["rule_recall"] == 1.0 and reason["imprecise"] == 98  # the rule is among them
    assert reason["rule_precision"] < 0.1


@pytest.mark.parametrize("quote", ["one letter", "whole block"])
def test_a_quote_that_points_at_nothing_earns_no_line(
    server: LoopbackServer, tmp_path: Path, quote: str
) -> None:
    quoting = gold_rule_quoting(lambda case: "e" if quote == "one letter" else case.code)
    summary, _ = play(server, tmp_path, BUNDLED, quoting)
    reason = summary["reason"]
    assert reason["right_rule"] == 1.0  # the gold rule, alone: the right reason
    assert reason["right_rule_and_line"] == 0.0 and reason["right_rule_and_line_cases"] == 0


def test_quoting_every_line_under_the_gold_rule_earns_no_line(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """One violation per line of the code, all citing the gold rule: one quote lies on the
    flaw on every bad case, but the reply pointed at every line (scoring version 3 credited
    "rule and line" on 98 of 98)."""
    summary, _ = play(server, tmp_path, BUNDLED, gold_rule_every_line)
    reason = summary["reason"]
    assert reason["right_rule"] == 1.0
    assert reason["right_rule_and_line"] == 0.0 and reason["right_rule_and_line_cases"] == 0


def test_always_bad_citing_the_most_frequent_rule_scores_every_chance_level(
    server: LoopbackServer, tmp_path: Path
) -> None:
    cases, _ = read_suite(BUNDLED)
    rules = most_frequent_rule(cases)
    summary, out = play(server, tmp_path, BUNDLED, always_bad_citing(rules))
    chance = summary["chance"]
    bad = [c for c in cases if c.expected == "bad"]
    counted = sum(c.rule == rules[c.app] for c in bad) / len(bad)  # 20 of 98
    assert summary["reason"]["right_rule"] == chance["right_reason"]["most_frequent_rule"]
    assert chance["right_reason"]["most_frequent_rule"] == pytest.approx(counted)
    assert summary["pairwise"]["p_c"] == chance["p_c"]["always_bad"] == 0.0
    assert summary["accuracy"] == chance["accuracy"]["always_bad"] == 0.5
    assert summary["balanced_accuracy"] == chance["balanced_accuracy"]["constant"] == 0.5
    scenarios = summary["scenarios"]
    assert scenarios["solved"] / scenarios["count"] == chance["scenarios_solved"]["always_bad"]
    assert chance["p_c"]["coin_flip"] == 0.25
    # the summary prints each level beside its figure
    assert "chance: P-C coin flip 25.0%, always bad 0.0%; right reason" in out
    assert f"most frequent rule {100 * counted:.1f}%" in out


def write_leaky_suite(root: Path, scenarios: int = 12) -> None:
    """A third-party suite whose bad cases carry a `-- SAFE:` comment: a surface cue."""
    folder = root / "billing"
    folder.mkdir(parents=True)
    (folder / "SPEC.md").write_text(
        "# Prompt\nThe billing service.\n\n1. Every query filters by tenant_id.\n"
        "2. Lists take a LIMIT.\n",
        encoding="utf-8",
    )
    for s in range(scenarios):
        columns = ", ".join(["id", "total", "status", "due", "note"][: 1 + s % 5])
        for n, expected in enumerate(("good", "good", "bad", "bad"), start=1):
            filter_ = " AND tenant_id = :tenant_id" if expected == "good" else ""
            cue = "\n-- SAFE: reviewed" if expected == "bad" else ""
            code = (
                f"SELECT {columns}{', paid' * (n % 2)} FROM invoices_{s}\n"
                f"WHERE id = :id{filter_}\nLIMIT 10;{cue}"
            )
            rule = "# Rule\n1\n\n" if expected == "bad" else ""
            (folder / f"inv{s}-{n:02d}-{expected}.md").write_text(
                f"# Code\n```sql\n{code}\n```\n\n{rule}# Expected\n{expected}\n", encoding="utf-8"
            )


def test_a_surface_cue_is_named_first_and_scores_its_own_chance_level(
    server: LoopbackServer, tmp_path: Path
) -> None:
    suite = tmp_path / "leaky"
    write_leaky_suite(suite)
    summary, out = play(server, tmp_path, suite, surface_cue("SAFE"))
    leak = summary["leak"]
    assert leak["cues"] and leak["threshold"] == 0.6
    strongest = max(leak["cues"], key=lambda c: c["balanced_accuracy"])
    assert strongest["features"] == "comment-words" and strongest["balanced_accuracy"] == 1.0
    # the cue's own held-out answers score what the model scores: chance level, not skill
    assert summary["pairwise"]["p_c"] == 1.0
    assert summary["chance"]["p_c"]["surface_cue"] == pytest.approx(1.0)
    assert summary["chance"]["accuracy"]["surface_cue"] == pytest.approx(summary["accuracy"])
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("Run 1 completed"))
    said, cue = lines[first + 1], lines[first + 2]  # the summary's first lines
    assert "labels leak" in said and "0.60" in said
    assert "comment-words in billing" in cue and "balanced accuracy 1.00" in cue

    report = tmp_path / "report.html"
    done = run_cli(
        server.base_url, tmp_path / "results.db", suite, "--report", "--out", str(report)
    )
    assert done.returncode == 0, done.stderr
    page = report.read_text()
    body = page.split("<body>", 1)[1]
    assert body.index('id="leak"') < body.index("<nav")  # said before anything else
    assert "comment-words" in page.split('id="leak"', 1)[1].split("</section>", 1)[0]
    assert 'id="verdict"' not in page and "is the most accurate" not in page  # withheld


def test_three_digit_case_numbers_keep_every_pair(server: LoopbackServer, tmp_path: Path) -> None:
    suite = tmp_path / "cases"
    shutil.copytree(BUNDLED, suite)
    renamed = 0
    for path in suite.glob("*/*-[0-9][0-9]-*.md"):
        stem, number, label = path.name.rsplit("-", 2)
        path.rename(path.with_name(f"{stem}-0{number}-{label}"))
        renamed += 1
    assert renamed == 196
    out = tmp_path / "summary.json"
    done = run_cli(
        server.base_url,
        tmp_path / "results.db",
        suite,
        "--summary-json",
        str(out),
        model="baseline/always-bad",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    assert summary["pairwise"]["pairs"] == 196 and summary["scenarios"]["count"] == 49
    lint = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--lint", "--cases", str(suite)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=120,
    )
    assert lint.returncode == 0, lint.stdout
    assert "belongs to no pair" not in lint.stdout
