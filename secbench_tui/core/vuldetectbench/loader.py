"""VulDetectBench test sets: one `task{N}_code.jsonl` per task, five tasks.

Each line is one record (`idx`, `cwe`, `code`, `answer`, and `selection` for task 2).
A record becomes a `Case` identified by task and position in its file, since `idx`
repeats within task 1. The prompts are those of the `vuldetectbench` 0.0.5 library,
byte for byte: tests/unit/test_vdb_loader.py checks the sha256 of all 5,400
(task, method, position) prompts. Their text ships with the package in
`vuldetectbench_templates.json`.

The answers are free text, as in the benchmark: no structured output is asked for.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import NotRequired, TypedDict, cast

from secbench_tui.core.models import Case, CaseMeta, JSONObject, Message, SuiteKind
from secbench_tui.core.paths import outside_reason
from secbench_tui.core.vuldetectbench import is_vuldetectbench_dir as is_vuldetectbench_dir

TASKS: tuple[int, ...] = (1, 2, 3, 4, 5)
METHODS: tuple[str, ...] = ("cot", "few-shot")
POLICIES: tuple[str, ...] = ("always-bad", "always-good", "random")
NO_VULNERABILITIES = "No Vulnerabilities"

_OPTION = re.compile(r"^([A-E])\.(.*)$")
_REQUIRED = ("idx", "code", "answer")


class VulDetectBenchError(ValueError):
    """The test set or a setting cannot be used; the message names the file or setting."""


def task_file(path: Path, task: int) -> Path:
    return path / f"task{task}_code.jsonl"


class TaskTemplate(TypedDict):
    """One task's prompt parts, as the library renders them (`cot`, `fewshot`: tasks 3-5)."""

    name: str
    system: str
    question: str
    restriction: str
    cot: NotRequired[str]
    fewshot: NotRequired[str]


class Templates(TypedDict):
    tasks: dict[str, TaskTemplate]  # by task number
    fewshot_restriction: str


class Record(TypedDict):
    """One line of a task's file, checked: `selection` is task 2's option list."""

    idx: str
    code: str
    answer: str
    cwe: object  # as the file has it
    selection: str


@cache
def templates() -> Templates:
    """The prompt text of every task, as shipped with the package (our own file: its shape
    is checked by the tests that render every task's prompt)."""
    text = Path(__file__).with_name("vuldetectbench_templates.json").read_text(encoding="utf-8")
    return cast(Templates, json.loads(text))


def check_method(method: str | None) -> str | None:
    if method is None or method in METHODS:
        return method
    raise VulDetectBenchError(
        f"unknown --method {method!r}: use 'cot' or 'few-shot', "
        "or leave --method out for the plain prompts"
    )


def check_tasks(tasks: Sequence[int]) -> tuple[int, ...]:
    chosen = tuple(dict.fromkeys(tasks))
    bad = [t for t in chosen if t not in TASKS]
    if bad or not chosen:
        raise VulDetectBenchError(
            f"--tasks {','.join(map(str, tasks)) or '(empty)'}: "
            "VulDetectBench has tasks 1 to 5; pick some of them, e.g. --tasks 1,3"
        )
    return chosen


def build_prompt(task: int, record: Record, method: str | None) -> tuple[str, str]:
    """(system, user) exactly as the library renders them.

    The user prompt is question, example, code, restriction and chain-of-thought
    instruction joined by newlines, with empty parts kept (so blank lines stay). Task 2
    puts its option list right before the code, without a newline. CoT and few-shot
    change tasks 3 to 5 only.
    """
    spec = templates()["tasks"][str(task)]
    example, restriction, cot = "", spec["restriction"], ""
    code = record["code"]
    if task == 2:
        code = record["selection"] + code
    elif task >= 3 and method == "cot":
        restriction, cot = "", spec.get("cot", "")
    elif task >= 3 and method == "few-shot":
        example, restriction = spec.get("fewshot", ""), templates()["fewshot_restriction"]
    user = "\n".join((spec["question"], example, code, restriction, cot))
    return spec["system"], user


def _read_records(path: Path) -> list[tuple[int, JSONObject]]:
    """(line number, record) for each non-blank line; errors name the file and line."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError as err:
        raise VulDetectBenchError(f"{path}: not UTF-8 text ({err.reason})") from err
    records: list[tuple[int, JSONObject]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise VulDetectBenchError(
                f"{path}:{number}: not valid JSON ({err.msg}, column {err.colno}); "
                "each line must be one JSON object"
            ) from err
        if not isinstance(record, dict):
            raise VulDetectBenchError(f"{path}:{number}: expected a JSON object per line")
        records.append((number, record))
    return records


def _check_record(path: Path, number: int, task: int, record: JSONObject) -> Record:
    """The record with the fields its task needs, each a string; else the file and line."""
    needed = _REQUIRED + (("selection",) if task == 2 else ())
    for key in needed:
        if not isinstance(record.get(key), str):
            raise VulDetectBenchError(
                f"{path}:{number}: field {key!r} is missing or not a string "
                f"(task {task} records need {', '.join(needed)})"
            )
    checked = cast(Record, {**record, "selection": record["selection"] if task == 2 else ""})
    if task == 2 and len(checked["answer"].split("|")) < 2:
        raise VulDetectBenchError(
            f"{path}:{number}: task 2 answer must be 'OPTIMAL|SUBOPTIMAL', "
            f"got {checked['answer']!r}"
        )
    return checked


def load_task(
    path: Path, task: int, method: str | None = None, limit: int | None = None
) -> list[Case]:
    """The cases of one task in file order; with `limit`, only the first `limit` of them."""
    file = task_file(path, task)
    if not file.is_file():
        raise VulDetectBenchError(
            f"{file}: missing; task {task} needs it (choose other tasks with --tasks)"
        )
    cases: list[Case] = []
    for pos, (number, line) in enumerate(_read_records(file)[:limit]):
        record = _check_record(file, number, task, line)
        system, user = build_prompt(task, record, method)
        meta: CaseMeta = {
            "task": task,
            "pos": pos,
            "idx": record["idx"],
            "cwe": record.get("cwe"),
            "method": method,
        }
        if task == 2:
            meta["selection"] = record["selection"]
        cases.append(
            Case(
                kind=SuiteKind.VULDETECTBENCH,
                app=f"task{task}",
                case_id=f"task{task}/{pos}",
                test_file=str(file),
                expected=record["answer"],
                code=record["code"],
                messages=(
                    Message(role="system", content=system),
                    Message(role="user", content=user),
                ),
                description=templates()["tasks"][str(task)]["name"],
                structured=False,
                meta=meta,
            )
        )
    return cases


def load_vuldetectbench(
    path: Path,
    tasks: Sequence[int] = TASKS,
    method: str | None = None,
    limit: int | None = None,
    skipped: list[str] | None = None,
) -> list[Case]:
    """The cases of the chosen tasks, task by task, in file order.

    A task file that resolves outside `path` (a symlink) is never read: it is named in
    `skipped` and its task left out, or, without a `skipped` list to report it in, refused.

    `limit` keeps the first `limit` cases of each task, so a short run still reports every
    task asked for (the published files are not sorted by label: the first cases are a fair
    sample).
    """
    method = check_method(method)
    chosen = check_tasks(tasks)
    if limit is not None and limit < 1:
        raise VulDetectBenchError(f"--limit {limit}: give a number of cases per task, 1 or more")
    if not path.is_dir():
        raise VulDetectBenchError(f"{path}: not a folder (--cases needs the test set folder)")
    cases: list[Case] = []
    for task in chosen:
        reason = outside_reason(task_file(path, task), path)
        if reason is not None:
            if skipped is None:
                raise VulDetectBenchError(f"{task_file(path, task)}: not read: {reason}")
            skipped.append(f"skipped {task_file(path, task)}: {reason}")
            continue
        cases.extend(load_task(path, task, method, limit))
    return cases


def options(selection: str) -> dict[str, str]:
    """Task 2's choices, letter to text: 'A.No Vulnerabilities' gives {'A': 'No ...'}."""
    found: dict[str, str] = {}
    for line in selection.splitlines():
        match = _OPTION.match(line.strip())
        if match:
            found[match.group(1)] = match.group(2).strip()
    return found


def _code_lines(code: str) -> list[str]:
    """Lines that hold a statement: no blank, preprocessor, comment or brace-only line."""
    lines = []
    for line in code.splitlines():
        text = line.strip()
        if not re.search(r"\w", text) or text.startswith(("#", "//", "/*", "*")):
            continue
        lines.append(text)
    return lines or ["/* no code */"]


def _identifiers(line: str) -> list[str]:
    return list(dict.fromkeys(re.findall(r"[A-Za-z_]\w*", line)))


def baseline_answer(case: Case, policy: str, rng: random.Random) -> str:
    """What an offline baseline answers, in the format the prompt asks for.

    Chance-level references, not heuristics: "always-bad" claims a flaw every time
    (task 1 YES; task 2 the first option that is not "No Vulnerabilities"; tasks 3-5 the
    first statement of the code), "always-good" claims none (NO; the "No Vulnerabilities"
    option; a reply naming no code), "random" picks uniformly with `rng` (YES or NO; any
    option; any statement line).
    """
    if policy not in POLICIES:
        raise VulDetectBenchError(f"unknown baseline {policy!r}: use one of {', '.join(POLICIES)}")
    task = int(case.meta["task"])
    if task == 1:
        return {"always-bad": "YES", "always-good": "NO"}.get(policy) or rng.choice(["YES", "NO"])
    if task == 2:
        return _baseline_option(case, policy, rng)
    if policy == "always-good":
        return "No vulnerable code."
    lines = _code_lines(case.code)
    line = lines[0] if policy == "always-bad" else rng.choice(lines)
    if task == 3:
        return " ".join(f"`{name}`" for name in _identifiers(line)) or "No vulnerable code."
    return f"`{line}`"


def _baseline_option(case: Case, policy: str, rng: random.Random) -> str:
    choices = options(str(case.meta.get("selection", "")))
    letters = sorted(choices) or ["A", "B", "C", "D", "E"]
    safe = [k for k in letters if choices.get(k, "").lower() == NO_VULNERABILITIES.lower()]
    if policy == "always-good":
        letter = safe[0] if safe else letters[0]
    elif policy == "always-bad":
        letter = next((k for k in letters if k not in safe), letters[0])
    else:
        letter = rng.choice(letters)
    return f"{letter}."
