"""The suite lint on small suites written into tmp_path, and its comment reader."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from secbench_tui.core.lint.classifiers import (
    comment_classifier_accuracy,
    length_classifier_accuracy,
)
from secbench_tui.core.lint.comments import find_comments
from secbench_tui.core.lint.report import LintReport
from secbench_tui.core.lint.suite import lint_suite
from secbench_tui.linting import lint_main as main

SPEC = "# Prompt\nSchema: orders(id, org_id, total). Rule 1: scope every query to :org_id.\n"
COLUMNS = ["id", "total", "status", "created_at", "customer_id", "currency", "note", "ref"]


def case_text(code: str, expected: str, lang: str = "sql", description: str = "Rule 1.") -> str:
    body = f"# Code\n```{lang}\n{code}\n```\n\n# Expected\n{expected}\n"
    return f"# Description\n{description}\n\n{body}"


def pair_code(i: int) -> tuple[str, str]:
    """A good and a bad query of exactly the same length, different for each i."""
    cols = ", ".join(COLUMNS[: 1 + i % len(COLUMNS)])
    table = f"orders_{i:02d}"
    good = f"SELECT {cols} FROM {table} WHERE org_id = :org_id AND id = :id;"
    bad = f"SELECT {cols} FROM {table} WHERE org_id = :org_id OR id = :id2;"
    assert len(good) == len(bad)
    return good, bad


def short_bad_pairs(n: int) -> list[tuple[str, str]]:
    """Every bad query is shorter than every good one: the org filter is simply dropped."""
    pairs = []
    for i in range(n):
        good = f"SELECT id, total FROM orders_{i:02d} WHERE org_id = :org_id AND id = :id;"
        pairs.append((good, good.replace("org_id = :org_id AND ", "")))
    return pairs


def write_suite(
    root: Path,
    pairs: list[tuple[str, str]],
    app: str = "shop",
    lang: str = "sql",
    extra: dict[str, str] | None = None,
) -> Path:
    folder = root / app
    folder.mkdir(parents=True)
    (folder / "SPEC.md").write_text(SPEC)
    for i, (good, bad) in enumerate(pairs):
        (folder / f"s{i:02d}-01-good.md").write_text(case_text(good, "good", lang))
        (folder / f"s{i:02d}-02-bad.md").write_text(case_text(bad, "bad", lang))
    for name, text in (extra or {}).items():
        (folder / name).write_text(text)
    return root


def checks(report: LintReport) -> set[str]:
    return {f.check for f in report.findings if f.fails}


def test_clean_suite_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_suite(tmp_path, [pair_code(i) for i in range(12)])
    report = lint_suite(root)
    assert not report.failed, [str(f) for f in report.findings]
    app = report.apps[0]
    assert app.counts == {"good": 12, "bad": 12}
    for holdout in ("case", "scenario"):
        for features in ("comment-words", "code-length"):
            accuracy = app.accuracy(features, holdout)
            assert accuracy is not None and accuracy <= 0.60
    assert main(root) == 0
    out = capsys.readouterr().out
    assert "OK: no problems" in out and "comment-words" in out and "median" in out


def test_shorter_bad_cases_fail_on_length(tmp_path: Path) -> None:
    report = lint_suite(write_suite(tmp_path, short_bad_pairs(12)))
    assert checks(report) == {"classifier"}
    app = report.apps[0]
    assert app.accuracy("code-length") == 1.0
    assert app.accuracy("code-length", "scenario") == 1.0
    assert (app.accuracy("comment-words") or 0.0) <= 0.60
    good, bad = app.lengths
    assert (good.label, bad.label) == ("good", "bad") and bad.mean < good.mean
    assert any("code-length" in f.message for f in report.findings)


def test_label_words_in_comments_fail(tmp_path: Path) -> None:
    pairs = [pair_code(i) for i in range(12)]
    pairs[3] = (pairs[3][0] + " -- safe: scoped to the org", pairs[3][1])
    pairs[5] = (pairs[5][0], "/* TODO ensure owner */ " + pairs[5][1])
    report = lint_suite(write_suite(tmp_path, pairs))
    flagged = {(str(f.path), f.line) for f in report.findings if f.check == "comment"}
    assert flagged == {("shop/s03-01-good.md", 1), ("shop/s05-02-bad.md", 1)}
    messages = " ".join(f.message for f in report.findings if f.check == "comment")
    assert "safe" in messages and "ensure" in messages and "todo" in messages
    assert report.failed


def test_neutral_comments_only_in_good_cases_fail_comment_classifier(tmp_path: Path) -> None:
    pairs = [(g + "\n-- scope by org", b) for g, b in (pair_code(i) for i in range(12))]
    report = lint_suite(write_suite(tmp_path, pairs))
    assert not any(f.check == "comment" for f in report.findings)
    assert report.apps[0].accuracy("comment-words") == 1.0
    assert report.apps[0].accuracy("comment-words", "scenario") == 1.0
    assert checks(report) == {"classifier"}


def test_duplicates_imbalance_and_parse_errors_are_reported(tmp_path: Path) -> None:
    pairs = [pair_code(i) for i in range(12)]
    good0, _ = pairs[0]
    extra = {
        "dup-01-good.md": case_text("  " + good0.replace(" ", "\n  ", 2), "good"),
        "dup-02-bad.md": case_text(good0 + "\n-- same query", "bad"),
        "broken-01-bad.md": "# Description\nno code here\n# Expected\nbad\n",
        "mislabelled-01-good.md": case_text(pair_code(20)[1], "bad"),
    }
    report = lint_suite(write_suite(tmp_path, pairs, extra=extra))
    by_check = {f.check: f for f in report.findings if f.fails}
    assert set(by_check) == {"duplicate", "balance", "parse", "name"}
    dup = by_check["duplicate"].message
    assert "different labels" in dup and "apart from comments" in dup
    assert all(n in dup for n in ("s00-01-good.md", "dup-01-good.md", "dup-02-bad.md"))
    assert by_check["balance"].message == "13 good vs 14 bad cases"
    assert str(by_check["parse"].path) == "shop/broken-01-bad.md"
    assert "'# Code'" in by_check["parse"].message
    assert "named good" in by_check["name"].message


def test_broken_spec_is_reported_and_other_apps_still_linted(tmp_path: Path) -> None:
    write_suite(tmp_path, [pair_code(i) for i in range(4)], app="a")
    write_suite(tmp_path, [pair_code(i + 4) for i in range(4)], app="b")
    (tmp_path / "b" / "SPEC.md").write_text("# Schema\nno prompt\n")
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "x-01-good.md").write_text(case_text("SELECT 1;", "good"))
    report = lint_suite(tmp_path)
    assert [a.app for a in report.apps] == ["a"]
    parse = sorted(str(f.path) for f in report.findings if f.check == "parse")
    assert parse == [str(tmp_path / "b" / "SPEC.md"), str(tmp_path / "loose")]


def test_cli_exit_code(tmp_path: Path) -> None:
    root = write_suite(tmp_path, short_bad_pairs(6))
    run = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--lint", "--cases", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAIL" in run.stdout and "code-length" in run.stdout


@pytest.mark.parametrize(
    ("code", "lang", "expected"),
    [
        ("SELECT '--x', \"a#b\" FROM t -- real\n/* two\nlines */", "sql", ["-- real", "/* two"]),
        ("SELECT data #>> '{a}' FROM t;\n# mysql comment", "sql", ["# mysql comment"]),
        ("SELECT $$ -- body $$ FROM t; -- tail", "sql", ["-- tail"]),
        ("x = '# not' + \"#no\"  # yes", "python", ["# yes"]),
        ('def f():\n    """Doc words."""\n    return 1', "python", ['"""Doc words."""']),
        ('q = text("""\n  SELECT * FROM t -- in sql\n""")', "python", ["-- in sql"]),
        ('s = "http://x" // c\n/* b */', "c", ["// c", "/* b */"]),
        ('echo "#x" ${#a} # real', "shell", ["# real"]),
    ],
)
def test_find_comments(code: str, lang: str, expected: list[str]) -> None:
    found = [c.text.split("\n")[0] for c in find_comments(code, lang)]
    assert found == expected


def test_classifiers_score_held_out_cases_only() -> None:
    # Every case has a unique length: a model scored on its training data would look perfect.
    rng = random.Random(7)
    lengths = rng.sample(range(100, 1000), 40)
    labels = [rng.choice(["good", "bad"]) for _ in lengths]
    labels[:4] = ["good", "good", "bad", "bad"]
    assert length_classifier_accuracy(lengths, labels) < 0.75
    words = [[f"w{i}"] for i in range(40)]
    assert comment_classifier_accuracy(words, labels) == 0.5
    separable = [n if y == "bad" else n + 1000 for n, y in zip(lengths, labels, strict=True)]
    assert length_classifier_accuracy(separable, labels) == 1.0


def test_cases_without_verification_data_are_warned_about(tmp_path: Path) -> None:
    root = write_suite(tmp_path, [pair_code(i) for i in range(3)])
    verify = root / "shop" / "verify"
    verify.mkdir()
    (verify / "fixtures.sql").write_text("CREATE TABLE orders_00 (id int);\n")
    (verify / "s00.md").write_text('# Parameters\n{"org_id": 1, "id": 1}\n')
    (verify / "s01.md").write_text("# Parameters\nnone\n")
    report = lint_suite(root)
    warnings = sorted(str(f) for f in report.findings if f.check == "verify")
    assert not report.failed  # warnings only
    assert len(warnings) == 3, warnings
    assert "s01.md: '# Parameters' has no JSON object lines" in warnings[0]
    assert "no verification data for scenario s01 (verify/s01.md)" in warnings[1]
    assert "no verification data for scenario s02 (verify/s02.md)" in warnings[2]


def test_bundled_suite_has_verification_data_for_every_scenario() -> None:
    from secbench_tui.config import bundled_cases_dir

    report = lint_suite(bundled_cases_dir())
    assert [str(f) for f in report.findings if f.check == "verify"] == []


def test_comment_lines_and_line_starts_in_a_large_case() -> None:
    """Line numbers, `#` at a line's start and docstrings, read in one pass over the text."""
    block = (
        "def f():\n\n\n"
        '    """Doc."""\n'
        '    q = "SELECT 1 # not at a line start -- sql comment"\n'
        '    r = """\n# mysql comment\nSELECT 2"""\n'
        "    return q  # trailing\n"
    )
    code = block * 2000
    comments = find_comments(code, "python")
    assert len(comments) == 2000 * 4
    last = comments[-4:]
    lines_per_block = block.count("\n")
    first_line = 1999 * lines_per_block + 1
    assert [c.text for c in last] == [
        '"""Doc."""',
        "-- sql comment",
        "# mysql comment",
        "# trailing",
    ]
    assert [c.line for c in last] == [
        first_line + 3,
        first_line + 4,
        first_line + 6,
        first_line + 8,
    ]
    sql = "SELECT 1; # not a comment\n  # a comment\n" * 1000
    assert [c.line for c in find_comments(sql, "sql")] == list(range(2, 2001, 2))


def _lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--lint", "--cases", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_missing_folder_is_a_usage_error_as_for_a_run(tmp_path: Path) -> None:
    run = _lint(tmp_path / "nope")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "no such folder" in run.stderr and str(tmp_path / "nope") in run.stderr


def test_a_vuldetectbench_folder_is_named_as_one(tmp_path: Path) -> None:
    (tmp_path / "task1_code.jsonl").write_text("{}\n", encoding="utf-8")
    run = _lint(tmp_path)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "VulDetectBench" in run.stderr and "no app folders" not in run.stdout + run.stderr


def test_apps_limits_the_lint_to_the_named_apps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(tmp_path, [pair_code(i) for i in range(12)], app="clean")
    write_suite(tmp_path, short_bad_pairs(12), app="leaky")
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "x-01-good.md").write_text(case_text("SELECT 1;", "good"))
    assert lint_suite(tmp_path).failed
    only_clean = lint_suite(tmp_path, only=["clean"])
    assert [a.app for a in only_clean.apps] == ["clean"]
    assert not only_clean.failed, [str(f) for f in only_clean.findings]
    assert main(tmp_path, ["clean"]) == 0
    assert main(tmp_path, ["leaky"]) == 1
    capsys.readouterr()
    assert main(tmp_path, ["clean", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "--apps: no app named nosuch" in err and "clean, leaky" in err


def test_apps_reaches_the_lint_from_the_command_line(tmp_path: Path) -> None:
    write_suite(tmp_path, [pair_code(i) for i in range(12)], app="clean")
    write_suite(tmp_path, short_bad_pairs(12), app="leaky")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "secbench_tui",
            "--lint",
            "--cases",
            str(tmp_path),
            "--apps",
            "clean",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "leaky" not in run.stdout


def test_also_acceptable_is_capped_and_never_repeats_the_gold_rule(tmp_path: Path) -> None:
    root = write_suite(tmp_path, [pair_code(i) for i in range(12)])
    folder = root / "shop"
    (folder / "SPEC.md").write_text(SPEC + "\n".join(f"{n}. Rule {n}." for n in range(1, 6)))
    sections = {
        "s00-02-bad.md": "# Rule\n1\n\n# Also acceptable\n2, 3\n\n",  # the cap: fine
        "s01-02-bad.md": "# Rule\n1\n\n# Also acceptable\n2, 3, 4\n\n",  # one too many
        "s02-02-bad.md": "# Rule\n1\n\n# Also acceptable\n1, 2\n\n",  # the gold rule again
    }
    for path in folder.glob("*-bad.md"):
        text = path.read_text().replace(
            "# Expected", sections.get(path.name, "# Rule\n1\n\n") + "# Expected"
        )
        path.write_text(text)
    report = lint_suite(root)
    failed = {str(f.path): f.message for f in report.findings if f.check == "rule" and f.fails}
    assert set(failed) == {"shop/s01-02-bad.md", "shop/s02-02-bad.md"}, failed
    assert "lists 3 rules, more than 2" in failed["shop/s01-02-bad.md"]
    assert "lists rule 1, the case's '# Rule'" in failed["shop/s02-02-bad.md"]
    assert main(root) == 1


def test_cases_in_no_pair_are_listed_whatever_their_digits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = [pair_code(i) for i in range(12)]
    root = write_suite(tmp_path, pairs)
    folder = root / "shop"
    for path in sorted(folder.glob("s*-0?-*.md")):  # three digits: still pairs
        path.rename(folder / path.name.replace("-01-", "-001-").replace("-02-", "-002-"))
    good, bad = pair_code(30)
    (folder / "lonely-001-good.md").write_text(case_text(good, "good"))
    (folder / "unnamed-bad.md").write_text(case_text(bad, "bad"))
    report = lint_suite(root)
    unpaired = {str(f.path): f for f in report.findings if f.check == "pair"}
    assert set(unpaired) == {"shop/lonely-001-good.md", "shop/unnamed-bad.md"}
    assert "scenario 'lonely' has no bad case" in unpaired["shop/lonely-001-good.md"].message
    assert not any(f.fails for f in unpaired.values())  # listed, not failed
    main(root)
    assert "belongs to no pair" in capsys.readouterr().out


def test_the_run_and_the_lint_find_the_same_leak(tmp_path: Path) -> None:
    from secbench_tui.core.lint.leaks import suite_leaks
    from secbench_tui.core.lint.report import leak_record, read_leak_record

    pairs = [(g, b + "\n-- SAFE: reviewed") for g, b in (pair_code(i) for i in range(12))]
    root = write_suite(tmp_path, pairs)
    check, guesses = suite_leaks(root)
    lint = [f.message for f in lint_suite(root).findings if f.check == "classifier"]
    assert check.leaky and len(check.cues) == len(lint)  # the comment made them longer too
    for cue in check.cues:
        shown = f"{cue.features} classifier (held out by {cue.holdout}) reaches"
        assert any(f"{shown} {cue.balanced_accuracy:.2f}" in m for m in lint), (cue, lint)
    strongest = check.strongest()
    assert strongest is not None and strongest.features == "comment-words"
    assert strongest.balanced_accuracy == 1.0
    assert guesses["shop/s03-02-bad.md"] == 1.0 and guesses["shop/s03-01-good.md"] == 0.0
    assert len(guesses) == 24
    assert read_leak_record(leak_record(check, guesses)) == (check, guesses)
    assert read_leak_record({"threshold": "high"}) == (None, None)
    clean, _ = suite_leaks(write_suite(tmp_path / "clean", [pair_code(i) for i in range(12)]))
    assert not clean.leaky and "guesses" not in leak_record(clean, {"x": 1.0})
