"""Prompt building for markdown suites, as the specification orders it.

The `# Prompt` text of the app's SPEC.md, then the evaluation prompt, then the code. The
structured-output schema the model is asked to follow lives here too, next to the words that
describe it.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path
from typing import Any

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "assessment": {"type": "string", "enum": ["good", "bad"]},
        "explanation": {"type": "string"},
    },
    "required": ["assessment", "explanation"],
    "additionalProperties": False,
}

RESPONSE_FORMATS = ("json_schema", "json_object", "none")


def build_markdown_prefix(app_prompt: str, evaluation_prompt: str) -> str:
    """What precedes every case's code in its app: the SPEC's prompt, then the evaluation prompt."""
    return "\n\n".join(part for part in (app_prompt.strip(), evaluation_prompt.strip()) if part)


def response_format(kind: str) -> dict[str, Any] | None:
    """The `response_format` request field for `--response-format KIND`."""
    if kind == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "security_verdict", "strict": True, "schema": VERDICT_SCHEMA},
        }
    if kind == "json_object":
        return {"type": "json_object"}
    return None


def packaged_evaluation_prompt(exact: bool = False) -> str:
    packaged = resources.files("secbench_tui") / "evaluation-prompt.txt"
    return packaged.read_bytes().decode("utf-8") if exact else packaged.read_text("utf-8")


def load_evaluation_prompt(path: Path | None, exact: bool = False) -> tuple[str, str]:
    """(text, source) of the evaluation prompt.

    An explicit path must exist. Without one, `./evaluation-prompt.txt` is used when present
    (the specification keeps it at the project root) and the copy shipped in the package
    otherwise, so the program works from any directory. `exact` keeps the file's line
    endings as they are (what `--request-style security-bench` sends).
    """

    def read(file: Path) -> str:
        return file.read_bytes().decode("utf-8") if exact else file.read_text(encoding="utf-8")

    if path is not None:
        return read(path), str(path)
    local = Path("evaluation-prompt.txt")
    if local.is_file():
        return read(local), str(local.resolve())
    return packaged_evaluation_prompt(exact), "packaged"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
