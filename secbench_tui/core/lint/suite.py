"""Suite lint: can a case's label be read from its surface instead of its meaning?

A benchmark whose bad cases are all shorter, or whose comments say "tenant filter" only in
the good ones, measures pattern matching, not security review. `lint_suite` checks a markdown
suite for that and for plain mistakes (files that do not parse, duplicate code, unequal
classes, file names that disagree with `# Expected`) and returns structured findings;
`main` prints them for `secbench-tui --lint` and returns the exit code.

Two trivial classifiers are scored per app with leave-one-out evaluation (fit on n-1 cases,
predict the held-out one; never scored on training data): multinomial naive Bayes over the
words of the code's comments, and a single threshold on code length. When a classifier cannot
decide (tied scores, tied best rules), the held-out case counts as half right: the expected
score of breaking the tie with a coin.
"""

from __future__ import annotations

import bisect
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from secbench_tui.core.suites.gold import CaseGold, spec_rules
from secbench_tui.core.suites.markdown import (
    SuiteError,
    discover_apps,
    read_app_prompt,
    read_case,
    split_sections,
)

MAX_TRIVIAL_ACCURACY = 0.60
"""A trivial classifier with a higher leave-one-out balanced accuracy fails the lint."""

LABELS = ("good", "bad")

# Words that state or hint a verdict. "check-in" and "check_out" stay single tokens, so
# domain words are not flagged; a bare "check" is, since "-- check the tenant" is a hint.
LABEL_WORDS = frozenset(
    """
    safe safely safer safety unsafe unsafely secure securely security insecure insecurely
    vulnerable vulnerability vulnerabilities vuln vulns compliant compliance noncompliant
    non-compliant comply complies violation violations violate violates violated violating
    exploit exploits exploitable exploited leak leaks leaked leaking leakage bug bugs buggy
    fix fixes fixed fixme todo xxx hack hacky correct correctly incorrect incorrectly wrong
    wrongly bad badly good should shouldn't must mustn't ensure ensures ensured ensuring check
    checks checked checking verify verifies verified oops forgot forgotten missing
    intentional intentionally deliberate deliberately careful carefully beware danger dangerous
    risk risky attack attacker attackers injection injectable inject injected sanitize
    sanitized sanitise sanitised unsanitized idor cve cwe owasp guard guards guarded enforce
    enforces enforced prevent prevents prevented protect protects protected unauthorized
    unauthorised bypass bypasses bypassed flaw flawed flaws broken properly proper improper
    improperly
    """.split()
)
_RULE_REFERENCE = re.compile(r"\brules?\s*#?\s*\d+", re.IGNORECASE)
_WORD = re.compile(r"[a-z][a-z0-9]*(?:['_-][a-z0-9]+)*")
_FENCE_INFO = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[ \t]*([^\s`]*)")
_CASE_NAME = re.compile(r"^(?P<scenario>.+)-(?P<nn>\d+)-(?P<label>good|bad)\.md$")
_SQLISH = re.compile(r"\b(select|insert|update|delete|with)\b", re.IGNORECASE)
# `[^\S\n]*`, not `\s*`: a `\s*` run across thousands of blank lines, retried from each of
# them, made this search quadratic.
_PYTHON_LINE = re.compile(r"^[^\S\n]*(def|class|import|from)\s", re.MULTILINE)
# The characters a comment or a string can start with, per language: the rest is skipped.
_MAY_START = {
    "sql": re.compile(r"[-/#'\"$]"),
    "python": re.compile(r"[#'\"]"),
    "shell": re.compile(r"[#'\"`]"),
    "c": re.compile(r"[/'\"`]"),
}
_DOLLAR_TAG = re.compile(r"\$[A-Za-z_]*\$")
_LINE_INDENT = re.compile(r"^[^\S\n]*", re.MULTILINE)

# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Finding:
    """One thing wrong with the suite. `fails` findings make the lint exit non-zero."""

    check: str  # parse | duplicate | balance | name | comment | classifier | description | verify
    # | equivalent (a mutant the suite declares no real flaw) | rule (# Rule of a case)
    message: str
    path: Path | None = None
    app: str | None = None
    line: int | None = None
    fails: bool = True

    def __str__(self) -> str:
        where = str(self.path) if self.path else (self.app or "")
        if self.path and self.line:
            where += f":{self.line}"
        return f"{self.check:<11} {where}: {self.message}" if where else self.message


@dataclass(frozen=True)
class LintCase:
    app: str
    path: Path
    expected: str
    code: str
    language: str
    scenario: str
    gold: CaseGold = CaseGold()


@dataclass(frozen=True)
class Comment:
    start: int
    end: int
    line: int
    text: str


@dataclass(frozen=True)
class LengthStats:
    label: str
    count: int
    mean: float
    median: float


@dataclass(frozen=True)
class ClassifierScore:
    """A trivial classifier's held-out balanced accuracy on one app.

    features: "comment-words" or "code-length"; holdout: "case" (leave-one-out) or
    "scenario" (leave-one-scenario-out, which removes the bias leave-one-out has against
    the held-out case's class when good and bad variants mirror each other).
    """

    features: str
    holdout: str
    accuracy: float


@dataclass(frozen=True)
class AppReport:
    app: str
    counts: dict[str, int]
    lengths: tuple[LengthStats, ...]
    classifiers: tuple[ClassifierScore, ...]

    def accuracy(self, features: str, holdout: str = "case") -> float | None:
        for score in self.classifiers:
            if score.features == features and score.holdout == holdout:
                return score.accuracy
        return None


@dataclass
class LintReport:
    root: Path
    apps: list[AppReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    cases: int = 0

    @property
    def failed(self) -> bool:
        return any(f.fails for f in self.findings)


# --------------------------------------------------------------------------- comments


def _language(fence_info: str, code: str) -> str:
    """One of sql, python, shell, c: the comment syntax to read the code with."""
    tag = fence_info.lower()
    if tag in ("sql", "psql", "postgres", "postgresql", "pgsql", "plpgsql", "mysql", "sqlite"):
        return "sql"
    if tag in ("python", "py", "python3"):
        return "python"
    if tag in ("sh", "bash", "shell", "zsh", "console"):
        return "shell"
    if tag:
        return "c"
    if _PYTHON_LINE.search(code):
        return "python"
    if _SQLISH.search(code) and not re.search(r"[{};]\s*$", code.partition("\n")[0]):
        return "sql"
    return "c"


class _Lines:
    """Line numbers and indentation of one text, computed once: every lookup is O(log n).

    Counting newlines from the start for each comment made a large case quadratic.
    """

    def __init__(self, code: str) -> None:
        # where each line's first non-blank character (or its end) is, in line order
        self.first_text = [m.end() for m in _LINE_INDENT.finditer(code)]
        self.starts = [m.start() for m in _LINE_INDENT.finditer(code)]

    def line_of(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)

    def opens_line(self, pos: int) -> bool:
        """Only blanks stand between the start of pos's line and pos."""
        return self.first_text[self.line_of(pos) - 1] == pos


def _string_end(code: str, i: int, quote: str, escapes: bool, doubled: bool) -> int:
    """Index just past the string whose opening `quote` starts at i (or len(code))."""
    j = i + len(quote)
    n = len(code)
    while j < n:
        if escapes and code[j] == "\\":
            j += 2
            continue
        if code.startswith(quote, j):
            if doubled and code.startswith(quote * 2, j):
                j += 2 * len(quote)
                continue
            return j + len(quote)
        if len(quote) == 1 and quote in "'\"" and code[j] == "\n" and escapes:
            return j  # an unterminated one-line string ends at the line's end
        j += 1
    return n


def _is_docstring(code: str, i: int, lines: _Lines) -> bool:
    """A Python triple-quoted string that opens a line right after a `...:` line."""
    if not lines.opens_line(i):
        return False
    j = i - 1  # back over blanks only: stops at the end of what came before, so linear
    while j >= 0 and code[j].isspace():
        j -= 1
    return j < 0 or code[j] == ":"


def find_comments(code: str, language: str) -> list[Comment]:
    """The comments a reader of `code` sees, in order; strings are skipped, not misread.

    SQL: `--`, `/* */` and MySQL's `#` at the start of a line (a `#` elsewhere is an operator).
    Python: `#` and docstrings. Shell: `#` at the start of a word. Others: `//` and `/* */`.
    SQL comments inside SQL-looking string literals of other languages count too: the model
    reads them all the same.
    """
    return _find_comments(code, language, _Lines(code), 0)


def _find_comments(code: str, language: str, lines: _Lines, offset: int) -> list[Comment]:
    """The comments of `code`, which starts at `offset` of the text `lines` describes."""
    comments: list[Comment] = []
    first_line = lines.line_of(offset)
    head = _LINE_INDENT.match(code)
    text_starts = head.end() if head else 0  # where text begins on `code`'s own first line

    def opens_line(i: int) -> bool:  # `code` may start mid-line: inside a string literal
        if lines.line_of(offset + i) == first_line:
            return i == text_starts
        return lines.opens_line(offset + i)

    n = len(code)
    i = 0
    skip_to = _MAY_START.get(language, _MAY_START["c"])
    while i < n:
        found = skip_to.search(code, i)  # straight to the next comment or string, if any
        if found is None:
            break
        i = found.start()
        ch = code[i]
        two = code[i : i + 2]
        line_comment = (
            (language == "sql" and two == "--")
            or (language == "c" and two == "//")
            or (language == "python" and ch == "#")
            or (language == "shell" and ch == "#" and (i == 0 or code[i - 1].isspace()))
            or (language == "sql" and ch == "#" and opens_line(i))
        )
        if line_comment:
            end = code.find("\n", i)
            end = n if end < 0 else end
            comments.append(Comment(i, end, lines.line_of(offset + i), code[i:end]))
            i = end
            continue
        if two == "/*" and language in ("sql", "c"):
            end = code.find("*/", i + 2)
            end = n if end < 0 else end + 2
            comments.append(Comment(i, end, lines.line_of(offset + i), code[i:end]))
            i = end
            continue
        end = _skip_string(code, i, language, comments, lines, offset)
        i = end if end > i else i + 1
    return comments


def _skip_string(
    code: str, i: int, language: str, comments: list[Comment], lines: _Lines, offset: int
) -> int:
    """Past a string literal starting at i (recording comments it holds), or i if none."""
    ch = code[i]
    if language == "sql":
        if ch in "'\"":
            return _string_end(code, i, ch, escapes=False, doubled=True)
        dollar = _DOLLAR_TAG.match(code, i) if ch == "$" else None
        if dollar:
            tag = dollar.group(0)
            end = code.find(tag, i + len(tag))
            return len(code) if end < 0 else end + len(tag)
        return i
    if language == "python" and code.startswith(('"""', "'''"), i):
        quote = code[i : i + 3]
        end = _string_end(code, i, quote, escapes=True, doubled=False)
        if _is_docstring(code, i, lines):
            comments.append(Comment(i, end, lines.line_of(offset + i), code[i:end]))
        else:
            _embedded_sql(code, i + 3, end - 3, comments, lines, offset)
        return end
    if ch in "'\"" or (ch == "`" and language in ("c", "shell")):
        escapes = not (language == "shell" and ch == "'")
        end = _string_end(code, i, ch, escapes=escapes, doubled=False)
        _embedded_sql(code, i + 1, end - 1, comments, lines, offset)
        return end
    return i


def _embedded_sql(
    code: str, start: int, end: int, comments: list[Comment], lines: _Lines, offset: int
) -> None:
    body = code[start:end]
    if not _SQLISH.search(body):
        return
    for inner in _find_comments(body, "sql", lines, offset + start):
        s, e = start + inner.start, start + inner.end
        comments.append(Comment(s, e, inner.line, inner.text))


def comment_words(comments: Iterable[Comment]) -> list[str]:
    return [w for c in comments for w in _WORD.findall(c.text.lower())]


def strip_comments(code: str, comments: Sequence[Comment]) -> str:
    parts, pos = [], 0
    for c in sorted(comments, key=lambda c: c.start):
        if c.start >= pos:
            parts.append(code[pos : c.start])
            pos = c.end
    parts.append(code[pos:])
    return "".join(parts)


def normalise(code: str) -> str:
    return " ".join(code.split())


# --------------------------------------------------------------------------- classifiers

NO_COMMENT = "<no comment>"


def _nb_score(held_out: Counter[str], train: Sequence[tuple[Counter[str], str]]) -> float:
    """1, 0 or 0.5 (a tie): multinomial naive Bayes with equal priors, Laplace smoothing.

    Equal priors keep the leave-one-out fold's one-case imbalance from deciding; words the
    training cases never used are ignored.
    """
    per_class: dict[str, Counter[str]] = {label: Counter() for label in LABELS}
    for words, label in train:
        per_class[label].update(words)
    vocab = set(per_class["good"]) | set(per_class["bad"])
    log_like = {}
    for label, counts in per_class.items():
        total = sum(counts.values()) + len(vocab)
        log_like[label] = sum(
            k * math.log((counts[w] + 1) / total) for w, k in held_out.items() if w in vocab
        )
    diff = log_like["bad"] - log_like["good"]
    if abs(diff) < 1e-9:
        return 0.5
    return 1.0 if diff > 0 else 0.0  # probability of predicting "bad"


def _balanced(scores: Sequence[float], labels: Sequence[str]) -> float:
    """Balanced accuracy from per-case chances of a right answer."""
    recalls = []
    for label in LABELS:
        mine = [s for s, y in zip(scores, labels, strict=True) if y == label]
        recalls.append(sum(mine) / len(mine))
    return sum(recalls) / len(recalls)


def _classifiable(labels: Sequence[str]) -> bool:
    return all(labels.count(label) >= 2 for label in LABELS)


def _folds(n: int, groups: Sequence[str] | None) -> list[list[int]]:
    """For each case, the indices to train on: all but itself, or all but its group."""
    if groups is None:
        return [[j for j in range(n) if j != i] for i in range(n)]
    return [[j for j in range(n) if groups[j] != groups[i]] for i in range(n)]


def comment_classifier_accuracy(
    words: Sequence[Sequence[str]], labels: Sequence[str], groups: Sequence[str] | None = None
) -> float:
    """Held-out balanced accuracy of naive Bayes over each case's comment words.

    Leave-one-out by default; with `groups` (scenarios), each case is predicted by a model
    fitted without any case of its group. A case without comments has the single word
    NO_COMMENT, so "only the good cases have comments" is learnt as readily as any word.
    """
    bags = [Counter(w) if w else Counter([NO_COMMENT]) for w in words]
    scores = []
    for i, train_ids in enumerate(_folds(len(bags), groups)):
        label = labels[i]
        train = [(bags[j], labels[j]) for j in train_ids]
        p_bad = _nb_score(bags[i], train) if _has_both(train) else 0.5
        scores.append(p_bad if label == "bad" else 1 - p_bad)
    return _balanced(scores, labels)


def _length_rules(train: Sequence[tuple[int, str]]) -> list[tuple[float, bool]]:
    """The best rules (threshold t, bad_if_shorter) on the training cases, ties kept.

    Thresholds lie halfway between neighbouring training lengths, so a held-out case just
    past the longest training case of its class is still on its class's side.

    bad_if_shorter: bad when length <= t; otherwise bad when length > t.
    """
    bad = sorted(n for n, y in train if y == "bad")
    good = sorted(n for n, y in train if y == "good")
    values = sorted({n for n, _ in train})
    cuts = [values[0] - 0.5] + [(x + y) / 2 for x, y in zip(values, values[1:], strict=False)]
    best, rules = -1.0, []
    for t in cuts + [values[-1] + 0.5]:
        bad_le = _count_le(bad, t) / len(bad)
        good_le = _count_le(good, t) / len(good)
        shorter = (bad_le + (1 - good_le)) / 2
        for rule, score in (((t, True), shorter), ((t, False), 1 - shorter)):
            if score > best + 1e-12:
                best, rules = score, [rule]
            elif abs(score - best) <= 1e-12:
                rules.append(rule)
    return rules


def _count_le(sorted_values: Sequence[int], t: float) -> int:
    lo, hi = 0, len(sorted_values)
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_values[mid] <= t:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _has_both(train: Sequence[tuple[object, str]]) -> bool:
    return {y for _, y in train} == set(LABELS)


def length_classifier_accuracy(
    lengths: Sequence[int], labels: Sequence[str], groups: Sequence[str] | None = None
) -> float:
    """Held-out balanced accuracy of one threshold on code length (direction learnt).

    Leave-one-out by default, leave-one-group-out with `groups`.
    """
    pairs = list(zip(lengths, labels, strict=True))
    scores = []
    for i, train_ids in enumerate(_folds(len(pairs), groups)):
        length, label = pairs[i]
        train = [pairs[j] for j in train_ids]
        if not _has_both(train):
            scores.append(0.5)
            continue
        rules = _length_rules(train)
        says_bad = [(length <= t) == shorter for t, shorter in rules]
        p_bad = sum(says_bad) / len(says_bad)
        scores.append(p_bad if label == "bad" else 1 - p_bad)
    return _balanced(scores, labels)


# --------------------------------------------------------------------------- checks


def _load_apps(root: Path, report: LintReport) -> list[tuple[str, tuple[Path, ...]]]:
    try:
        return [(a.name, a.case_files) for a in discover_apps(root)]
    except SuiteError as exc:
        if not root.is_dir():
            report.findings.append(Finding("parse", str(exc)))
            return []
    apps = []  # one app's SPEC.md is broken: report each, lint the others
    for folder in sorted(p for p in root.iterdir() if (p / "SPEC.md").is_file()):
        try:
            read_app_prompt(folder / "SPEC.md")
        except SuiteError as exc:
            report.findings.append(Finding("parse", str(exc), folder / "SPEC.md", folder.name))
            continue
        files = tuple(sorted(p for p in folder.glob("*.md") if p.name != "SPEC.md"))
        apps.append((folder.name, files))
    if not apps and not report.findings:
        report.findings.append(Finding("parse", f"{root}: no app folders with a SPEC.md found"))
    return apps


def _app_rules(folder: Path) -> tuple[int, ...]:
    try:
        return spec_rules(read_app_prompt(folder / "SPEC.md"))
    except SuiteError:
        return ()


def _orphan_folders(root: Path) -> list[Finding]:
    if not root.is_dir():
        return []
    return [
        Finding("parse", "case files but no SPEC.md; add one with a '# Prompt'", folder)
        for folder in sorted(root.iterdir())
        if folder.is_dir() and not (folder / "SPEC.md").exists() and any(folder.glob("*.md"))
    ]


def _read_case(app: str, path: Path, root: Path, report: LintReport) -> LintCase | None:
    shown = path.relative_to(root) if path.is_relative_to(root) else path
    read = read_case(path)
    if isinstance(read, str):
        report.findings.append(Finding("parse", read, shown, app))
        return None
    code, expected, description = read.code, read.expected, read.description
    if read.gold_problem is not None:
        report.findings.append(Finding("rule", read.gold_problem, shown, app))
    name = _CASE_NAME.match(path.name)
    if name is None:
        report.findings.append(
            Finding("name", "not named <scenario>-NN-<good|bad>.md", shown, app, fails=False)
        )
    elif name.group("label") != expected:
        message = f"named {name.group('label')} but '# Expected' says {expected}"
        report.findings.append(Finding("name", message, shown, app))
    if not description:
        message = "no '# Description'; name the rule the case tests"
        report.findings.append(Finding("description", message, shown, app, fails=False))
    sections = split_sections(path.read_text(encoding="utf-8"))
    fence = _FENCE_INFO.match(sections["code"].lstrip("\n").split("\n", 1)[0])
    language = _language(fence.group(1) if fence else "", code)
    scenario = name.group("scenario") if name else path.stem
    return LintCase(app, shown, expected, code, language, scenario, read.gold)


def _rule_findings(cases: Sequence[LintCase], rules: Sequence[int]) -> list[Finding]:
    """A bad case must name the SPEC rule it breaks, by a number of the SPEC's numbered list;
    a good case breaks none. In an app where no case names a rule (a suite written before
    rules, such as the original security-bench's) the missing rules are a warning: its reason
    scores are shown as not available."""
    findings = []
    any_rule = any(c.gold.rule is not None for c in cases)
    known = ", ".join(str(n) for n in rules) or "none"
    for case in cases:
        gold = case.gold
        if case.expected == "good" and gold.present:
            message = (
                "a good case breaks no rule: remove its '# Rule', '# Also acceptable', '# Lines'"
            )
            findings.append(Finding("rule", message, case.path, case.app))
            continue
        if case.expected != "bad":
            continue
        if gold.rule is None:
            message = "bad case without '# Rule': add one naming the SPEC rule it breaks"
            if not any_rule:
                message += " (no case of this app names one: reason scores not available)"
            findings.append(Finding("rule", message, case.path, case.app, fails=any_rule))
        for number in (gold.rule, *gold.also):
            if number is not None and number not in rules:
                message = f"rule {number} is not in the SPEC's numbered list (rules: {known})"
                findings.append(Finding("rule", message, case.path, case.app))
    return findings


def _comment_findings(case: LintCase, comments: Sequence[Comment]) -> list[Finding]:
    findings = []
    for comment in comments:
        words = sorted({w for w in _WORD.findall(comment.text.lower()) if w in LABEL_WORDS})
        if _RULE_REFERENCE.search(comment.text):
            words.append("rule N")
        if words:
            text = normalise(comment.text)
            text = text if len(text) <= 70 else text[:67] + "..."
            message = f"comment carries label words ({', '.join(words)}): {text}"
            findings.append(Finding("comment", message, case.path, case.app, comment.line))
    return findings


def _duplicate_findings(cases: Sequence[LintCase], stripped: Sequence[str]) -> list[Finding]:
    groups: dict[str, list[int]] = {}
    for i, code in enumerate(stripped):
        groups.setdefault(normalise(code), []).append(i)
    findings = []
    for members in groups.values():
        if len(members) < 2:
            continue
        names = ", ".join(str(cases[i].path) for i in members)
        labels = {cases[i].expected for i in members}
        exact = len({normalise(cases[i].code) for i in members}) == 1
        kind = "the same code" if exact else "the same code apart from comments"
        clash = " with different labels" if len(labels) > 1 else ""
        findings.append(Finding("duplicate", f"{kind}{clash}: {names}", app=cases[members[0]].app))
    return findings


def _app_report(app: str, cases: Sequence[LintCase], words: Sequence[list[str]]) -> AppReport:
    labels = [c.expected for c in cases]
    lengths = [len(normalise(c.code)) for c in cases]
    stats = []
    for label in LABELS:
        mine = [n for n, y in zip(lengths, labels, strict=True) if y == label]
        if mine:
            mean, median = statistics.mean(mine), statistics.median(mine)
            stats.append(LengthStats(label, len(mine), mean, median))
    scores = []
    if _classifiable(labels):
        scenarios = [f"{c.app}/{c.scenario}" for c in cases]
        for holdout, groups in (("case", None), ("scenario", scenarios)):
            comment = comment_classifier_accuracy(words, labels, groups)
            length = length_classifier_accuracy(lengths, labels, groups)
            scores.append(ClassifierScore("comment-words", holdout, comment))
            scores.append(ClassifierScore("code-length", holdout, length))
    counts = {label: labels.count(label) for label in LABELS}
    return AppReport(app, counts, tuple(stats), tuple(scores))


def _app_findings(app: AppReport, limit: float) -> list[Finding]:
    findings = []
    good, bad = app.counts["good"], app.counts["bad"]
    if good != bad:
        findings.append(Finding("balance", f"{good} good vs {bad} bad cases", app=app.app))
    if not app.classifiers:
        message = (
            "too few cases to score trivial classifiers: each class needs 2 cases"
            " (add good and bad cases until there are at least 2 of each)"
        )
        findings.append(Finding("classifier", message, app=app.app))
    for score in app.classifiers:
        if score.accuracy > limit:
            message = (
                f"{score.features} classifier (held out by {score.holdout}) reaches "
                f"{score.accuracy:.2f} balanced accuracy (limit {limit:.2f})"
            )
            findings.append(Finding("classifier", message, app=app.app))
    return findings


def _verification_findings(app: str, folder: Path, cases: Sequence[LintCase]) -> list[Finding]:
    """Warnings for scenarios whose labels `--verify` cannot prove (no data to run them on)."""
    from secbench_tui.core.verify.data import FIXTURES, VERIFY_DIR, load_app_data

    data, problems = load_app_data(app, folder)
    findings = [Finding("verify", str(p), app=app, fails=False) for p in problems]
    scenarios = sorted({c.scenario for c in cases})
    if data.fixtures is None and scenarios:
        message = (
            f"no {VERIFY_DIR}/{FIXTURES} (schema and seed rows): --verify cannot run its cases"
        )
        findings.append(Finding("verify", message, app=app, fails=False))
    for name, declared in sorted(data.scenarios.items()):
        for eq in declared.equivalents:
            message = f"equivalent mutant declared in {name}: {eq.key}: {eq.reason}"
            findings.append(Finding("equivalent", message, app=app, fails=False))
    for scenario in scenarios:
        if scenario not in data.scenarios:
            message = (
                f"no verification data for scenario {scenario} ({VERIFY_DIR}/{scenario}.md): "
                "--verify reports its cases as not verifiable"
            )
            findings.append(Finding("verify", message, app=app, fails=False))
    return findings


def lint_suite(
    root: Path, limit: float = MAX_TRIVIAL_ACCURACY, only: Sequence[str] | None = None
) -> LintReport:
    """Every check on the markdown suite at `root`; never raises for a bad suite.

    `only` keeps the named apps (as `--apps` does for a run); the caller checks the names.
    Folders without a SPEC.md are reported only when the whole suite is linted.
    """
    report = LintReport(root=root)
    apps = _load_apps(root, report)
    if only:
        apps = [(app, files) for app, files in apps if app in only]
    else:
        report.findings.extend(_orphan_folders(root))
    everything: list[LintCase] = []
    stripped: list[str] = []
    for app, files in apps:
        cases = [c for p in files if (c := _read_case(app, p, root, report)) is not None]
        report.findings.extend(_rule_findings(cases, _app_rules(root / app)))
        report.findings.extend(_verification_findings(app, root / app, cases))
        words = []
        for case in cases:
            comments = find_comments(case.code, case.language)
            report.findings.extend(_comment_findings(case, comments))
            words.append(comment_words(comments))
            stripped.append(strip_comments(case.code, comments))
        everything.extend(cases)
        app_report = _app_report(app, cases, words)
        report.apps.append(app_report)
        report.findings.extend(_app_findings(app_report, limit))
    report.findings.extend(_duplicate_findings(everything, stripped))
    report.cases = len(everything)
    return report


# --------------------------------------------------------------------------- output


def format_report(report: LintReport, limit: float = MAX_TRIVIAL_ACCURACY) -> str:
    lines = [f"lint {report.root}: {len(report.apps)} apps, {report.cases} usable cases", ""]
    for app in report.apps:
        lines.append(f"{app.app}: {app.counts['good']} good, {app.counts['bad']} bad")
        for s in app.lengths:
            lines.append(
                f"  code length {s.label:<4}  mean {s.mean:7.1f}  median {s.median:7.1f}  (chars)"
            )
        lines.append("  trivial classifiers, balanced accuracy  held out by: case  scenario")
        for features in ("comment-words", "code-length"):
            cells = []
            for holdout in ("case", "scenario"):
                value = app.accuracy(features, holdout)
                cells.append("n/a " if value is None else f"{value:.2f}")
            bad = any(s.accuracy > limit for s in app.classifiers if s.features == features)
            verdict = "FAIL" if bad else ("ok" if app.classifiers else "")
            lines.append(f"    {features:<37}{cells[0]:>6}{cells[1]:>10}  {verdict}")
    problems = [f for f in report.findings if f.fails]
    warnings = [f for f in report.findings if not f.fails and f.check != "equivalent"]
    declared = [f for f in report.findings if f.check == "equivalent"]
    titled = (
        ("problems", problems),
        ("warnings", warnings),
        ("equivalent mutants (declared no real flaw, not counted by --verify --mutants)", declared),
    )
    for title, group in titled:
        if group:
            lines += ["", f"{len(group)} {title}:"] + [f"  {f}" for f in group]
    lines += [
        "",
        "Scores below 0.50 mean no signal: holding one case out leaves its class one short.",
        f"{'FAIL: ' + str(len(problems)) + ' problems' if problems else 'OK: no problems'}"
        f" (trivial classifiers must stay at or below {limit:.2f})",
    ]
    return "\n".join(lines)
