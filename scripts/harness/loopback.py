"""A loopback OpenAI-compatible server for benchmarks, in a process of its own.

It answers `POST .../chat/completions` as OpenRouter does (a chat completion with usage and
cost) after a configurable latency, with the verdict an `expect:good` / `expect:bad` marker in
the prompt names (the suites of `harness.suites` carry one per case), and `GET .../models`
with a two-model catalog. A fault rate (seeded) answers that share of requests with a transient
fault instead: a 429 with `Retry-After: 0`, a 500, 502 or 503, a 200 carrying an error, or a
dropped connection. `GET /_stats` counts the requests; with `--keep-bodies`, `GET /_bodies`
returns every request body as sent (base64). It also speaks OpenRouter's Batch API at its
plainest (`POST .../batches` with the requests inline; `GET .../batches/{id}` is `in_progress`
for `--batch-polls` polls, then `completed` with every result inline, at `BATCH_DISCOUNT` of
the live cost), for `bench_batch.py`; the tests' emulation of every batch protocol, with its
failures, is `tests/e2e/batch_server.py`.

It runs in its own process (`Loopback`, a context manager, starts it) so that it never shares
a GIL with what is measured, and uses the standard library alone, so it starts in
milliseconds. Run it by hand with `python scripts/harness/loopback.py --latency 0.1`.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API_PREFIX = "/api/v1"
EXPECT_MARKER = re.compile(r"expect[:=](good|bad)\b", re.IGNORECASE)
CATALOG = [
    {
        "id": "openai/gpt-4o-mini",
        "name": "OpenAI: GPT-4o-mini",
        "context_length": 128000,
        "pricing": {"prompt": "0.00000015", "completion": "0.0000006"},
        "top_provider": {"context_length": 128000, "max_completion_tokens": 16384},
        "supported_parameters": ["max_tokens", "temperature", "seed", "response_format"],
    },
    {
        "id": "anthropic/claude-3.5-haiku",
        "name": "Anthropic: Claude 3.5 Haiku",
        "context_length": 200000,
        "pricing": {"prompt": "0.0000008", "completion": "0.000004"},
        "top_provider": {"context_length": 200000, "max_completion_tokens": 8192},
        "supported_parameters": ["max_tokens", "temperature"],
    },
]
PRICE_IN, PRICE_OUT = 0.00000015, 0.0000006  # per token, whatever the model
BATCH_DISCOUNT = 0.5
FAULTS = ("429", "500", "502", "503", "error-in-200", "dropped")


class Answers:
    """What the server answers, and what it counts; shared by the handler threads."""

    def __init__(
        self,
        latency: float,
        fault_rate: float,
        seed: int,
        keep_bodies: bool,
        batch_polls: int = 1,
    ) -> None:
        self.latency = latency
        self.batch_polls = batch_polls
        self.batches: dict[str, tuple[list[Any], int]] = {}  # id -> (requests, polls so far)
        self.fault_rate = fault_rate
        self.keep_bodies = keep_bodies
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.bodies: list[bytes] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def arrived(self, raw: bytes) -> str | None:
        """Count a completion request; the fault to answer it with, if it draws one."""
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self.keep_bodies:
                self.bodies.append(raw)
            if self.fault_rate and self._rng.random() < self.fault_rate:
                return self._rng.choice(FAULTS)
        return None

    def done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def batch(self, requests: list[Any]) -> dict[str, Any]:
        """Accept a batch: its id and first status, as OpenRouter answers `202 Accepted`."""
        batch_id = f"batch_{uuid.uuid4().hex[:16]}"
        with self._lock:
            self.batches[batch_id] = (requests, 0)
        return {"id": batch_id, "status": "validating", "request_counts": _counts(requests, 0)}

    def poll(self, batch_id: str) -> dict[str, Any] | None:
        """A batch as this poll finds it: in progress, then completed with its results."""
        with self._lock:
            if batch_id not in self.batches:
                return None
            requests, polls = self.batches[batch_id]
            self.batches[batch_id] = (requests, polls + 1)
        if polls < self.batch_polls:
            return {"id": batch_id, "status": "in_progress", "request_counts": _counts(requests, 0)}
        results = [_batch_result(item) for item in requests]
        return {
            "id": batch_id,
            "status": "completed",
            "request_counts": _counts(requests, len(requests)),
            "results": results,
        }


def _counts(requests: list[Any], completed: int) -> dict[str, int]:
    return {"total": len(requests), "completed": completed, "failed": 0}


def _batch_result(item: Any) -> dict[str, Any]:
    """One request of a batch answered as the live server answers it, at the batch price."""
    body = item.get("body") if isinstance(item, dict) else None
    raw = json.dumps(body, ensure_ascii=False, separators=(",", ":"))  # as httpx's json= sends
    answer = completion(body, len(raw.encode()))
    answer["usage"]["cost"] *= BATCH_DISCOUNT
    custom_id = item.get("custom_id") if isinstance(item, dict) else None
    return {"custom_id": custom_id, "response": {"status_code": 200, "body": answer}}


def verdict_of(body: Any) -> str:
    """The verdict the prompt's `expect:` marker names, `good` when there is none."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        found = EXPECT_MARKER.search(content) if isinstance(content, str) else None
        if found:
            return found.group(1).lower()
    return "good"


def completion(body: Any, raw_size: int) -> dict[str, Any]:
    """A chat completion as OpenRouter sends one."""
    verdict = verdict_of(body)
    content = json.dumps({"assessment": verdict, "explanation": f"The code looks {verdict}."})
    prompt_tokens, completion_tokens = max(1, raw_size // 4), len(content) // 4
    model = body.get("model") if isinstance(body, dict) else None
    return {
        "id": f"gen-{uuid.uuid4().hex[:24]}",
        "provider": "Loopback",
        "model": model if isinstance(model, str) else "unknown/model",
        "object": "chat.completion",
        "created": int(time.time()),
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "native_finish_reason": "stop",
                "logprobs": None,
                "message": {"role": "assistant", "content": content, "refusal": None},
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "cost": prompt_tokens * PRICE_IN + completion_tokens * PRICE_OUT,
        },
    }


def error_body(code: int, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # a client that went away
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms stalls
    server_version = "loopback/1"
    answers: Answers

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return None

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        path = self.path.split("?", 1)[0].rstrip("/")
        a = self.answers
        if path.endswith("/models"):
            self._send(200, {"data": CATALOG})
        elif path == "/_stats":
            self._send(200, {"requests": a.requests, "max_in_flight": a.max_in_flight})
        elif path == "/_bodies":
            self._send(200, {"bodies": [base64.b64encode(b).decode() for b in a.bodies]})
        elif path.rpartition("/")[0].endswith("/batches"):
            found = a.poll(path.rpartition("/")[2])
            if found is None:
                self._send(404, error_body(404, f"no batch {path.rpartition('/')[2]}"))
            else:
                self._send(200, found)
        else:
            self._send(404, error_body(404, f"no route for GET {path}"))

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.split("?", 1)[0].rstrip("/").endswith("/batches"):
            self._submit(raw)
            return
        if not self.path.split("?", 1)[0].rstrip("/").endswith("/chat/completions"):
            self._send(404, error_body(404, f"no route for POST {self.path}"))
            return
        fault = self.answers.arrived(raw)
        try:
            if self.answers.latency > 0:
                time.sleep(self.answers.latency)
            if fault is None:
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, error_body(400, "the body is not JSON"))
                    return
                self._send(200, completion(body, len(raw)))
            else:
                self._fault(fault)
        finally:
            self.answers.done()

    def _submit(self, raw: bytes) -> None:
        try:
            requests = json.loads(raw).get("requests")
        except (ValueError, AttributeError):
            requests = None
        if not isinstance(requests, list) or not requests:
            self._send(400, error_body(400, "a batch needs a non-empty `requests` array"))
            return
        self._send(202, self.answers.batch(requests))

    def _fault(self, fault: str) -> None:
        if fault == "dropped":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        elif fault == "429":
            self._send(429, error_body(429, "Rate limit exceeded"), {"Retry-After": "0"})
        elif fault == "error-in-200":
            self._send(200, error_body(502, "Provider returned error"))
        else:
            self._send(int(fault), error_body(int(fault), "Provider returned error"))


def serve(answers: Answers, until_stdin_closes: bool) -> None:
    """Serve on 127.0.0.1 at a free port; print `base_url <url>` once listening."""
    handler = type("Handler", (_Handler,), {"answers": answers})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    print(f"base_url http://127.0.0.1:{server.server_address[1]}{API_PREFIX}", flush=True)
    try:
        if until_stdin_closes:
            sys.stdin.read()
        else:
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class Loopback:
    """The server in a child process, stopped when the `with` block ends (or by `stop()`)."""

    def __init__(
        self,
        latency: float = 0.0,
        *,
        fault_rate: float = 0.0,
        seed: int = 0,
        keep_bodies: bool = False,
        batch_polls: int = 1,
    ) -> None:
        command = [sys.executable, __file__, "--latency", str(latency), "--until-stdin-closes"]
        command += ["--fault-rate", str(fault_rate), "--seed", str(seed)]
        command += ["--batch-polls", str(batch_polls)]
        command += ["--keep-bodies"] if keep_bodies else []
        self.latency = latency
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        found = re.match(r"base_url (\S+)", line)
        if not found:
            self.stop()
            raise RuntimeError(f"the loopback server did not start: {line!r}")
        self.base_url = found.group(1)
        self.root = self.base_url.removesuffix(API_PREFIX)

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(self.root + path) as response:  # noqa: S310 - loopback
            return json.load(response)

    def requests(self) -> int:
        """Completion requests answered so far."""
        return int(self._get("/_stats")["requests"])

    def bodies(self) -> list[bytes]:
        """Every completion request body as sent (the server must keep them)."""
        return [base64.b64decode(b) for b in self._get("/_bodies")["bodies"]]

    def stop(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Loopback:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    p.add_argument("--fault-rate", type=float, default=0.0, help="share of requests faulted")
    p.add_argument("--seed", type=int, default=0, help="the seed of the faults' draw")
    p.add_argument("--keep-bodies", action="store_true", help="keep every request body")
    p.add_argument(
        "--batch-polls", type=int, default=1, help="polls a batch is in progress before it ends"
    )
    p.add_argument(
        "--until-stdin-closes",
        action="store_true",
        help="exit when standard input reaches its end (the parent has gone)",
    )
    args = p.parse_args(argv)
    answers = Answers(args.latency, args.fault_rate, args.seed, args.keep_bodies, args.batch_polls)
    serve(answers, args.until_stdin_closes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
