"""A loopback server that speaks OpenRouter's wire format, for end-to-end tests.

It serves `POST .../chat/completions` and `GET .../models` on 127.0.0.1 at a free port, from a
background thread (`LoopbackServer`, a context manager). The benchmarks have a server of their
own, in a process of its own (scripts/harness/loopback.py).

What it answers is scripted per request. A `Rule` matches requests whose prompt contains a marker
(a case's code, its id...) and answers them with its queue of `Behaviour`s in order; requests no
rule claims take the next behaviour of the global queue (`server.enqueue`), then the default
responder, which answers the verdict named by an `expect:good` / `expect:bad` marker in the prompt
(`good` when there is none). Every request is recorded (headers, body, what was answered) so tests
can check what the tool sent and how often it asked for each case.

Only the standard library is used, so the server needs no dependency and starts in milliseconds.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API_PREFIX = "/api/v1"
DEFAULT_PROVIDER = "Loopback"
EXPECT_MARKER = re.compile(r"expect[:=](good|bad)\b", re.IGNORECASE)

MODELS: list[dict[str, Any]] = [
    {
        "id": "openai/gpt-4o-mini",
        "canonical_slug": "openai/gpt-4o-mini",
        "name": "OpenAI: GPT-4o-mini",
        "created": 1721260800,
        "description": "GPT-4o mini is OpenAI's small, affordable model.",
        "context_length": 128000,
        "architecture": {
            "modality": "text+image->text",
            "input_modalities": ["text", "image"],
            "output_modalities": ["text"],
            "tokenizer": "GPT",
            "instruct_type": None,
        },
        "pricing": {
            "prompt": "0.00000015",
            "completion": "0.0000006",
            "request": "0",
            "image": "0.000217",
            "web_search": "0",
            "internal_reasoning": "0",
        },
        "top_provider": {
            "context_length": 128000,
            "max_completion_tokens": 16384,
            "is_moderated": True,
        },
        "per_request_limits": None,
        "supported_parameters": [
            "max_tokens",
            "temperature",
            "top_p",
            "seed",
            "stop",
            "response_format",
            "structured_outputs",
            "tools",
            "tool_choice",
            "logprobs",
        ],
    },
    {
        "id": "anthropic/claude-3.5-haiku",
        "canonical_slug": "anthropic/claude-3-5-haiku",
        "name": "Anthropic: Claude 3.5 Haiku",
        "created": 1730678400,
        "description": "Claude 3.5 Haiku is fast and cheap.",
        "context_length": 200000,
        "architecture": {
            "modality": "text+image->text",
            "input_modalities": ["text", "image"],
            "output_modalities": ["text"],
            "tokenizer": "Claude",
            "instruct_type": None,
        },
        "pricing": {
            "prompt": "0.0000008",
            "completion": "0.000004",
            "request": "0",
            "image": "0",
            "web_search": "0",
            "internal_reasoning": "0",
        },
        "top_provider": {
            "context_length": 200000,
            "max_completion_tokens": 8192,
            "is_moderated": True,
        },
        "per_request_limits": None,
        "supported_parameters": [
            "max_tokens",
            "temperature",
            "top_p",
            "stop",
            "tools",
            "tool_choice",
        ],
    },
    {
        "id": "meta-llama/llama-3.1-8b-instruct",
        "canonical_slug": "meta-llama/llama-3.1-8b-instruct",
        "name": "Meta: Llama 3.1 8B Instruct",
        "created": 1721692800,
        "description": "Meta's 8B instruct model.",
        "context_length": 131072,
        "architecture": {
            "modality": "text->text",
            "input_modalities": ["text"],
            "output_modalities": ["text"],
            "tokenizer": "Llama3",
            "instruct_type": "llama3",
        },
        "pricing": {
            "prompt": "0.00000002",
            "completion": "0.00000003",
            "request": "0",
            "image": "0",
            "web_search": "0",
            "internal_reasoning": "0",
        },
        "top_provider": {
            "context_length": 131072,
            "max_completion_tokens": 16384,
            "is_moderated": False,
        },
        "per_request_limits": None,
        "supported_parameters": [
            "max_tokens",
            "temperature",
            "top_p",
            "seed",
            "stop",
            "response_format",
            "structured_outputs",
        ],
    },
    {
        "id": "deepseek/deepseek-r1:free",
        "canonical_slug": "deepseek/deepseek-r1",
        "name": "DeepSeek: R1 (free)",
        "created": 1737331200,
        "description": "A reasoning model, free tier.",
        "context_length": 163840,
        "architecture": {
            "modality": "text->text",
            "input_modalities": ["text"],
            "output_modalities": ["text"],
            "tokenizer": "DeepSeek",
            "instruct_type": "deepseek-r1",
        },
        "pricing": {
            "prompt": "0",
            "completion": "0",
            "request": "0",
            "image": "0",
            "web_search": "0",
            "internal_reasoning": "0",
        },
        "top_provider": {
            "context_length": 163840,
            "max_completion_tokens": None,
            "is_moderated": False,
        },
        "per_request_limits": None,
        "supported_parameters": [
            "max_tokens",
            "temperature",
            "reasoning",
            "include_reasoning",
            "seed",
            "stop",
        ],
    },
]
FALLBACK_PRICING = {"prompt": "0.000001", "completion": "0.000002"}

# What a hostile server, or a model a code sample talked into it, can send: an OSC that
# retitles the terminal, CSI sequences that clear and colour it, a C1 CSI, a bell, and Textual
# markup (styles and an action link).
HOSTILE = (
    "\x1b]0;pwned-title\x07\x1b[2J\x1b[31mred\x1b[0m \x9b7m c1 \x07 "
    "[bold red]loud[/bold red] [@click=app.quit]quit[/]"
)


def hostile_models() -> list[dict[str, Any]]:
    """A `GET /models` catalog whose ids and names carry escape sequences and markup."""
    return [
        {**MODELS[0], "id": "evil/[bold]model[/bold]\x1b]0;pwned-title\x07", "name": HOSTILE},
        *MODELS[1:],
    ]


def verdict_json(verdict: str, explanation: str | None = None) -> str:
    text = explanation if explanation is not None else f"The code looks {verdict}."
    return json.dumps({"assessment": verdict, "explanation": text})


def error_body(code: int, message: str, **metadata: Any) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if metadata:
        error["metadata"] = metadata
    return {"error": error}


@dataclass(frozen=True)
class Behaviour:
    """One way of answering a request.

    With `body is None` and `status == 200` the server builds an OpenRouter chat completion
    from `content` and `finish_reason` (with usage and cost). Otherwise `body` (a dict sent as
    JSON, or a str sent as text/html) is sent with `status`. `drop` closes the socket without
    a reply; `delay` waits first.
    """

    name: str
    content: str | None = None
    finish_reason: str = "stop"
    choice_error: dict[str, Any] | None = None
    status: int = 200
    body: dict[str, Any] | str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    drop: bool = False
    served_model: str | None = None
    provider: str | None = None
    usage: bool = True
    cost: float | None = None  # usage.cost to report (default: tokens x the model's pricing)
    gate: int = 0  # first wait (up to 10 s) until this many requests are in flight
    reasoning: str | None = None  # the model's thinking, sent in `reasoning_field`
    reasoning_field: str = "reasoning"  # or reasoning_content (vLLM), reasoning_details
    reasoning_tokens: int = 0  # counted in completion_tokens too, as OpenRouter does
    trickle: float = 0.0  # send the headers, then the body one byte every `trickle` seconds

    def after(self, seconds: float) -> Behaviour:
        """The same answer, `seconds` later."""
        return replace(self, delay=self.delay + seconds, name=f"{self.name}+delay")


# --- behaviours ------------------------------------------------------------------------------


def answer(verdict: str = "good", explanation: str | None = None, **kw: Any) -> Behaviour:
    return Behaviour("json", content=verdict_json(verdict, explanation), **kw)


def fenced(verdict: str = "good", **kw: Any) -> Behaviour:
    return Behaviour("fenced", content=f"```json\n{verdict_json(verdict)}\n```", **kw)


def prose(verdict: str = "good", **kw: Any) -> Behaviour:
    content = (
        "I reviewed the handler against the rules.\n\n"
        f"{verdict_json(verdict)}\n\nLet me know if you need more detail."
    )
    return Behaviour("prose", content=content, **kw)


def garbage(content: str = "I am not sure; it depends on the context.", **kw: Any) -> Behaviour:
    return Behaviour("garbage", content=content, **kw)


def reply(content: str, finish_reason: str = "stop", **kw: Any) -> Behaviour:
    return Behaviour("reply", content=content, finish_reason=finish_reason, **kw)


def truncated(content: str = '{"assessment": "ba', **kw: Any) -> Behaviour:
    return Behaviour("length", content=content, finish_reason="length", **kw)


def empty(**kw: Any) -> Behaviour:
    return Behaviour("empty", content="", **kw)


def finish_error(code: int = 502, message: str = "Upstream provider error", **kw: Any) -> Behaviour:
    return Behaviour(
        "finish_error",
        content="",
        finish_reason="error",
        choice_error={"code": code, "message": message},
        **kw,
    )


def error_in_body(
    code: int = 502, message: str = "Provider returned error", **kw: Any
) -> Behaviour:
    """A 200 whose body is an error and has no choices (OpenRouter does this mid-generation)."""
    return Behaviour(
        "error_in_body", body=error_body(code, message, provider_name="Loopback"), **kw
    )


def garbage_body(text: str = "<html><body>Bad gateway</body></html>", **kw: Any) -> Behaviour:
    """A 200 whose body is not JSON at all."""
    return Behaviour("garbage_body", body=text, **kw)


def http_error(
    status: int, message: str, retry_after: float | str | None = None, **kw: Any
) -> Behaviour:
    headers: tuple[tuple[str, str], ...] = ()
    if retry_after is not None:
        value = retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
        headers = (("Retry-After", value),)
    return Behaviour(
        f"http_{status}",
        status=status,
        body=error_body(status, message),
        headers=headers + tuple(kw.pop("headers", ())),
        **kw,
    )


def rate_limited(retry_after: float | str | None = 1, **kw: Any) -> Behaviour:
    return http_error(429, "Rate limit exceeded: free-models-per-min.", retry_after, **kw)


def server_error(status: int = 500, **kw: Any) -> Behaviour:
    messages = {
        500: "Internal Server Error",
        502: "Provider returned error",
        503: "No available provider could serve this request",
        524: "Timeout",
        529: "Provider overloaded",
    }
    return http_error(status, messages.get(status, "Server error"), **kw)


def unauthorized(**kw: Any) -> Behaviour:
    return http_error(401, "No auth credentials found", **kw)


def no_credits(**kw: Any) -> Behaviour:
    return http_error(
        402,
        "This request requires more credits, or fewer max_tokens. You requested up to "
        "1024 tokens, but can only afford 12.",
        **kw,
    )


def not_found(model: str = "nope/none", **kw: Any) -> Behaviour:
    return http_error(404, f"No endpoints found for {model}.", **kw)


def bad_request(message: str = "Provider returned error: invalid request", **kw: Any) -> Behaviour:
    return http_error(400, message, **kw)


def forbidden(message: str = "Your input was flagged by moderation", **kw: Any) -> Behaviour:
    return http_error(403, message, **kw)


def trickled(seconds_per_byte: float = 1.0, then: Behaviour | None = None) -> Behaviour:
    """`then` (default a good answer) with its body sent one byte at a time: a stalled server."""
    return replace(then or answer(), trickle=seconds_per_byte, name="trickle")


def raw_body(text: str, status: int = 200, **kw: Any) -> Behaviour:
    """`text` sent as the body exactly (JSON the server could not build: too deep, odd types)."""
    return Behaviour("raw", status=status, body=text, **kw)


def dropped(**kw: Any) -> Behaviour:
    return Behaviour("dropped", drop=True, **kw)


THINKING_BUDGET = 4096  # a reasoning model given fewer max_tokens thinks until cut off


def thinking_model(field: str = "reasoning", budget: int = THINKING_BUDGET) -> Responder:
    """A reasoning model as OpenRouter serves one: its thinking counts against max_tokens.

    With `max_tokens` under `budget` it answers `finish_reason: "length"`, empty content and
    text only in the reasoning field; with enough it thinks (mentioning the effort asked
    for, if any), then answers the verdict the prompt's `expect:` marker names.
    """

    def respond(request: ReceivedRequest) -> Behaviour:
        body = request.body if isinstance(request.body, dict) else {}
        max_tokens = body.get("max_tokens")
        effort = (body.get("reasoning") or {}).get("effort")
        thought = f"Let me check each query against the rules (effort {effort or 'default'})."
        if isinstance(max_tokens, int) and max_tokens < budget:
            return Behaviour(
                "thinking_cut",
                content="",
                finish_reason="length",
                reasoning=thought + " First, the tenant filter",
                reasoning_field=field,
                reasoning_tokens=max_tokens,
            )
        verdict = expected_verdict(request)
        return replace(
            verdict,
            name="thinking",
            reasoning=thought,
            reasoning_field=field,
            reasoning_tokens=budget // 2,
        )

    return respond


def delayed(seconds: float, then: Behaviour | None = None) -> Behaviour:
    return (then or answer()).after(seconds)


def gated(in_flight: int, then: Behaviour) -> Behaviour:
    """`then`, once `in_flight` requests are being served at the same time."""
    return replace(then, gate=in_flight, name=f"{then.name}+gate")


# --- requests and rules ----------------------------------------------------------------------


@dataclass
class ReceivedRequest:
    """One request as the server saw it, and what it answered."""

    seq: int
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None
    prompt: str  # the messages' contents, joined
    received_at: float
    behaviour: str = ""
    status: int | None = None
    response: Any = None  # the JSON answered, or None
    answered_at: float | None = None
    in_flight: int = 0  # requests unanswered when this one arrived, itself included
    query: str = ""  # the URL's query string, as sent
    raw: bytes = b""  # the body exactly as sent

    @property
    def is_completion(self) -> bool:
        return self.method == "POST" and self.path.endswith("/chat/completions")

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


Responder = Callable[[ReceivedRequest], Behaviour]


@dataclass
class Rule:
    """Answers requests whose prompt contains `marker` (or that `match` accepts) in order.

    When the queue runs out, `then` answers the rest; with `then=None` later requests fall
    through to the global queue and the default responder.
    """

    marker: str | None
    behaviours: list[Behaviour]
    then: Behaviour | None = None
    match: Callable[[ReceivedRequest], bool] | None = None
    hits: int = 0

    def matches(self, request: ReceivedRequest) -> bool:
        if self.match is not None:
            return self.match(request)
        return self.marker is not None and self.marker in request.prompt

    def take(self) -> Behaviour | None:
        if self.behaviours:
            self.hits += 1
            return self.behaviours.pop(0)
        if self.then is not None:
            self.hits += 1
        return self.then


def expected_verdict(request: ReceivedRequest) -> Behaviour:
    """The default: the verdict an `expect:good|bad` marker names, else `good`."""
    found = EXPECT_MARKER.search(request.prompt)
    return answer(found.group(1).lower() if found else "good")


def _prompt_of(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    parts = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)


class LoopbackServer:
    """The server and its script. `with LoopbackServer() as server:` starts and stops it."""

    def __init__(
        self,
        *,
        default: Responder = expected_verdict,
        delay: float = 0.0,
        require_key: str | None = None,
        keep_bodies: bool = True,
        provider: str = DEFAULT_PROVIDER,
        models: list[dict[str, Any]] | None = None,
    ) -> None:
        self.default = default
        self.delay = delay
        self.require_key = require_key
        self.keep_bodies = keep_bodies
        self.provider = provider
        self.models = MODELS if models is None else models
        self.requests: list[ReceivedRequest] = []
        self.request_count = 0
        self.catalog_requests = 0  # GET /models asked
        self.in_flight = 0
        self.max_in_flight = 0
        self._rules: list[Rule] = []
        self._queue: list[Behaviour] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._answers = 0  # completions answered or being answered
        self._hold_after: int | None = None  # completions after this many wait for release()
        self._released = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._pricing = {m["id"]: m["pricing"] for m in self.models}

    # --- lifecycle

    def start(self) -> LoopbackServer:
        handler = type("Handler", (_Handler,), {"loopback": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="loopback-openrouter",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()  # nothing held outlives the server
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the server is not running"
        return int(self._httpd.server_address[1])

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What to pass as --base-url (the client appends /chat/completions)."""
        return self.root + API_PREFIX

    # --- script

    def script(
        self,
        marker: str | None,
        *behaviours: Behaviour,
        then: Behaviour | None = None,
        match: Callable[[ReceivedRequest], bool] | None = None,
    ) -> Rule:
        """Answer requests containing `marker` with `behaviours` in order, then `then`."""
        rule = Rule(marker, list(behaviours), then, match)
        with self._lock:
            self._rules.append(rule)
        return rule

    def always(self, marker: str, behaviour: Behaviour) -> Rule:
        return self.script(marker, then=behaviour)

    def hold_after(self, answered: int) -> None:
        """Answer the next `answered` completions as scripted; hold every later one (up to
        60 s) until `release()`: a barrier that keeps a run's later cases in flight while the
        test acts, instead of a delay that a loaded machine may outlast."""
        with self._lock:
            self._released.clear()
            self._hold_after = self._answers + answered

    def release(self) -> None:
        self._released.set()

    def enqueue(self, *behaviours: Behaviour) -> None:
        """Answer the next requests that no rule claims with these, in order."""
        with self._lock:
            self._queue.extend(behaviours)

    def reset(self) -> None:
        with self._lock:
            self._rules.clear()
            self._queue.clear()
            self.requests.clear()
            self.request_count = 0
            self.max_in_flight = 0

    def _choose(self, request: ReceivedRequest) -> Behaviour:
        with self._lock:
            for rule in self._rules:
                if rule.matches(request):
                    chosen = rule.take()
                    if chosen is not None:
                        return chosen
            if self._queue:
                return self._queue.pop(0)
        return self.default(request)

    # --- what was asked

    def completions(self) -> list[ReceivedRequest]:
        with self._lock:
            return [r for r in self.requests if r.is_completion]

    def requests_for(self, marker: str) -> list[ReceivedRequest]:
        return [r for r in self.completions() if marker in r.prompt]

    def count(self, marker: str) -> int:
        return len(self.requests_for(marker))

    # --- answering

    def _record(self, request: ReceivedRequest) -> None:
        with self._lock:
            self.request_count += 1
            request.seq = self.request_count
            self.in_flight += 1
            request.in_flight = self.in_flight
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._arrived.notify_all()
            if self.keep_bodies:
                self.requests.append(request)

    def _wait_for_in_flight(self, count: int, timeout: float = 10.0) -> None:
        with self._arrived:
            self._arrived.wait_for(lambda: self.in_flight >= count, timeout)

    def _finish(self, request: ReceivedRequest) -> None:
        """Mark a request answered, just before its reply goes out (once per request).

        Counting it out before the bytes leave means a client that got its reply never finds
        its finished request still counted in flight.
        """
        with self._lock:
            if request.answered_at is None:
                request.answered_at = time.monotonic()
                self.in_flight -= 1

    def completion_body(self, request: ReceivedRequest, b: Behaviour) -> dict[str, Any]:
        body = request.body if isinstance(request.body, dict) else {}
        model = str(body.get("model") or "unknown/model")
        content = b.content or ""
        prompt_tokens = max(1, len(request.prompt) // 4)
        completion_tokens = len(content) // 4 + b.reasoning_tokens
        pricing = self._pricing.get(model, FALLBACK_PRICING)
        cost = prompt_tokens * float(pricing["prompt"]) + completion_tokens * float(
            pricing["completion"]
        )
        if b.cost is not None:
            cost = b.cost
        choice: dict[str, Any] = {
            "logprobs": None,
            "finish_reason": b.finish_reason,
            "native_finish_reason": b.finish_reason,
            "index": 0,
            "message": {
                "role": "assistant",
                "content": content,
                "refusal": None,
                "reasoning": None,
            },
        }
        if b.reasoning is not None:
            message = choice["message"]
            if b.reasoning_field == "reasoning_details":
                message["reasoning_details"] = [
                    {"type": "reasoning.text", "text": b.reasoning, "format": "unknown", "index": 0}
                ]
            else:
                message[b.reasoning_field] = b.reasoning
        if b.choice_error is not None:
            choice["error"] = b.choice_error
        data: dict[str, Any] = {
            "id": f"gen-{uuid.uuid4().hex[:24]}",
            "provider": b.provider or self.provider,
            "model": b.served_model or model,
            "object": "chat.completion",
            "created": int(time.time()),
            "choices": [choice],
        }
        if b.usage:
            data["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "cost": cost,
                "is_byok": False,
                "prompt_tokens_details": {"cached_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": b.reasoning_tokens},
            }
        return data


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (killed, timed out) is part of the tests, not an error."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms stalls
    server_version = "loopback-openrouter/1"
    loopback: LoopbackServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return None

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(
        self,
        status: int,
        payload: Any,
        headers: Iterable[tuple[str, str]] = (),
        trickle: float = 0.0,
    ) -> None:
        if isinstance(payload, str):
            data, ctype = payload.encode(), "text/html; charset=utf-8"
        else:
            data, ctype = json.dumps(payload).encode(), "application/json"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if trickle <= 0:
            self.wfile.write(data)
            return
        self.wfile.flush()
        for i in range(len(data)):
            self.wfile.write(data[i : i + 1])
            self.wfile.flush()
            time.sleep(trickle)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/models"):
            with self.loopback._lock:
                self.loopback.catalog_requests += 1
            self._send(200, {"data": self.loopback.models})
        else:
            self._send(404, error_body(404, f"no route for GET {path}"))

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        raw = self._read_body()
        path = self.path.split("?", 1)[0].rstrip("/")
        if not path.endswith("/chat/completions"):
            self._send(404, error_body(404, f"no route for POST {path}"))
            return
        lb = self.loopback
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = ReceivedRequest(
            seq=0,
            method="POST",
            path=path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            prompt=_prompt_of(body),
            received_at=time.monotonic(),
            query=self.path.partition("?")[2],
            raw=raw,
        )
        lb._record(request)
        try:
            self._answer(request)
        finally:
            lb._finish(request)

    def _answer(self, request: ReceivedRequest) -> None:
        lb = self.loopback
        if not isinstance(request.body, dict) or not isinstance(request.body.get("messages"), list):
            self._reply(request, bad_request('Input required: specify "messages"'))
            return
        if (
            lb.require_key is not None
            and request.header("authorization") != f"Bearer {lb.require_key}"
        ):
            self._reply(request, unauthorized())
            return
        self._reply(request, lb._choose(request))

    def _reply(self, request: ReceivedRequest, b: Behaviour) -> None:
        lb = self.loopback
        with lb._lock:
            lb._answers += 1
            held = lb._hold_after is not None and lb._answers > lb._hold_after
        if held:
            lb._released.wait(60)
        if b.gate:
            self.loopback._wait_for_in_flight(b.gate)
        wait = b.delay + self.loopback.delay
        if wait > 0:
            time.sleep(wait)
        request.behaviour = b.name
        if b.drop:
            self.loopback._finish(request)
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        payload: Any
        if b.body is None and b.status == 200:
            payload = self.loopback.completion_body(request, b)
        else:
            payload = b.body if b.body is not None else error_body(b.status, b.name)
        request.status = b.status
        request.response = payload
        self.loopback._finish(request)
        self._send(b.status, payload, b.headers, b.trickle)
