"""A loopback server that emulates three batch APIs, for the `--batch` tests.

`BatchLoopback` is the live loopback server (`tests.e2e.server.LoopbackServer`: the same
`/chat/completions`, `/models`, rules and default verdicts) that also speaks one batch protocol:

- `openrouter`: `POST /batches` with the requests inline, `GET /batches/{id}` with the results
  inline once it has ended (or, with `inline=False`, from `GET /batches/{id}/results` pages);
- `openai`: `POST /files` (multipart JSONL), `POST /batches`, `GET /batches/{id}`, and the
  output and error files at `GET /files/{id}/content`;
- `anthropic`: `POST /messages/batches`, `GET /messages/batches/{id}`, its `results_url`.

A batch answers each request as the live server would (the same rules, markers and
`completion_body`, so the same verdict, tokens and text), at `BATCH_DISCOUNT` of the live cost.
How a batch goes is scripted with `BatchPlan`s, taken in order by the batches submitted: the
statuses it shows over its polls, how it ends (completed, expired, cancelled, failed), which
requests fail, and whether it waits (`hold`) until the test calls `finish()`. The server
checks each submission against the protocol's documented limits (refusing one over them) and
counts submissions, polls and result reads.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.server import (
    Behaviour,
    LoopbackServer,
    ReceivedRequest,
    _Handler,
    _prompt_of,
    error_body,
)

BATCH_DISCOUNT = 0.5
LIMITS = {  # requests, bytes: as each provider documents them
    "openrouter": (5_000, 200_000_000),
    "openai": (50_000, 200_000_000),
    "anthropic": (100_000, 256_000_000),
}
WORDS = {  # a plan's statuses in each protocol's words
    "openrouter": {"validating": "validating", "in_progress": "in_progress"},
    "openai": {"validating": "validating", "in_progress": "in_progress"},
    "anthropic": {"validating": "in_progress", "in_progress": "in_progress"},
}


@dataclass
class BatchPlan:
    """How one batch goes: `statuses` before it ends (one per poll), then `end`: completed,
    expired (`answered` requests ran, the rest did not), cancelled (the same), or failed (none
    ran, `message` says why). Requests whose prompt holds a marker of `fail_markers` fail;
    `hold`: stay in progress until `finish()`."""

    statuses: tuple[str, ...] = ("validating", "in_progress")
    end: str = "completed"
    answered: int | None = None
    fail_markers: tuple[str, ...] = ()
    message: str = "Batch validation failed: the model has no batch endpoint"
    hold: bool = False


@dataclass
class Batch:
    id: str
    protocol: str
    lines: list[dict[str, Any]]  # custom_id and body (chat completions), as submitted
    plan: BatchPlan
    polls: int = 0
    finished: bool = False  # released from `hold`
    results: list[dict[str, Any]] | None = None  # once ended, in the protocol's shape
    counts: dict[str, int] = field(default_factory=dict)

    def status(self) -> tuple[str, bool]:
        """The status this poll shows, and whether the batch has ended."""
        shown = self.polls - 1
        if shown < len(self.plan.statuses) or (self.plan.hold and not self.finished):
            word = self.plan.statuses[min(max(shown, 0), len(self.plan.statuses) - 1)]
            return WORDS[self.protocol].get(word, word), False
        if self.protocol == "anthropic":
            return "ended", True
        return self.plan.end, True


class BatchLoopback(LoopbackServer):
    """The live loopback server with one batch protocol (`protocol`)."""

    def __init__(self, protocol: str = "openrouter", *, inline: bool = True, **kw: Any) -> None:
        super().__init__(**kw)
        self.protocol = protocol
        self.inline = inline  # OpenRouter: results inline, or from the paginated endpoint
        self.page_size = 2
        self.batches: dict[str, Batch] = {}
        self.submissions: list[dict[str, int]] = []  # requests and bytes of each batch sent
        self.polls = 0
        self.result_reads = 0
        self.refusal: Behaviour | None = None  # answer the next submission with this
        self.poll_faults: list[Behaviour] = []  # answer the next polls with these
        self.files: dict[str, bytes] = {}
        self._plans: list[BatchPlan] = []
        self._batch_lock = threading.Lock()

    def start(self) -> BatchLoopback:
        handler = type("Handler", (_BatchHandler,), {"loopback": self})
        from tests.e2e.server import _Server

        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="loopback-batches",
            daemon=True,
        )
        self._thread.start()
        return self

    def __enter__(self) -> BatchLoopback:
        return self.start()

    # --- script

    def plan(self, *plans: BatchPlan) -> None:
        with self._batch_lock:
            self._plans.extend(plans)

    def finish(self) -> None:
        """Let every held batch end at its next poll."""
        with self._batch_lock:
            for batch in self.batches.values():
                batch.finished = True

    def polled(self) -> int:
        with self._batch_lock:
            return self.polls

    # --- the protocol's answers

    def submit(self, lines: list[dict[str, Any]], size: int) -> tuple[int, Any]:
        most, most_bytes = LIMITS[self.protocol]
        with self._batch_lock:
            if self.refusal is not None:
                refusal, self.refusal = self.refusal, None
                return refusal.status, refusal.body
            if not lines or len(lines) > most or size > most_bytes:
                return 400, error_body(400, f"{len(lines)} requests, {size} bytes: over limits")
            self.submissions.append({"requests": len(lines), "bytes": size})
            plan = self._plans.pop(0) if self._plans else BatchPlan()
            prefix = {"openrouter": "batch", "openai": "batch", "anthropic": "msgbatch"}
            batch = Batch(
                f"{prefix[self.protocol]}_{uuid.uuid4().hex[:12]}", self.protocol, lines, plan
            )
            self.batches[batch.id] = batch
        return 202 if self.protocol == "openrouter" else 200, self.batch_object(batch, "new")

    def fault(self) -> Behaviour | None:
        """The next scripted poll fault, counted as a poll."""
        with self._batch_lock:
            if not self.poll_faults:
                return None
            self.polls += 1
            return self.poll_faults.pop(0)

    def poll(self, batch_id: str) -> tuple[int, Any]:
        with self._batch_lock:
            self.polls += 1
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, error_body(404, f"no batch {batch_id}")
            batch.polls += 1
            status, ended = batch.status()
        if ended and batch.results is None:
            self._end(batch)
        return 200, self.batch_object(batch, status, ended)

    def _end(self, batch: Batch) -> None:
        """Answer the batch's requests as the live server would, as the plan says."""
        plan = batch.plan
        ran = len(batch.lines) if plan.end == "completed" else (plan.answered or 0)
        if plan.end == "failed":
            ran = 0
        results: list[dict[str, Any]] = []
        succeeded = failed = 0
        for n, line in enumerate(batch.lines):
            body = line["body"]
            prompt = _prompt_of(body)
            if n >= ran:
                results.append(self._unrun(line, plan.end))
                failed += 1
            elif any(marker in prompt for marker in plan.fail_markers):
                results.append(self._failed(line))
                failed += 1
            else:
                results.append(self._answered(line, body, prompt))
                succeeded += 1
        batch.results = results if plan.end != "failed" else []
        batch.counts = {"total": len(batch.lines), "completed": succeeded, "failed": failed}

    def _answered(self, line: dict[str, Any], body: Any, prompt: str) -> dict[str, Any]:
        request = ReceivedRequest(
            0, "POST", "/chat/completions", {}, body, prompt, time.monotonic()
        )
        behaviour = self._choose(request)
        if behaviour.body is not None or behaviour.status != 200:
            status = behaviour.status
            payload = (
                behaviour.body if isinstance(behaviour.body, dict) else error_body(status, "x")
            )
            return self._shaped(line, status, payload)
        data = self.completion_body(request, behaviour)
        if "usage" in data and data["usage"].get("cost") is not None:
            data["usage"]["cost"] = data["usage"]["cost"] * BATCH_DISCOUNT
        if self.protocol != "openrouter":
            data.get("usage", {}).pop("cost", None)  # only OpenRouter reports a cost
        return self._shaped(line, 200, data)

    def _shaped(self, line: dict[str, Any], status: int, data: dict[str, Any]) -> dict[str, Any]:
        cid = line["custom_id"]
        if self.protocol == "anthropic":
            if status != 200:
                error = {"type": "invalid_request_error", "message": str(data)}
                return {
                    "custom_id": cid,
                    "result": {"type": "errored", "error": {"type": "error", "error": error}},
                }
            return {"custom_id": cid, "result": {"type": "succeeded", "message": _as_message(data)}}
        response = {"status_code": status, "request_id": uuid.uuid4().hex, "body": data}
        return {
            "id": f"req_{uuid.uuid4().hex[:8]}",
            "custom_id": cid,
            "response": response,
            "error": None,
        }

    def _failed(self, line: dict[str, Any]) -> dict[str, Any]:
        return self._shaped(line, 400, error_body(400, "Provider returned error: invalid request"))

    def _unrun(self, line: dict[str, Any], end: str) -> dict[str, Any]:
        cid = line["custom_id"]
        if self.protocol == "anthropic":
            kind = {"expired": "expired", "cancelled": "canceled"}.get(end, "expired")
            return {"custom_id": cid, "result": {"type": kind}}
        code = {"expired": "batch_expired", "cancelled": "batch_cancelled"}.get(end, "batch_failed")
        message = f"This request could not be executed before the batch ended ({end})."
        return {"custom_id": cid, "response": None, "error": {"code": code, "message": message}}

    def batch_object(self, batch: Batch, status: str, ended: bool = False) -> dict[str, Any]:
        counts = batch.counts if ended else {"total": len(batch.lines), "completed": 0, "failed": 0}
        if self.protocol == "anthropic":
            return self._anthropic_object(batch, status, ended)
        data: dict[str, Any] = {
            "id": batch.id,
            "object": "batch",
            "status": "validating" if status == "new" else status,
            "request_counts": counts,
        }
        if ended and self.protocol == "openrouter":
            if batch.plan.end == "failed":
                data["error"] = {"message": batch.plan.message}
            if self.inline and batch.results:
                data["results"] = batch.results
        if ended and self.protocol == "openai":
            self._files_of(batch, data)
        return data

    def _files_of(self, batch: Batch, data: dict[str, Any]) -> None:
        good = [
            r
            for r in batch.results or []
            if r.get("response") and r["response"]["status_code"] == 200
        ]
        bad = [r for r in batch.results or [] if r not in good]
        if batch.plan.end == "failed":
            data["errors"] = {
                "object": "list",
                "data": [{"code": "invalid", "message": batch.plan.message, "line": 1}],
            }
            return
        for name, lines in (("output_file_id", good), ("error_file_id", bad)):
            if lines:
                file_id = f"file-{name[:3]}-{batch.id}"
                self.files[file_id] = "".join(json.dumps(x) + "\n" for x in lines).encode()
                data[name] = file_id

    def _anthropic_object(self, batch: Batch, status: str, ended: bool) -> dict[str, Any]:
        processing = 0 if ended else len(batch.lines)
        results = batch.results or []
        kinds = [r["result"]["type"] for r in results]
        data: dict[str, Any] = {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "in_progress" if status == "new" else status,
            "request_counts": {
                "processing": processing,
                "succeeded": kinds.count("succeeded"),
                "errored": kinds.count("errored"),
                "canceled": kinds.count("canceled"),
                "expired": kinds.count("expired"),
            },
            "results_url": None,
        }
        if ended:
            data["results_url"] = f"{self.root}/v1/messages/batches/{batch.id}/results"
        return data

    def result_lines(self, batch_id: str) -> bytes | None:
        with self._batch_lock:
            self.result_reads += 1
            batch = self.batches.get(batch_id)
        if batch is None or batch.results is None:
            return None
        return "".join(json.dumps(r) + "\n" for r in batch.results).encode()

    def result_page(self, batch_id: str, cursor: str | None) -> dict[str, Any] | None:
        with self._batch_lock:
            self.result_reads += 1
            batch = self.batches.get(batch_id)
        if batch is None or batch.results is None:
            return None
        start = int(cursor or 0)
        page = batch.results[start : start + self.page_size]
        following = start + self.page_size
        return {
            "data": page,
            "next_cursor": str(following) if following < len(batch.results) else None,
        }


def _as_message(data: dict[str, Any]) -> dict[str, Any]:
    """A chat completion as the Messages API message it stands for."""
    choice = data["choices"][0]
    stops = {"stop": "end_turn", "length": "max_tokens"}
    usage = data.get("usage") or {}
    return {
        "id": f"msg_{uuid.uuid4().hex[:12]}",
        "type": "message",
        "role": "assistant",
        "model": data.get("model"),
        "content": [{"type": "text", "text": choice["message"]["content"] or ""}],
        "stop_reason": stops.get(choice.get("finish_reason"), "end_turn"),
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0),
            "output_tokens": usage.get("completion_tokens", 0),
        },
    }


def _multipart(content_type: str, raw: bytes) -> dict[str, bytes]:
    message = email.parser.BytesParser(policy=email.policy.default).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    parts: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            parts[name] = payload
    return parts


class _BatchHandler(_Handler):
    loopback: BatchLoopback

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    def _query(self, name: str) -> str | None:
        from urllib.parse import parse_qs

        values = parse_qs(self.path.partition("?")[2]).get(name)
        return values[0] if values else None

    def _lines(self, data: bytes | None) -> None:
        if data is None:
            self._send(404, error_body(404, "no such results"))
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/jsonl")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        lb, path = self.loopback, self._path()
        parts = path.split("/")
        if "batches" in parts and path.endswith("/results"):
            batch_id = parts[-2]
            if lb.protocol == "anthropic":
                self._lines(lb.result_lines(batch_id))
            else:
                page = lb.result_page(batch_id, self._query("cursor"))
                self._send(200 if page is not None else 404, page or error_body(404, "none"))
            return
        if "files" in parts and path.endswith("/content"):
            with lb._batch_lock:
                lb.result_reads += 1
            self._lines(lb.files.get(parts[-2]))
            return
        if len(parts) >= 2 and parts[-2] == "batches":
            fault = lb.fault()
            if fault is not None and fault.drop:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif fault is not None:
                self._send(fault.status, fault.body, fault.headers)
            else:
                self._send(*lb.poll(parts[-1]))
            return
        super().do_GET()

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        lb, path = self.loopback, self._path()
        if path.endswith("/chat/completions"):
            super().do_POST()
            return
        raw = self._read_body()
        if path.endswith("/files"):
            parts = _multipart(self.headers.get("Content-Type", ""), raw)
            file_id = f"file-in-{uuid.uuid4().hex[:12]}"
            with lb._batch_lock:
                lb.files[file_id] = parts.get("file", b"")
            self._send(
                200,
                {"id": file_id, "object": "file", "purpose": parts.get("purpose", b"").decode()},
            )
            return
        if not path.endswith("/batches"):
            self._send(404, error_body(404, f"no route for POST {path}"))
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, error_body(400, "not JSON"))
            return
        if lb.protocol == "openai":
            content = lb.files.get(body.get("input_file_id", ""), b"")
            lines = [json.loads(x) for x in content.decode().splitlines() if x.strip()]
            status, payload = lb.submit(lines, len(content))
        elif lb.protocol == "anthropic":
            requests = body.get("requests") or []
            lines = [
                {"custom_id": r["custom_id"], "body": _chat_body(r["params"])} for r in requests
            ]
            status, payload = lb.submit(lines, len(raw))
        else:
            status, payload = lb.submit(body.get("requests") or [], len(raw))
        self._send(status, payload)


def _chat_body(params: dict[str, Any]) -> dict[str, Any]:
    """A Messages API request as the chat body the live responder reads (its prompt)."""
    messages = list(params.get("messages") or [])
    if params.get("system"):
        messages.insert(0, {"role": "system", "content": params["system"]})
    return {**params, "messages": messages}
