"""What every writer of a database shares: the clock, the hash of a text, text SQLite can hold."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from secbench_tui.core.models import Case


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def text_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()


def storable(value: Any) -> Any:
    """Text SQLite can hold: a lone surrogate (JSON's "\\ud800" decodes to one) becomes U+FFFD.

    A model's reply is untrusted input; one odd character must not cost the case.
    """
    if isinstance(value, str) and not value.isascii():  # ASCII (known at once) always is
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return value


def gold_json(case: Case) -> str | None:
    """What the store keeps of a bad case's gold reason: its right rules (the gold rule first,
    then those also acceptable), its gold lines, and the numbers of its SPEC's rules (what the
    chance level of "cite every rule" needs). None: the case names no rule."""
    if case.rule is None:
        return None
    gold: dict[str, list[int]] = {
        "rules": [case.rule, *case.also_rules],
        "lines": list(case.gold_lines),
    }
    if case.spec_rules:
        gold["spec"] = list(case.spec_rules)
    return json.dumps(gold, separators=(",", ":"))


LEGACY_PROMPT_NAME = "evaluation-prompt"  # the one prompt file runs had before prompts had names


def prompt_keyed(key: str, prompt_name: str) -> str:
    """A request hash or run fingerprint that also names the evaluation prompt."""
    return text_hash(key, prompt_name)


def vdb_prompt_name(method: Any) -> str:
    """VulDetectBench's prompt dimension is its prompting method: plain, cot or few-shot."""
    return str(method) if method else "plain"
