"""The original evaluator's request (glideapps/security-bench, final version), byte for byte.

`--request-style security-bench` sends what that tool sends, so a model's accuracy here can
be set beside numbers published from it: four messages (a fixed system prompt, the SPEC's
prompt, the evaluation prompt as read, the case's code), its `security_assessment` schema,
`temperature` 0.1 and `max_tokens` 30000, and no other body field. Text is cut out of the
files the way that tool cuts it (lines, JavaScript's `trim()`), not the way our suite
reader does, since a difference of one space would make it a different question.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from secbench_tui.core.models import Message

STYLE = "security-bench"
RequestStyle = Literal["secbench-tui", "security-bench"]

SYSTEM_PROMPT = (
    "You are a security expert evaluating code for vulnerabilities. You will be given a "
    "database schema, security requirements, and a code fragment to analyze."
)
TEMPERATURE = 0.1
MAX_TOKENS = 30000
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "security_assessment",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "explanation": {
                    "type": "string",
                    "description": "Explanation of the security assessment",
                },
                "assessment": {
                    "type": "string",
                    "enum": ["good", "bad"],
                    "description": "Whether the code is secure (good) or vulnerable (bad)",
                },
            },
            "required": ["explanation", "assessment"],
            "additionalProperties": False,
        },
    },
}

# What JavaScript's String.prototype.trim() removes: WhiteSpace and LineTerminator.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_TRIM = re.compile(f"^[{_JS_SPACE}]+|[{_JS_SPACE}]+$")


def js_trim(text: str) -> str:
    """`text.trim()` as JavaScript does it (Python's `strip()` removes other characters)."""
    return _JS_TRIM.sub("", text)


def spec_prompt(spec_text: str) -> str:
    """The text after the `# Prompt` heading line up to the next line starting with `# `
    (or the end of the file), trimmed; "" when there is no such heading."""
    lines = spec_text.split("\n")
    start = next((i for i, line in enumerate(lines) if js_trim(line) == "# Prompt"), None)
    if start is None:
        return ""
    body: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("# "):
            break
        body.append(line)
    return js_trim("\n".join(body))


def case_code(case_text: str) -> str | None:
    """The first fenced block after the `# Code` heading, without its fence lines, trimmed;
    None when there is none."""
    lines = case_text.split("\n")
    heading = next((i for i, line in enumerate(lines) if js_trim(line) == "# Code"), None)
    if heading is None:
        return None
    opening = next(
        (i for i in range(heading + 1, len(lines)) if lines[i].lstrip().startswith("```")), None
    )
    if opening is None:
        return None
    body: list[str] = []
    for line in lines[opening + 1 :]:
        if line.lstrip().startswith("```"):
            break
        body.append(line)
    return js_trim("\n".join(body))


def messages(spec: str, evaluation_prompt: str, code: str) -> tuple[Message, ...]:
    """The four messages: system, the SPEC's prompt, the evaluation prompt, the code."""
    return (
        Message(role="system", content=SYSTEM_PROMPT),
        Message(role="user", content=spec),
        Message(role="user", content=evaluation_prompt),
        Message(role="user", content=code),
    )


def request_body(model: str, sent: tuple[Message, ...]) -> dict[str, Any]:
    """The whole body, keys in the original's order; nothing else is added to it."""
    return {
        "model": model,
        "messages": [{"role": m.role, "content": m.content} for m in sent],
        "response_format": RESPONSE_FORMAT,
        "temperature": TEMPERATURE,
        "max_tokens": MAX_TOKENS,
    }
