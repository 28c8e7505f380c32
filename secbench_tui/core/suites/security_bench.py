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
from typing import Final, Literal

from secbench_tui.core.models import ChatRequest, JSONObject, Message

STYLE = "security-bench"
OWN_STYLE: Final = "secbench-tui"  # our own request: the default of --request-style
RequestStyle = Literal["secbench-tui", "security-bench"]

SYSTEM_PROMPT = (
    "You are a security expert evaluating code for vulnerabilities. You will be given a "
    "database schema, security requirements, and a code fragment to analyze."
)
# The headers the original sets on its request (OpenRouter attributes requests by the first
# two), and the user agent of the fetch that sends it (Node's own since Node 22; the original
# pins Node 24). Node's other transport headers (accept, accept-language, sec-fetch-mode,
# accept-encoding) are not copied: they do not reach the model.
HEADERS = {
    "HTTP-Referer": "https://github.com/security-bench",
    "X-Title": "Security Benchmark Evaluator",
    "User-Agent": "node",
}
TEMPERATURE = 0.1
MAX_TOKENS = 30000
# The original's `response_format`, kept as data and not made from a model: it must be what
# that tool sends, byte for byte (its own schema, with its own descriptions), not ours
# (`core.suites.verdict`, generated from the reply's model).
RESPONSE_FORMAT: JSONObject = {
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


# The original's own patterns (src/evaluator.ts, `extractSpecPrompt` and `parseTestFile`),
# with JavaScript's meaning kept: `\s` is JavaScript's set, `/i` is ASCII case folding, `$`
# without the m flag is the end of the text. They read the suite's text as the original does;
# they parse no code.
_S = f"[{_JS_SPACE}]"
_PROMPT_RE = re.compile(rf"# [Pp][Rr][Oo][Mm][Pp][Tt]{_S}*\n([\s\S]*?)(?=\n# |\Z)")
_CODE_RE = re.compile(rf"# [Cc][Oo][Dd][Ee]{_S}*\n{_S}*```(?:[Ss][Qq][Ll])?{_S}*\n([\s\S]*?)\n```")


def spec_prompt(spec_text: str) -> str:
    """What follows `# Prompt` (any case) and its line end, up to the next line starting
    with `# ` (or the end of the file), trimmed; "" when there is no such heading."""
    found = _PROMPT_RE.search(spec_text)
    return js_trim(found.group(1)) if found else ""


def case_code(case_text: str) -> str | None:
    """The block of a ``` or ```sql fence that follows `# Code` (any case) past blank lines,
    trimmed, as the original's pattern finds it; None when it finds none (the original then
    skips the case: a ```python fence, or text between the heading and the fence)."""
    found = _CODE_RE.search(case_text)
    return js_trim(found.group(1)) if found else None


def messages(spec: str, evaluation_prompt: str, code: str) -> tuple[Message, ...]:
    """The four messages: system, the SPEC's prompt, the evaluation prompt, the code."""
    return (
        Message(role="system", content=SYSTEM_PROMPT),
        Message(role="user", content=spec),
        Message(role="user", content=evaluation_prompt),
        Message(role="user", content=code),
    )


def request_body(model: str, sent: tuple[Message, ...]) -> ChatRequest:
    """The whole body, keys in the original's order; nothing else is added to it."""
    return {
        "model": model,
        "messages": [{"role": m.role, "content": m.content} for m in sent],
        "response_format": RESPONSE_FORMAT,
        "temperature": TEMPERATURE,
        "max_tokens": MAX_TOKENS,
    }
