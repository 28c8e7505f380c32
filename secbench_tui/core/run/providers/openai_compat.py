"""OpenRouter, or any OpenAI-compatible server, through async httpx.

The provider makes one attempt at a time and classifies how it failed (`core/retry.py`
decides whether and when to try again, and the engine does the waiting): retry it (timeouts,
dropped connections, 408/429/5xx and the same codes inside a 200 body), record it on the case
(400, 403, truncated or empty replies once retries are spent), or abort the run (401, 402,
unknown model), with a message that says what to do. Each attempt has one deadline,
`--timeout`, for connecting, the headers and every byte of the body. A reply that arrived keeps
its raw text, tokens and cost whatever is wrong with it. The API key is only ever sent in the
Authorization header: no error message, log line or record contains it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import random
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any
from urllib.parse import urlparse, urlsplit, urlunsplit

import httpx

from secbench_tui import __version__
from secbench_tui.core.models import Case, ChatRequest, Completion, JSONObject
from secbench_tui.core.run.http import async_client
from secbench_tui.core.run.providers import shallow_json
from secbench_tui.core.run.providers.base import RetryCallback, RetryNotice, RunAborted
from secbench_tui.core.run.providers.retry import (
    BACKOFF_BASE,
    RETRYABLE_STATUS,
    Failure,
    FailureKind,
    RetryHooks,
    RetryPolicy,
    Unreachable,
    backoff_delay,
    one_line,
    parse_retry_after,
    run_attempts,
    status_kind,
)
from secbench_tui.core.suites import security_bench
from secbench_tui.core.suites.prompts import Reply, response_format
from secbench_tui.core.untrusted import redact_url
from secbench_tui.core.usage import Reasoning, Usage

__all__ = [
    "RETRYABLE_STATUS",
    "ClientSettings",
    "OpenAICompatibleProvider",
    "backoff_delay",
    "parse_retry_after",
]

OPENROUTER_URL = "https://openrouter.ai/api/v1"
REFERER = "https://github.com/secbench-tui/secbench-tui"
TITLE = "secbench-tui"


@dataclass
class ClientSettings:
    base_url: str = OPENROUTER_URL
    api_key: str | None = field(default=None, repr=False)
    model: str = ""
    temperature: float | None = None
    max_tokens: int = 1024
    seed: int | None = None
    response_format: str = "json_schema"
    reply: Reply = "verdict"  # what the response_format's schema asks for (--task fix: "fix")
    reasoning_effort: str | None = None  # sent as reasoning.effort when set
    request_style: str = security_bench.OWN_STYLE  # or STYLE: the original evaluator's body
    # what every run sets from its settings (config.Options declares them, with their defaults)
    max_retries: int = field(kw_only=True)
    timeout: float = field(kw_only=True)  # seconds for one whole attempt
    backoff_base: float = BACKOFF_BASE
    backoff_max: float = 30.0
    retry_after_max: float = 300.0
    concurrency: int = 16  # connections kept open: as many as requests in flight
    extra_headers: dict[str, str] = field(default_factory=dict)

    @property
    def is_openrouter(self) -> bool:
        return (urlparse(self.base_url).hostname or "").endswith("openrouter.ai")


_BAD_HEADER = (
    "a request header could not be sent: OPENROUTER_API_KEY (or an extra header) holds "
    "characters not allowed in HTTP headers; check it for spaces, line breaks or quotes"
)


def _header_safe(value: str) -> bool:
    """Printable ASCII without spaces: what an API key sent as a header may hold."""
    return all("!" <= ch <= "~" for ch in value)


def _error_message(body: Any) -> tuple[int | None, str]:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = error.get("code")
        status = code if isinstance(code, int) else None
        if isinstance(code, str) and code.isdigit():
            status = int(code)
        message = str(error.get("message") or error)
        metadata = error.get("metadata")
        if isinstance(metadata, dict) and metadata.get("raw"):
            message += f" ({str(metadata['raw'])[:200]})"
        return status, message
    if isinstance(error, str):
        return None, error
    return None, str(body)[:300]


def api_url(base_url: str, path: str) -> str:
    """`base_url` with `/path` added to its path; a query (`?api-version=...`) stays last."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + path.lstrip("/")))


def _abort_for(status: int, message: str, settings: ClientSettings) -> RunAborted | None:
    lowered = message.lower()
    endpoint = redact_url(settings.base_url)  # messages are stored and shown
    if status == 401:
        hint = (
            "set OPENROUTER_API_KEY in the environment or in .env to a valid key"
            if settings.is_openrouter
            else f"check the key the server at {endpoint} expects (OPENROUTER_API_KEY)"
        )
        return RunAborted(f"authentication failed (401: {message}); {hint}", status)
    if status == 402:
        return RunAborted(
            f"payment required (402: {message}); add credits to the account, or lower "
            "--max-tokens (the credit check reserves max_tokens per request)",
            status,
        )
    if status == 404 and "requested parameters" in lowered:
        return RunAborted(
            f"no provider serves {settings.model!r} with the parameters asked for "
            f"(404: {message}); the model may not support structured outputs: try "
            "--response-format json_object or --response-format none",
            status,
        )
    unknown_model = status == 404 or (
        status == 400 and ("not a valid model" in lowered or "model not found" in lowered)
    )
    if unknown_model:
        return RunAborted(
            f"model {settings.model!r} is not available at {endpoint} "
            f"({status}: {message}); check the id with `GET "
            f"{api_url(endpoint, 'models')}` (and that --base-url is right), "
            "or pick another --model",
            status,
        )
    return None


class OpenAICompatibleProvider:
    """Chat completions against `{base_url}/chat/completions`."""

    def __init__(
        self,
        settings: ClientSettings,
        client: httpx.AsyncClient | None = None,
        rng: random.Random | None = None,
        sleep: Any = asyncio.sleep,
    ) -> None:
        self.settings = settings
        self.name = settings.model
        self._openrouter = settings.is_openrouter  # parsed once, not for every request
        self.reports_cost = self._openrouter  # usage.cost is OpenRouter's extension
        self._sleep = sleep
        self.endpoint = settings.base_url
        self.policy = RetryPolicy(
            max_retries=settings.max_retries,
            backoff_base=settings.backoff_base,
            backoff_max=settings.backoff_max,
            retry_after_max=settings.retry_after_max,
            rng=rng or random.Random(),
        )
        self._client = client or async_client(
            timeout=httpx.Timeout(settings.timeout, connect=min(settings.timeout, 15.0)),
            limits=httpx.Limits(
                max_connections=max(settings.concurrency, 1),
                max_keepalive_connections=max(settings.concurrency, 1),
            ),
        )

    @cached_property
    def _url(self) -> str:
        return api_url(self.settings.base_url, "chat/completions")

    @cached_property
    def _headers(self) -> httpx.Headers:
        """`headers()`, built and checked by httpx once, not for every request (a key that
        cannot be sent raises at every attempt)."""
        return httpx.Headers(self.headers())

    def headers(self) -> dict[str, str]:
        """What every request sends besides httpx's own. `HTTP-Referer` and `X-Title` are
        OpenRouter's attribution of requests to an app: they go to OpenRouter only (another
        server reads neither, and each header is work on both ends of every request), as its
        `usage` and `provider` fields do; the original evaluator's style sends its own wherever
        it goes, as the original does."""
        headers = {"Content-Type": "application/json"}
        if self._openrouter:
            headers.update({"HTTP-Referer": REFERER, "X-Title": TITLE})
        headers["User-Agent"] = f"secbench-tui/{__version__}"
        if self.settings.request_style == security_bench.STYLE:
            headers.update(security_bench.HEADERS)  # how the original names itself
        if self.settings.api_key:
            if not _header_safe(self.settings.api_key):
                raise RunAborted(_BAD_HEADER)
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        headers.update(self.settings.extra_headers)
        return headers

    def payload(self, case: Case) -> ChatRequest:
        s = self.settings
        if s.request_style == security_bench.STYLE:
            return security_bench.request_body(s.model, case.prompt_messages())
        body: ChatRequest = {
            "model": s.model,
            "messages": [{"role": m.role, "content": m.content} for m in case.prompt_messages()],
            "max_tokens": s.max_tokens,
        }
        if s.temperature is not None:
            body["temperature"] = s.temperature
        if s.seed is not None:
            body["seed"] = s.seed
        fmt = response_format(s.response_format, s.reply) if case.structured else None
        if fmt is not None:
            body["response_format"] = fmt
        if s.reasoning_effort is not None:
            body["reasoning"] = {"effort": s.reasoning_effort}
        if self._openrouter:
            body["usage"] = {"include": True}
            if fmt is not None:
                body["provider"] = {"require_parameters": True}
        return body

    async def aclose(self) -> None:
        await self._client.aclose()

    async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
        """Attempts under the retry policy, waiting here (the engine drives `attempt` itself)."""
        hooks = _SleepingHooks(on_retry, self._sleep)
        try:
            return await run_attempts(lambda: self.attempt(case), self.policy, case.case_id, hooks)
        except Unreachable as exc:
            return replace(exc.failure.partial, error=str(exc.failure), attempts=exc.attempts)

    async def attempt(self, case: Case) -> Completion:
        """One request: the reply, or a classified `Failure` (`RunAborted` for the run)."""
        body = self.payload(case)
        completion, usage = await self._attempt(self._url, body)
        return _with_usage(completion, usage)

    async def _attempt(self, url: str, body: ChatRequest) -> tuple[Completion, Usage]:
        limit = self.settings.timeout
        replied = False  # the reply's headers arrived: the endpoint is there, if slow
        try:
            async with (
                asyncio.timeout(limit),  # the whole attempt: httpx's timeouts are per read
                self._client.stream("POST", url, json=body, headers=self._headers) as response,
            ):
                replied = True
                await response.aread()
        except (httpx.LocalProtocolError, UnicodeEncodeError):
            # h11 quotes the offending header, the key included: never pass its text on
            raise RunAborted(_BAD_HEADER) from None
        except httpx.UnsupportedProtocol as exc:
            raise RunAborted(
                f"--base-url {self.settings.base_url}: not an http(s) URL ({exc})"
            ) from None
        except TimeoutError:
            seen = "the reply had started" if replied else "not a byte of a reply arrived"
            raise Failure(
                f"no complete reply within --timeout {limit:g}s ({seen})",
                FailureKind.TIMEOUT,
                silent=not replied,
            ) from None
        except httpx.ConnectTimeout as exc:
            raise Failure(
                f"could not connect within --timeout ({type(exc).__name__})",
                FailureKind.UNREACHABLE,
            ) from exc
        except httpx.TimeoutException as exc:
            raise Failure(
                f"timeout ({type(exc).__name__})", FailureKind.TIMEOUT, silent=not replied
            ) from exc
        except httpx.ConnectError as exc:  # refused, DNS, TLS
            raise Failure(
                f"could not connect ({type(exc).__name__}: {exc})", FailureKind.UNREACHABLE
            ) from exc
        except httpx.TransportError as exc:  # dropped mid-reply: the server was there
            raise Failure(
                f"connection failed ({type(exc).__name__}: {exc})", FailureKind.TRANSIENT
            ) from exc
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        raw = response.text
        try:
            data, _ = shallow_json.loads(raw)
        except ValueError:
            data = None
        if response.status_code != 200:
            code, message = _error_message(data) if data is not None else (None, "")
            message = message or raw[:300] or response.reason_phrase
            self._raise_for(response.status_code, message, retry_after)
        if not isinstance(data, dict):
            raise Failure(
                f"200 with a body that is not JSON: {raw[:200]!r}",
                FailureKind.TRANSIENT,
                status=200,
                retry_after=retry_after,
                partial=Completion(text=raw, status=200),
                unreadable=True,
            )
        try:
            return self._read_body(data, retry_after, raw)
        except (Failure, RunAborted):
            raise
        except Exception as exc:  # a reply shaped like nothing we know: keep it, say why
            raise Failure(
                f"the reply could not be read ({type(exc).__name__}: {exc})",
                FailureKind.TRANSIENT,
                status=200,
                retry_after=retry_after,
                partial=_with_usage(Completion(text=raw, status=200), _usage_of(data)),
                unreadable=True,
            ) from exc

    def read_reply(self, data: JSONObject, raw: str) -> Completion:
        """A chat completion body that arrived by another way (a batch's result) read as a
        live reply is: the completion, or a classified `Failure` carrying what it consumed."""
        completion, usage = self._read_body(data, None, raw)
        return _with_usage(completion, usage)

    def _raise_for(self, status: int, message: str, retry_after: float | None) -> None:
        abort = _abort_for(status, message, self.settings)
        if abort is not None:
            raise abort
        raise Failure(
            f"HTTP {status}: {message}", status_kind(status), status=status, retry_after=retry_after
        )

    def _read_body(
        self, data: JSONObject, retry_after: float | None, raw: str = ""
    ) -> tuple[Completion, Usage]:
        usage = Usage.of(data)
        choices = data.get("choices")
        if data.get("error") and not choices:
            code, message = _error_message(data)
            try:
                self._raise_for(code or 502, f"in a 200 body: {message}", retry_after)
            except Failure as failure:  # an error that was billed is still counted
                failure.partial = _with_usage(failure.partial, usage)
                raise
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise Failure(
                "200 with no choices in the body",
                FailureKind.TRANSIENT,
                status=200,
                retry_after=retry_after,
                partial=_with_usage(Completion(text=raw, status=200), usage),
                unreadable=True,
            )
        choice = choices[0]
        finish = _as_text(choice.get("finish_reason") or choice.get("native_finish_reason"))
        reply = choice.get("message")
        text: Any = reply.get("content") if isinstance(reply, dict) else None
        if isinstance(text, list):
            text = "".join(str(p.get("text", "")) for p in text if isinstance(p, dict))
        reasoning = Reasoning.of(data, reply)

        def kept(partial: Completion) -> Completion:
            """A failed reply keeps what it consumed and what the model thought."""
            partial.reasoning, partial.reasoning_tokens = reasoning.text, reasoning.tokens
            return _with_usage(partial, usage)

        if finish == "error":
            code, detail = _error_message(choice) if choice.get("error") else (502, "")
            status = code or 502
            raise Failure(
                f"the provider failed mid-answer (finish_reason=error) {detail}".strip(),
                status_kind(status),
                status=status,
                retry_after=retry_after,
                partial=kept(Completion(text=_as_text(text), finish_reason=finish)),
            )
        if finish == "length":
            answered = isinstance(text, str) and bool(text.strip())
            thought = not answered and bool(reasoning.text or reasoning.tokens)
            raise Failure(
                f"reply truncated at max_tokens={self.settings.max_tokens} "
                + (
                    "while the model was still reasoning, before any answer "
                    "(finish_reason=length); raise --max-tokens, or lower --reasoning-effort"
                    if thought
                    else "(finish_reason=length); raise --max-tokens"
                ),
                FailureKind.FINAL,
                status=200,
                partial=kept(Completion(text=_as_text(text), finish_reason=finish)),
            )
        if text is not None and not isinstance(text, str):
            raise Failure(
                f"200 whose message content is {type(text).__name__}, not text",
                FailureKind.TRANSIENT,
                status=200,
                retry_after=retry_after,
                partial=kept(Completion(text=raw, status=200, finish_reason=finish)),
                unreadable=True,
            )
        if not isinstance(text, str) or not text.strip():
            raise Failure(
                "200 with empty content",
                FailureKind.TRANSIENT,
                status=200,
                retry_after=retry_after,
                partial=kept(Completion(finish_reason=finish)),
            )
        completion = Completion(
            text=text,
            status=200,
            finish_reason=finish,
            reasoning=reasoning.text,
            reasoning_tokens=reasoning.tokens,
        )
        return completion, usage


class _SleepingHooks(RetryHooks):
    """`complete` on its own: tell `on_retry`, then sleep."""

    def __init__(self, on_retry: RetryCallback | None, sleep: Any) -> None:
        self.on_retry = on_retry
        self.sleep = sleep

    async def wait(self, notice: RetryNotice) -> None:
        if self.on_retry is not None:
            result = self.on_retry(notice)
            if inspect.isawaitable(result):
                await result
        await self.sleep(notice.wait_seconds)


def _as_text(value: Any) -> str | None:
    """A field that should be a string, as one line of text whatever the server sent."""
    if value is None or isinstance(value, str):
        return value
    try:
        shown = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        shown = type(value).__name__
    return one_line(shown, 100)


def _usage_of(data: Any) -> Usage:
    try:
        return Usage.of(data) if isinstance(data, dict) else Usage()
    except Exception:  # whatever is wrong with the numbers, the raw reply is still kept
        return Usage()


def _with_usage(completion: Completion, usage: Usage) -> Completion:
    """The completion with what the attempt consumed (a failed reply may still be billed)."""
    completion.prompt_tokens = usage.prompt_tokens
    completion.completion_tokens = usage.completion_tokens
    completion.cost = usage.cost
    completion.served_model = usage.served_model
    completion.provider = usage.provider
    completion.notes = usage.note
    return completion
