"""OpenRouter, or any OpenAI-compatible server, through async httpx.

Every way a request can fail is sorted into three kinds: retry it (timeouts, dropped
connections, 408/429/5xx and the same codes inside a 200 body), record it on the case (400,
403, truncated or empty replies once retries are spent), or abort the run (401, 402, unknown
model), with a message that says what to do. The API key is only ever sent in the
Authorization header: no error message, log line or record contains it.
"""

from __future__ import annotations

import asyncio
import email.utils
import inspect
import random
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import httpx

from secbench_tui import __version__
from secbench_tui.core import believable
from secbench_tui.core.models import Case, Completion
from secbench_tui.core.prompts import response_format
from secbench_tui.core.providers.base import RetryCallback, RetryNotice, RunAborted

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 524, 529})
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
    max_retries: int = 5
    timeout: float = 120.0
    backoff_base: float = 1.0
    backoff_max: float = 60.0
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


class _Attempt(Exception):
    """One failed attempt, carrying what decides whether to try again."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        text: str | None = None,
        finish_reason: str | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.text = text
        self.finish_reason = finish_reason
        self.usage = usage or Usage()


@dataclass
class Usage:
    """What attempts consumed: a truncated or failed reply may still be billed."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    served_model: str | None = None
    provider: str | None = None
    notes: list[str] = field(default_factory=list)  # numbers not believed, for the case

    @classmethod
    def of(cls, data: dict[str, Any]) -> Usage:
        """The usage a reply reports; a number not believable is None, with a note."""
        raw = data.get("usage")
        usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
        names = ("prompt_tokens", "completion_tokens", "cost")
        notes = [note for name in names if (note := believable.doubt(name, usage.get(name)))]
        return cls(
            prompt_tokens=believable.tokens(usage.get("prompt_tokens")),
            completion_tokens=believable.tokens(usage.get("completion_tokens")),
            cost=believable.cost(usage.get("cost")),
            served_model=data.get("model") if isinstance(data.get("model"), str) else None,
            provider=data.get("provider") if isinstance(data.get("provider"), str) else None,
            notes=notes,
        )

    @property
    def note(self) -> str | None:
        """The notes of every attempt, as recorded on the case."""
        return "; ".join(self.notes) or None

    def add(self, other: Usage) -> None:
        """Sum the counts; keep the latest model and provider that answered."""
        for name in ("prompt_tokens", "completion_tokens", "cost"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None:
                setattr(self, name, theirs if mine is None else mine + theirs)
        self.served_model = other.served_model or self.served_model
        self.provider = other.provider or self.provider
        self.notes.extend(other.notes)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, float(when.timestamp()) - current)


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with jitter: between half and all of base * 2^(attempt-1)."""
    ceiling = min(cap, base * (2.0 ** max(0, attempt - 1)))
    return ceiling * (0.5 + rng.random() / 2)


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


def _abort_for(status: int, message: str, settings: ClientSettings) -> RunAborted | None:
    lowered = message.lower()
    if status == 401:
        hint = (
            "set OPENROUTER_API_KEY in the environment or in .env to a valid key"
            if settings.is_openrouter
            else f"check the key the server at {settings.base_url} expects (OPENROUTER_API_KEY)"
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
            f"model {settings.model!r} is not available at {settings.base_url} "
            f"({status}: {message}); check the id with `GET "
            f"{settings.base_url.rstrip('/')}/models` (and that --base-url is right), "
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
        self.reports_cost = settings.is_openrouter  # usage.cost is OpenRouter's extension
        self._rng = rng or random.Random()
        self._sleep = sleep
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(settings.timeout, connect=min(settings.timeout, 15.0)),
            limits=httpx.Limits(
                max_connections=max(settings.concurrency, 1),
                max_keepalive_connections=max(settings.concurrency, 1),
            ),
        )

    def headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "HTTP-Referer": REFERER,
            "X-Title": TITLE,
            "User-Agent": f"secbench-tui/{__version__}",
        }
        if self.settings.api_key:
            if not _header_safe(self.settings.api_key):
                raise RunAborted(_BAD_HEADER)
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        headers.update(self.settings.extra_headers)
        return headers

    def payload(self, case: Case) -> dict[str, Any]:
        s = self.settings
        body: dict[str, Any] = {
            "model": s.model,
            "messages": [{"role": m.role, "content": m.content} for m in case.prompt_messages()],
            "max_tokens": s.max_tokens,
        }
        if s.temperature is not None:
            body["temperature"] = s.temperature
        if s.seed is not None:
            body["seed"] = s.seed
        fmt = response_format(s.response_format) if case.structured else None
        if fmt is not None:
            body["response_format"] = fmt
        if s.is_openrouter:
            body["usage"] = {"include": True}
            if fmt is not None:
                body["provider"] = {"require_parameters": True}
        return body

    async def aclose(self) -> None:
        await self._client.aclose()

    async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
        url = self.settings.base_url.rstrip("/") + "/chat/completions"
        body = self.payload(case)
        attempt = 0
        started = time.perf_counter()
        spent = Usage()  # every attempt's tokens and cost, the failed ones included
        while True:
            attempt += 1
            try:
                completion, usage = await self._attempt(url, body)
            except _Attempt as failure:
                spent.add(failure.usage)
                out_of_tries = attempt > self.settings.max_retries
                if not failure.retryable or out_of_tries:
                    return Completion(
                        text=failure.text,
                        error=str(failure),
                        status=failure.status,
                        finish_reason=failure.finish_reason,
                        prompt_tokens=spent.prompt_tokens,
                        completion_tokens=spent.completion_tokens,
                        cost=spent.cost,
                        served_model=spent.served_model,
                        provider=spent.provider,
                        notes=spent.note,
                        latency_ms=(time.perf_counter() - started) * 1000,
                        attempts=attempt,
                    )
                wait = backoff_delay(
                    attempt, self.settings.backoff_base, self.settings.backoff_max, self._rng
                )
                if failure.retry_after is not None:
                    wait = min(failure.retry_after, self.settings.retry_after_max)
                if on_retry is not None:
                    notice = RetryNotice(
                        case.case_id,
                        attempt,
                        wait,
                        str(failure),
                        failure.status,
                        rate_limited=failure.status == 429,
                    )
                    result = on_retry(notice)
                    if inspect.isawaitable(result):
                        await result
                await self._sleep(wait)
                continue
            spent.add(usage)
            completion.prompt_tokens = spent.prompt_tokens
            completion.completion_tokens = spent.completion_tokens
            completion.cost = spent.cost
            completion.served_model = spent.served_model
            completion.provider = spent.provider
            completion.notes = spent.note
            completion.attempts = attempt
            completion.latency_ms = (time.perf_counter() - started) * 1000
            return completion

    async def _attempt(self, url: str, body: dict[str, Any]) -> tuple[Completion, Usage]:
        try:
            response = await self._client.post(url, json=body, headers=self.headers())
        except (httpx.LocalProtocolError, UnicodeEncodeError):
            # h11 quotes the offending header, the key included: never pass its text on
            raise RunAborted(_BAD_HEADER) from None
        except httpx.UnsupportedProtocol as exc:
            raise RunAborted(
                f"--base-url {self.settings.base_url}: not an http(s) URL ({exc})"
            ) from None
        except httpx.TimeoutException as exc:
            raise _Attempt(f"timeout ({type(exc).__name__})", retryable=True) from exc
        except httpx.TransportError as exc:
            raise _Attempt(
                f"connection failed ({type(exc).__name__}: {exc})", retryable=True
            ) from exc
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        try:
            data: Any = response.json()
        except ValueError:
            data = None
        if response.status_code != 200:
            code, message = _error_message(data) if data is not None else (None, "")
            message = message or response.text[:300] or response.reason_phrase
            self._raise_for(response.status_code, message, retry_after)
        if not isinstance(data, dict):
            raise _Attempt(
                f"200 with a body that is not JSON: {response.text[:200]!r}",
                status=200,
                retryable=True,
                retry_after=retry_after,
            )
        return self._read_body(data, retry_after)

    def _raise_for(self, status: int, message: str, retry_after: float | None) -> None:
        abort = _abort_for(status, message, self.settings)
        if abort is not None:
            raise abort
        raise _Attempt(
            f"HTTP {status}: {message}",
            status=status,
            retryable=status in RETRYABLE_STATUS,
            retry_after=retry_after,
        )

    def _read_body(
        self, data: dict[str, Any], retry_after: float | None
    ) -> tuple[Completion, Usage]:
        usage = Usage.of(data)
        choices = data.get("choices")
        if data.get("error") and not choices:
            code, message = _error_message(data)
            self._raise_for(code or 502, f"in a 200 body: {message}", retry_after)
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _Attempt(
                "200 with no choices in the body",
                status=200,
                retryable=True,
                retry_after=retry_after,
            )
        choice = choices[0]
        finish = choice.get("finish_reason") or choice.get("native_finish_reason")
        reply = choice.get("message")
        text: Any = reply.get("content") if isinstance(reply, dict) else None
        if isinstance(text, list):
            text = "".join(str(p.get("text", "")) for p in text if isinstance(p, dict))
        if finish == "error":
            code, detail = _error_message(choice) if choice.get("error") else (502, "")
            raise _Attempt(
                f"the provider failed mid-answer (finish_reason=error) {detail}".strip(),
                status=code or 502,
                retryable=(code or 502) in RETRYABLE_STATUS,
                retry_after=retry_after,
                text=text,
                finish_reason=finish,
                usage=usage,
            )
        if finish == "length":
            raise _Attempt(
                f"reply truncated at max_tokens={self.settings.max_tokens} "
                "(finish_reason=length); raise --max-tokens",
                status=200,
                retryable=False,
                text=text,
                finish_reason=finish,
                usage=usage,
            )
        if not isinstance(text, str) or not text.strip():
            raise _Attempt(
                "200 with empty content",
                status=200,
                retryable=True,
                retry_after=retry_after,
                finish_reason=finish,
                usage=usage,
            )
        completion = Completion(
            text=text,
            status=200,
            finish_reason=finish,
            generation_id=data.get("id") if isinstance(data.get("id"), str) else None,
        )
        return completion, usage
