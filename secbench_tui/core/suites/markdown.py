"""Markdown suites: one folder per app with a `SPEC.md` and one `.md` file per case.

Real files are untidy, so the reader tolerates CRLF, missing blank lines, a missing trailing
newline and extra sections. A case file that cannot be used is reported as a `SkippedFile`
naming the file and what is wrong; it never stops the loading of the others. So is a file or
app folder that resolves outside the suite folder (a symlink): its content is never sent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from secbench_tui.core.case_names import is_case_file, scenario_of
from secbench_tui.core.models import Case, Message, SuiteKind
from secbench_tui.core.paths import outside_reason
from secbench_tui.core.suites import security_bench
from secbench_tui.core.suites.gold import CaseGold, derived_lines, read_gold, spec_rules
from secbench_tui.core.suites.prompts import build_markdown_prefix

_HEADING = re.compile(r"^#[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$")


class SuiteError(Exception):
    """The suite as a whole cannot be used (missing folder, app without SPEC.md...)."""


@dataclass(frozen=True)
class SkippedFile:
    path: Path
    reason: str

    def __str__(self) -> str:
        return f"skipped {self.path}: {self.reason}"


@dataclass(frozen=True)
class App:
    name: str
    root: Path
    prompt: str
    case_files: tuple[Path, ...]


@dataclass
class MarkdownSuite:
    root: Path
    apps: list[App]
    cases: list[Case] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


def split_sections(text: str) -> dict[str, str]:
    """Top-level `# Heading` sections, keyed by lower-cased heading.

    Headings inside fenced code blocks are ignored, so a `# comment` in Python or shell
    code never starts a section.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    fence: str | None = None
    for line in text.split("\n"):
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not fence_match.group(2):
                fence = None
        elif fence is None:
            heading = _HEADING.match(line)
            if heading:
                key = heading.group(1).strip().lower()
                current = sections.setdefault(key, [])
                continue
        if current is not None:
            current.append(line)
    return {key: "\n".join(lines).strip("\n") for key, lines in sections.items()}


def extract_code(section: str) -> str | None:
    """The body of the first fenced block in a section, or None when there is none."""
    lines = section.split("\n")
    start = None
    fence = ""
    for i, line in enumerate(lines):
        match = _FENCE.match(line)
        if match and start is None:
            start, fence = i, match.group(1)
        elif match and start is not None and match.group(1)[0] == fence[0]:
            if len(match.group(1)) >= len(fence) and not match.group(2):
                return "\n".join(lines[start + 1 : i])
    if start is not None:
        return "\n".join(lines[start + 1 :])
    return None


def fence_language(section: str) -> str:
    """What the first fenced block of a section says it holds (```python: "python"), lower
    case; "" when it says nothing or there is no block."""
    for line in section.split("\n"):
        match = _FENCE.match(line)
        if match:
            return match.group(2).lower()
    return ""


def code_block_language(test_file: str | Path) -> str:
    """The language a case file's `# Code` block names; "" when it names none (or the file
    cannot be read)."""
    try:
        text = Path(test_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    return fence_language(split_sections(text).get("code", ""))


def read_app_prompt(spec: Path) -> str:
    try:
        text = spec.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{spec}: cannot read SPEC.md ({exc})") from exc
    prompt = split_sections(text).get("prompt", "").strip()
    if not prompt:
        raise SuiteError(f"{spec}: no '# Prompt' section; add one with the schema and rules")
    return prompt


def discover_apps(
    root: Path, only: Sequence[str] | None = None, skipped: list[SkippedFile] | None = None
) -> list[App]:
    """Apps under `root` in name order; `only` keeps the named ones (unknown names fail).

    App folders, SPEC.md files and case files that resolve outside `root` (symlinks) are left
    out and added to `skipped`.
    """
    outside: list[SkippedFile] = [] if skipped is None else skipped
    if not root.is_dir():
        raise SuiteError(f"--cases {root}: not a directory")
    folders = sorted(p for p in root.iterdir() if p.is_dir() and (p / "SPEC.md").is_file())
    if only:
        names = {p.name for p in folders}
        unknown = [a for a in only if a not in names]
        if unknown:
            known = ", ".join(sorted(names)) or "none"
            raise SuiteError(f"--apps: no app named {', '.join(unknown)} in {root} (apps: {known})")
        folders = [p for p in folders if p.name in only]
    kept = []
    resolved: dict[Path, Path] = {}  # each folder resolved once for this load
    for folder in folders:
        reason = outside_reason(folder, root, resolved) or outside_reason(
            folder / "SPEC.md", root, resolved
        )
        if reason is None:
            kept.append(folder)
        else:
            outside.append(SkippedFile(folder, reason))
    folders = kept
    if not folders:
        raise SuiteError(f"--cases {root}: no app folders with a SPEC.md found")
    apps = []
    for folder in folders:
        files = []
        candidates = (
            p
            for p in folder.glob("*.md")
            if p.is_file() and p.name != "SPEC.md" and not is_parameter_file(p)
        )
        for path in sorted(candidates):
            reason = outside_reason(path, root, resolved)
            if reason is None:
                files.append(path)
            else:
                outside.append(SkippedFile(path, reason))
        apps.append(App(folder.name, folder, read_app_prompt(folder / "SPEC.md"), tuple(files)))
    return apps


def is_parameter_file(path: Path) -> bool:
    """A verification scenario in the original security-bench's format lying beside the cases
    (`<scenario>.md` with `# Parameters` and no `# Code`): data for `--verify`, not a case."""
    if is_case_file(path.name):
        return False
    try:
        sections = split_sections(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False
    return "parameters" in sections and "code" not in sections


@dataclass(frozen=True)
class ParsedCase:
    """A case file read: what is asked, the label, and why a bad case is bad (`gold`).

    `gold_problem` says why `# Rule`, `# Also acceptable` or `# Lines` could not be read: the
    case is still usable (its reason is not scored), and `--lint` reports it."""

    code: str
    expected: str
    description: str
    gold: CaseGold = CaseGold()
    gold_problem: str | None = None


def parse_case_file(path: Path) -> tuple[str, str, str] | str:
    """(code, expected, description) or a reason the file cannot be used."""
    parsed = read_case(path)
    if isinstance(parsed, str):
        return parsed
    return parsed.code, parsed.expected, parsed.description


def read_case(path: Path) -> ParsedCase | str:
    """The case file read whole, or a reason the file cannot be used."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot read ({exc})"
    sections = split_sections(text)
    missing = [name for name in ("code", "expected") if name not in sections]
    if missing:
        return "no " + " and no ".join(f"'# {m.title()}' section" for m in missing)
    code = extract_code(sections["code"])
    if code is None:
        return "'# Code' has no fenced code block (```)"
    if not code.strip():
        return "'# Code' block is empty"
    words = sections["expected"].split()
    expected = words[0].strip("`*_.'\"").lower() if words else ""
    if expected not in ("good", "bad"):
        shown = sections["expected"].strip()[:40] or "(empty)"
        return f"'# Expected' must be good or bad, found {shown!r}"
    gold = read_gold(sections)
    problem = gold if isinstance(gold, str) else None
    return ParsedCase(
        code,
        expected,
        sections.get("description", "").strip(),
        gold if isinstance(gold, CaseGold) else CaseGold(),
        problem,
    )


def good_codes_by_scenario(cases: dict[str, ParsedCase]) -> dict[str, list[str]]:
    """The code of each scenario's good cases, keyed by scenario (cases keyed by case id)."""
    goods: dict[str, list[str]] = {}
    for case_id, case in cases.items():
        scenario = scenario_of(case_id)
        if case.expected == "good" and scenario is not None:
            goods.setdefault(scenario, []).append(case.code)
    return goods


def gold_lines_of(case: ParsedCase, case_id: str, goods: dict[str, list[str]]) -> tuple[int, ...]:
    """A bad case's gold lines: as `# Lines` gives them, else its difference with the nearest
    good case of its scenario (none: no good sibling, or no rule to score)."""
    if case.expected != "bad" or case.gold.rule is None:
        return ()
    if case.gold.lines:
        return case.gold.lines
    return derived_lines(case.code, goods.get(scenario_of(case_id) or "", []))


def _exact_text(path: Path) -> str:
    """The file's text with its line endings as they are (as the original evaluator reads it)."""
    return path.read_bytes().decode("utf-8")


def _original_messages(
    spec: str, path: Path, evaluation_prompt: str
) -> tuple[tuple[Message, ...], str | None]:
    """The original evaluator's four messages for a case, or a reason it cannot send them."""
    try:
        code = security_bench.case_code(_exact_text(path))
    except (OSError, UnicodeDecodeError) as exc:
        return (), f"cannot read ({exc})"
    if code is None:
        return (), (
            "the original evaluator would skip it: its pattern needs '# Code' (any case) followed,"
            " past blank lines only, by a ``` or ```sql fence and a closing ``` line"
        )
    return security_bench.messages(spec, evaluation_prompt, code), None


def load_markdown_suite(
    root: Path,
    apps: Sequence[str] | None = None,
    evaluation_prompt: str = "",
    request_style: str = security_bench.OWN_STYLE,
) -> MarkdownSuite:
    """Every usable case of the chosen apps, sorted by path, with the files skipped.

    With `request_style="security-bench"` each case carries the original evaluator's four
    messages, and `evaluation_prompt` must be the file's text exactly as read.
    """
    skipped: list[SkippedFile] = []
    suite = MarkdownSuite(root=root, apps=discover_apps(root, apps, skipped), skipped=skipped)
    original = request_style == security_bench.STYLE
    for app in suite.apps:
        folder = app.root.resolve()
        prefix = build_markdown_prefix(app.prompt, evaluation_prompt)
        spec = ""
        if original:
            try:  # one string per app, shared by its cases' messages
                spec = security_bench.spec_prompt(_exact_text(app.root / "SPEC.md"))
            except (OSError, UnicodeDecodeError) as exc:
                raise SuiteError(f"{app.root / 'SPEC.md'}: cannot read SPEC.md ({exc})") from exc
        rules = spec_rules(app.prompt)
        readable: dict[str, tuple[Path, ParsedCase]] = {}
        for path in app.case_files:
            parsed = read_case(path)
            if isinstance(parsed, str):
                suite.skipped.append(SkippedFile(path, parsed))
            else:
                readable[path.relative_to(root).as_posix()] = (path, parsed)
        goods = good_codes_by_scenario({key: case for key, (_, case) in readable.items()})
        for case_id, (path, case) in readable.items():
            code, expected, description = case.code, case.expected, case.description
            sent: tuple[Message, ...] = ()
            if original:
                sent, problem = _original_messages(spec, path, evaluation_prompt)
                if problem is not None:
                    suite.skipped.append(SkippedFile(path, problem))
                    continue
            suite.cases.append(
                Case(
                    kind=SuiteKind.MARKDOWN,
                    app=app.name,
                    case_id=case_id,
                    test_file=str(path.resolve() if path.is_symlink() else folder / path.name),
                    expected=expected,
                    code=code,
                    description=description,
                    prompt_prefix="" if sent else prefix,
                    messages=sent,
                    structured=True,
                    rule=case.gold.rule if expected == "bad" else None,
                    also_rules=case.gold.also if expected == "bad" else (),
                    gold_lines=gold_lines_of(case, case_id, goods),
                    spec_rules=rules,
                )
            )
    return suite


def spec_rules_beside(case_file: Path) -> tuple[int, ...]:
    """The rule numbers of the SPEC.md beside a case file as it is now (none when it is gone or
    cannot be read): for a result recorded before results kept them."""
    try:
        return spec_rules(read_app_prompt(case_file.parent / "SPEC.md"))
    except SuiteError:
        return ()


def gold_from_file(
    path: Path, code: str | None
) -> tuple[int | None, tuple[int, ...], tuple[int, ...]]:
    """(rule, also acceptable, gold lines) of the case file at `path` as it is now, for a result
    recorded before results kept them; nothing when the file is gone or its code has changed
    since (its gold would belong to another question)."""
    parsed = read_case(path) if path.is_file() else "gone"
    if isinstance(parsed, str) or parsed.gold.rule is None or parsed.expected != "bad":
        return None, (), ()
    if code is not None and parsed.code != code:
        return None, (), ()
    siblings: dict[str, ParsedCase] = {}
    scenario = scenario_of(path.name)
    for other in sorted(path.parent.glob("*-good.md")):
        if scenario_of(other.name) == scenario and not isinstance(read := read_case(other), str):
            siblings[other.name] = read
    lines = gold_lines_of(parsed, path.name, good_codes_by_scenario(siblings))
    return parsed.gold.rule, parsed.gold.also, lines


def with_code(text: str, code: str) -> str | None:
    """The case file's text with the body of its `# Code` section's first fenced block
    replaced by `code` (fences, language, every other section and the line endings kept);
    None when the file has no such block. What `secbench-tui fix` writes as a proposal."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(newline)
    section: str | None = None
    fence: str | None = None
    start: int | None = None
    for i, line in enumerate(lines):
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            if section == "code":
                start = i + 1
        elif fence is not None and match and match.group(1)[0] == fence[0]:
            if len(match.group(1)) >= len(fence) and not match.group(2):
                if start is not None:
                    body = code.replace("\r\n", "\n").rstrip("\n").split("\n")
                    return newline.join([*lines[:start], *body, *lines[i:]])
                fence = None
        elif fence is None and (heading := _HEADING.match(line)):
            section = heading.group(1).strip().lower()
    return None
