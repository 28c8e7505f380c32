"""Prompt building for markdown suites, as the specification orders it.

The `# Prompt` text of the app's SPEC.md, then the evaluation prompt, then the code. The
`response_format` that asks for the verdict's structure lives here too (its schema is made from
the reply's model, `core.suites.verdict`), and so do the evaluation prompts: the bundled
strategies (`secbench_tui/prompts/`) and the files a user names. Each has a name (a file's stem,
or the bundled name) that runs record beside its hash, so results of different prompts are told
apart. Every bundled prompt asks for verdict schema 2 in words, as the schema does, but
`exploit`, which asks for schema 3 (violations with exploits, `--prove-findings`); the prompts
of another task (`fix`, verdict schema 4: `core.suites.fix_reply`) are bundled beside them but
are no strategy of finding, so `all` and the app's list leave them out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from secbench_tui.core.models import JSONObject
from secbench_tui.core.paths import outside_reason
from secbench_tui.core.suites.verdict import verdict_schema

ResponseFormat = Literal["json_schema", "json_object", "none"]
# What a request asks the model to reply with: a verdict (`--task find`), one whose violations
# carry exploits (a prompt that asks for them, schema 3), a verdict with the
# corrected code (`--task fix`), or a case's new code (`secbench-tui fix`).
Reply = Literal["verdict", "exploit", "fix", "proposal"]


def build_markdown_prefix(app_prompt: str, evaluation_prompt: str) -> str:
    """What precedes every case's code in its app: the SPEC's prompt, then the evaluation prompt."""
    return "\n\n".join(part for part in (app_prompt.strip(), evaluation_prompt.strip()) if part)


def response_format(kind: str, reply: Reply = "verdict") -> JSONObject | None:
    """The `response_format` request field for `--response-format KIND`, for a `reply` of that
    kind: `exploit` (a prompt that asks for them) is verdict schema 3's, whose violations carry
    an exploit; the fix task's and `secbench-tui fix`'s schemas are `core.suites.fix_reply`'s."""
    if kind == "json_schema":
        if reply == "verdict":
            name, schema = "security_verdict", verdict_schema()
        elif reply == "exploit":
            from secbench_tui.core.suites.exploit_verdict import exploit_verdict_schema

            name, schema = "security_verdict_exploit", exploit_verdict_schema()
        else:
            from secbench_tui.core.suites import fix_reply

            name, schema = (
                ("security_fix", fix_reply.fix_schema())
                if reply == "fix"
                else ("case_proposal", fix_reply.proposal_schema())
            )
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": schema},
        }
    if kind == "json_object":
        return {"type": "json_object"}
    return None


LOCAL_PROMPT = "evaluation-prompt.txt"  # the specification keeps it at the project root
# A prompt file larger than this is refused before it is read: about 260,000 tokens, sent with
# every case, is more than any model's context can hold (a 200 MB file took 1.2 GB to plan).
MAX_PROMPT_BYTES = 1024 * 1024
DEFAULT_PROMPT = "default"
FIX_PROMPT = "fix"  # `--task fix`: asks for verdict schema 4, the corrected code with the verdict
TASK_PROMPTS = frozenset({FIX_PROMPT})  # bundled, but no strategy of finding
EXPLOIT_PROMPT = "exploit"  # asks for verdict schema 3: each violation with an exploit
EXPLOIT_KEY = '"exploit"'
ALL_PROMPTS = "all"


@dataclass(frozen=True)
class EvaluationPrompt:
    """One evaluation prompt: its name (recorded with each run), text and where it came from."""

    name: str
    text: str  # exactly as read: line endings kept (`--request-style security-bench`)
    source: str  # a file's path, or "bundled"
    notes: tuple[str, ...] = ()  # files of its folder that were skipped, and why

    @property
    def normalised(self) -> str:
        """The text with universal newlines, as our own request style sends it."""
        return self.text.replace("\r\n", "\n").replace("\r", "\n")

    @property
    def sha256(self) -> str:
        return sha256_text(self.normalised)

    @property
    def asks_exploits(self) -> bool:
        """Whether it asks for verdict schema 3 (the bundled `exploit` does): it names the key
        `"exploit"`, and its requests' `response_format` then carries that schema."""
        return EXPLOIT_KEY in self.text


class PromptError(Exception):
    """A `--prompt` value that names nothing usable; the message says what to give instead."""


def _bundled_dir() -> Path:
    """The package's `prompts/` folder. A path beside this file, not `importlib.resources`:
    the package is always installed as files (its suites are read and run from disk), and
    that module's import costs every start a few milliseconds."""
    return Path(__file__).parents[2] / "prompts"


def bundled_prompt_names() -> list[str]:
    """The bundled strategies of finding, `default` first, the rest by name (the prompts of
    another task, `TASK_PROMPTS`, are named apart)."""
    names = sorted(
        entry.name.removesuffix(".txt")
        for entry in _bundled_dir().iterdir()
        if entry.name.endswith(".txt") and entry.name.removesuffix(".txt") not in TASK_PROMPTS
    )
    return sorted(names, key=lambda n: n != DEFAULT_PROMPT)


def bundled_prompt(name: str) -> EvaluationPrompt:
    text = (_bundled_dir() / f"{name}.txt").read_bytes().decode("utf-8")
    return EvaluationPrompt(name, text, "bundled")


def read_prompt_text(path: Path, flag: str = "--prompt") -> str:
    """A prompt file's text, exactly; one too large to be a prompt is refused unread."""
    size = path.stat().st_size
    if size > MAX_PROMPT_BYTES:
        raise PromptError(
            f"{flag} {path}: {size:,} bytes, more than the {MAX_PROMPT_BYTES:,} a prompt file "
            "may have (it is sent with every case, and no model's context holds that much); "
            "shorten it, or check that this is the file you meant"
        )
    return path.read_bytes().decode("utf-8")


def prompt_file(path: Path) -> EvaluationPrompt:
    """A prompt read from a file, named by the file's stem (`cot.txt` is `cot`)."""
    return EvaluationPrompt(path.stem, read_prompt_text(path), str(path))


def default_prompt() -> EvaluationPrompt:
    """`./evaluation-prompt.txt` when present (named `evaluation-prompt`, as before prompts had
    names), else the bundled `default`, so the program works from any directory."""
    local = Path(LOCAL_PROMPT)
    if local.is_file():
        try:
            text = read_prompt_text(local, "./evaluation-prompt.txt")
        except (OSError, UnicodeDecodeError) as exc:
            raise PromptError(f"./{LOCAL_PROMPT}: cannot read ({exc})") from exc
        return EvaluationPrompt(local.stem, text, str(local.resolve()))
    return bundled_prompt(DEFAULT_PROMPT)


def resolve_prompts(specs: Sequence[str]) -> list[EvaluationPrompt]:
    """What `--prompt` values name, in order and without repeats: a file, a folder (its `*.txt`,
    sorted), a bundled name, or `all` (every bundled prompt). No value: the default prompt.

    A path that exists wins over a bundled name; two prompts may not share a name, since the
    name is what tells their runs apart.
    """
    if not specs:
        return [default_prompt()]
    found: list[EvaluationPrompt] = []
    for spec in specs:
        found.extend(_resolve_one(spec))
    unique: dict[str, EvaluationPrompt] = {}
    for prompt in found:
        held = unique.get(prompt.name)
        if held is not None and held.text != prompt.text:
            raise PromptError(
                f"--prompt: two prompts are named {prompt.name!r} ({held.source} and "
                f"{prompt.source}); rename one of the files"
            )
        unique.setdefault(prompt.name, prompt)
    return list(unique.values())


def _resolve_one(spec: str) -> list[EvaluationPrompt]:
    path = Path(spec)
    try:
        if path.is_dir():
            return _folder(spec, path)
        if path.is_file():
            return [prompt_file(path)]
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(f"--prompt {spec}: cannot read ({exc})") from exc
    names = bundled_prompt_names()
    if spec == ALL_PROMPTS:
        return [bundled_prompt(n) for n in names]
    if spec in names or spec in TASK_PROMPTS:
        return [bundled_prompt(spec)]
    raise PromptError(
        f"--prompt {spec}: no such file or folder, and not a bundled prompt; "
        f"bundled: {', '.join([*names, *sorted(TASK_PROMPTS)])} (or all)"
    )


def _folder(spec: str, path: Path) -> list[EvaluationPrompt]:
    """Each `*.txt` in the folder, sorted; a file that resolves outside it (a symlink to
    /etc/passwd, say) is skipped with a note, as suites skip theirs (core/paths.py), and so is
    an entry that is no file (a dangling link, a folder named `x.txt`)."""
    files, notes = [], []
    for candidate in sorted(path.glob("*.txt")):
        if not candidate.is_file():  # a link to nothing, a folder: said, not dropped unseen
            what = "a link to nothing" if candidate.is_symlink() else "not a file"
            notes.append(f"skipped prompt {candidate}: {what}")
            continue
        reason = outside_reason(candidate, path)
        if reason is None:
            files.append(candidate)
        else:
            notes.append(f"skipped prompt {candidate}: {reason.replace('suite', 'prompt')}")
    if not files:
        raise PromptError(
            f"--prompt {spec}: the folder holds no *.txt prompt files"
            + (f" of its own ({'; '.join(notes)})" if notes else "")
        )
    prompts = [prompt_file(p) for p in files]
    prompts[0] = replace(prompts[0], notes=tuple(notes))
    return prompts


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
