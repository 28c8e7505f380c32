"""The exact messages each result was asked with, every text stored once.

A suite's cases share most of what they send: every case of an app carries its SPEC's prompt
and the evaluation prompt, every case of the original evaluator's request its system prompt.
So a message is kept as the SHA-256 hashes of its parts, each part's text once in
`request_texts` (keyed by the hash of its UTF-8 bytes), and a result's row holds only the list
`[[role, [part hash, ...]], ...]` in `evaluations.messages`; a message's content is its parts
joined. Everything a run will ask is known when it is planned, so its texts are written in one
`executemany` at the run's start (`Store.remember_requests`) and each result's row names its
messages in the insert that records it: no statement per case more than before.

Rows adopted from the original evaluator's database keep the request body it stored
(`request`); rows recorded before this schema (9) kept no messages, and say so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

from secbench_tui.core.models import Case, Message
from secbench_tui.core.store.calls import Database
from secbench_tui.core.store.values import storable

SCHEMA_WITH_MESSAGES = 9  # the first schema that keeps them

Parts = tuple[tuple[str, tuple[str, ...]], ...]  # (role, texts joined into its content), ...


class ExportedMessage(TypedDict):
    """One message as an export writes it: its role and the hashes of its parts' texts."""

    role: str
    parts: list[str]


class ExportedRequest(TypedDict):
    """A result's request as an export writes it: where it was kept (this tool's messages,
    the original evaluator's body, or nothing), its messages, and why none when none."""

    source: Literal["stored", "original", "none"]
    messages: list[ExportedMessage]
    note: NotRequired[str]


async def add_request_texts(db: Any, dialect: str) -> None:
    """Version 8 -> 9: the messages of each request (`request_texts`, `evaluations.messages`)."""
    await db.execute(
        "CREATE TABLE IF NOT EXISTS request_texts (hash TEXT PRIMARY KEY, text TEXT NOT NULL)"
    )
    cursor = await db.execute("PRAGMA table_info(evaluations)")
    if "messages" not in {row[1] for row in await cursor.fetchall()}:
        await db.execute("ALTER TABLE evaluations ADD COLUMN messages TEXT")


def message_parts(case: Case) -> Parts:
    """The messages `Case.prompt_messages` sends, each as the texts its content joins: a
    markdown case's one message is its app's shared prefix, a blank line and its code."""
    if case.messages:
        return tuple((m.role, (m.content,)) for m in case.messages)
    if case.prompt_prefix:
        return (("user", (case.prompt_prefix, "\n\n", case.code)),)
    return (("user", (case.code,)),)


def part_hash(text: str) -> str:
    """SHA-256 of the text's UTF-8 bytes (`sha256sum` of the text written to a file)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class RequestTexts:
    """Hashes the parts of the cases a run asks, each distinct text once (an app's prefix is
    one string shared by its cases: hashed once, not once per case)."""

    def __init__(self) -> None:
        self._hashes: dict[str, str] = {}

    def refs(self, case: Case) -> str:
        """The JSON a result's `messages` column holds for this case's request."""
        return json.dumps(
            [[role, [self._hash(part) for part in parts]] for role, parts in message_parts(case)],
            separators=(",", ":"),
        )

    def _hash(self, text: str) -> str:
        found = self._hashes.get(text)
        if found is None:
            found = self._hashes[text] = part_hash(text)
        return found

    def rows(self, known: set[str]) -> list[tuple[str, Any]]:
        """(hash, text) of every text hashed so far that is not in `known`."""
        return [(h, storable(text)) for text, h in self._hashes.items() if h not in known]


@dataclass(frozen=True)
class SentRequest:
    """What was sent for one result, as far as the database knows.

    `source`: `stored` (this tool's messages, exact), `original` (the body the original
    evaluator stored), or `none` (not kept: `note` says why)."""

    messages: tuple[Message, ...]
    source: Literal["stored", "original", "none"]
    note: str = ""


NOT_KEPT = (
    "not kept: this result was recorded before secbench-tui stored the messages it sends "
    f"(database schema {SCHEMA_WITH_MESSAGES}); asking the case again (--force) records them"
)


def _refs(value: Any) -> list[tuple[str, list[str]]] | None:
    """A stored `messages` value read back; None when it is not the shape written here."""
    try:
        data = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return None
    if not isinstance(data, list):
        return None
    refs: list[tuple[str, list[str]]] = []
    for item in data:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            return None
        if not (isinstance(item[1], list) and all(isinstance(h, str) for h in item[1])):
            return None
        refs.append((item[0], item[1]))
    return refs


async def read_stored(db: Database, value: Any) -> SentRequest:
    """The messages a row's `messages` column names, joined from `request_texts`."""
    refs = _refs(value)
    if refs is None:
        return SentRequest((), "none", "the stored messages cannot be read (damaged)")
    wanted = sorted({h for _, parts in refs for h in parts})
    texts = await _texts(db, wanted)
    missing = [h for h in wanted if h not in texts]
    messages = tuple(
        Message(role=role, content="".join(texts.get(h, "") for h in parts)) for role, parts in refs
    )
    note = f"{len(missing)} of its texts are missing from the database" if missing else ""
    return SentRequest(messages, "stored", note)


def read_original(body: Any) -> SentRequest:
    """The messages of a request body the original evaluator stored (JSON text)."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        data = json.loads(body) if isinstance(body, str) else None
    except (ValueError, RecursionError):
        data = None
    raw = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        return SentRequest((), "none", "the original evaluator's stored request has no messages")
    return SentRequest(tuple(_message(m) for m in raw), "original")


def _message(value: Any) -> Message:
    if not isinstance(value, dict):
        return Message(role="?", content=json.dumps(value, ensure_ascii=False))
    content = value.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    elif not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    return Message(role=str(value.get("role", "?")), content=content)


async def sent_request(db: Database, result_id: int, with_original: bool) -> SentRequest | None:
    """The request of one result (None: no such result). `with_original`: the table is an
    adopted one whose `request` column holds the original evaluator's bodies."""
    columns = "messages, request" if with_original else "messages"
    cursor = await db.execute(f"SELECT {columns} FROM evaluations WHERE id=?", (result_id,))
    row = await cursor.fetchone()
    if row is None:
        return None
    if row[0] is not None:
        return await read_stored(db, row[0])
    if with_original and row[1] is not None:
        return read_original(row[1])
    return SentRequest((), "none", NOT_KEPT)


async def _texts(db: Database, hashes: Sequence[str]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for start in range(0, len(hashes), 500):
        chunk = list(hashes[start : start + 500])
        cursor = await db.execute(
            f"SELECT hash, text FROM request_texts WHERE hash IN ({', '.join('?' * len(chunk))})",
            chunk,
        )
        texts.update({str(h): str(t) for h, t in await cursor.fetchall()})
    return texts


async def for_export(
    db: Database, rows: Iterable[Any], with_original: bool
) -> tuple[dict[int, ExportedRequest], dict[str, str]]:
    """The request of each result row (with `id` and `messages`), as an export writes it:
    `{"source", "messages": [{"role", "parts": [hash, ...]}], "note"}` by result id, and the
    texts those hashes name (the original evaluator's stored bodies are split the same way)."""
    requests: dict[int, ExportedRequest] = {}
    unkept: list[int] = []
    for row in rows:
        refs = _refs(row.get("messages")) if row.get("messages") is not None else None
        if refs is None:
            unkept.append(int(row["id"]))
            continue
        requests[int(row["id"])] = {
            "source": "stored",
            "messages": [{"role": role, "parts": parts} for role, parts in refs],
        }
    wanted = sorted({h for r in requests.values() for m in r["messages"] for h in m["parts"]})
    texts = await _texts(db, wanted)
    originals: dict[int, Any] = {}
    for start in range(0, len(unkept) if with_original else 0, 500):
        chunk = unkept[start : start + 500]
        cursor = await db.execute(
            f"SELECT id, request FROM evaluations WHERE id IN ({', '.join('?' * len(chunk))})",
            chunk,
        )
        originals.update({int(i): body for i, body in await cursor.fetchall() if body})
    for result_id in unkept:
        sent = read_original(originals[result_id]) if result_id in originals else None
        if sent is None or sent.source == "none":
            requests[result_id] = {"source": "none", "messages": [], "note": NOT_KEPT}
            continue
        parts: list[ExportedMessage] = []
        for m in sent.messages:
            texts[part_hash(m.content)] = m.content
            parts.append({"role": m.role, "parts": [part_hash(m.content)]})
        requests[result_id] = {"source": "original", "messages": parts}
    return requests, texts


def refs_of(value: Any) -> Sequence[tuple[str, list[str]]]:
    """A stored `messages` value as (role, part hashes); empty when absent or damaged."""
    return _refs(value) or []
