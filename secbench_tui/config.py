"""Settings: flags, the environment and `.env`, gathered once into one validated model.

Front ends receive a `Settings` and never read the environment themselves. The API key is a
`SecretStr`: `recorded()` (what goes into the database and reports) never contains it.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator

from secbench_tui.core.run.providers.openai_compat import OPENROUTER_URL
from secbench_tui.core.suites import security_bench
from secbench_tui.core.suites.prompts import RESPONSE_FORMATS
from secbench_tui.core.untrusted import redact_url

VDB_METHODS = ("cot", "few-shot")
VDB_PLAIN = "plain"  # --method plain: the benchmark's plain prompts (no method)
VDB_SCORINGS = ("correct", "library")
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")
DEFAULT_MAX_TOKENS = 1024
DEFAULT_TIMEOUT = 120.0  # seconds for one whole attempt
REASONING_TIMEOUT = 600.0  # the same for a model that reasons: 32768 tokens take a while


class Settings(BaseModel):
    """One run's settings; `models`, `prompts` and `methods` list the matrix to run.

    `model`, `prompt` and `method` are the run's own (the first of each list when several
    are given); `session.plan_settings` makes one `Settings` per cell of the matrix.
    """

    model: str | None = None
    models: list[str] = Field(default_factory=list)
    cases: Path | None = None
    apps: list[str] | None = None
    limit: int | None = Field(default=None, ge=1)
    db: Path = Path("results.db")
    prompt: str | None = None  # a file, a folder of *.txt, a bundled name or "all"
    prompts: list[str] = Field(default_factory=list)
    base_url: str = OPENROUTER_URL
    api_key: SecretStr | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)  # None: chosen per model at run start
    reasoning_effort: str | None = None
    request_style: str = "secbench-tui"
    reasoning_model: bool | None = None  # what the catalog said, found at run start
    seed: int | None = None
    response_format: str = "json_schema"
    max_retries: int = Field(default=5, ge=0)
    timeout: float | None = Field(default=None, gt=0)  # None: chosen per model at run start
    concurrency: int = Field(default=1, ge=1, le=256)
    repeats: int = Field(default=1, ge=1)
    resume: bool = False
    force: bool = False
    retry_errors: bool = False
    max_cost: float | None = Field(default=None, gt=0)
    tasks: list[int] = Field(default_factory=lambda: [1, 2, 3, 4, 5])
    method: str | None = None
    methods: list[str | None] = Field(default_factory=list)  # None: the plain prompts
    vdb_scoring: str = "correct"
    summary_json: Path | None = None
    reports_dir: Path = Path("reports")
    filters: list[str] = Field(default_factory=list)  # glob patterns on case ids
    dry_run: bool = False
    rewrites: list[str] = Field(default_factory=list)  # relation names (--rewrites)
    unproven_rewrites: bool = False  # send variants the gate could not prove
    pg_url: str | None = None  # PostgreSQL for --verify and the rewrites' gate

    @model_validator(mode="after")
    def _matrix(self) -> Settings:
        """The single setting and its list agree: the list wins when both are given."""
        if self.models:
            self.models = list(dict.fromkeys(self.models))
            self.model = self.models[0]
        elif self.model:
            self.models = [self.model]
        if self.prompts:
            self.prompt = self.prompts[0]
        elif self.prompt is not None:
            self.prompts = [self.prompt]
        if self.methods:
            self.methods = list(dict.fromkeys(self.methods))
            bad = [m for m in self.methods if m is not None and m not in VDB_METHODS]
            if bad:
                raise ValueError(
                    f"--method: must be {VDB_PLAIN} or one of {', '.join(VDB_METHODS)} "
                    f"(got {bad[0]!r})"
                )
            self.method = self.methods[0]
        return self

    @field_validator("api_key")
    @classmethod
    def _usable_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        key = value.get_secret_value().strip().strip("'\"")
        if not all("!" <= ch <= "~" for ch in key):
            raise ValueError(  # shown after the variable's name, which is not repeated
                "holds spaces, line breaks or non-ASCII characters; copy the key again into "
                "the environment or .env"
            )
        return SecretStr(key) if key else None

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parsed = urlparse(value.strip())
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(
                f"{redact_url(value)!r} is not an http(s) URL; give the API root, "
                "e.g. http://127.0.0.1:11434/v1"
            )
        return value.strip().rstrip("/")

    @field_validator("response_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value not in RESPONSE_FORMATS:
            raise ValueError(f"must be one of {', '.join(RESPONSE_FORMATS)}")
        return value

    @field_validator("reasoning_effort")
    @classmethod
    def _known_effort(cls, value: str | None) -> str | None:
        if value is not None and value not in REASONING_EFFORTS:
            raise ValueError(f"must be one of {', '.join(REASONING_EFFORTS)}")
        return value

    @field_validator("request_style")
    @classmethod
    def _known_style(cls, value: str) -> str:
        if value not in security_bench.STYLES:
            raise ValueError(f"must be one of {', '.join(security_bench.STYLES)}")
        return value

    @property
    def original_request(self) -> bool:
        """`--request-style security-bench`: the original evaluator's request, byte for byte."""
        return self.request_style == security_bench.STYLE

    @property
    def attempt_timeout(self) -> float:
        """Seconds for one whole attempt: `--timeout`, else longer for a model that reasons."""
        if self.timeout is not None:
            return self.timeout
        return REASONING_TIMEOUT if self.reasoning_model else DEFAULT_TIMEOUT

    @property
    def sent_max_tokens(self) -> int:
        """The max_tokens every request carries."""
        if self.original_request:
            return security_bench.MAX_TOKENS
        return self.max_tokens if self.max_tokens is not None else DEFAULT_MAX_TOKENS

    @property
    def sent_temperature(self) -> float | None:
        return security_bench.TEMPERATURE if self.original_request else self.temperature

    @field_validator("method")
    @classmethod
    def _known_method(cls, value: str | None) -> str | None:
        if value is not None and value not in VDB_METHODS:
            raise ValueError(f"must be one of {', '.join(VDB_METHODS)} (got {value!r})")
        return value

    @field_validator("vdb_scoring")
    @classmethod
    def _known_scoring(cls, value: str) -> str:
        if value not in VDB_SCORINGS:
            raise ValueError(f"must be one of {', '.join(VDB_SCORINGS)}")
        return value

    @field_validator("tasks")
    @classmethod
    def _known_tasks(cls, value: list[int]) -> list[int]:
        bad = [t for t in value if t not in (1, 2, 3, 4, 5)]
        if bad or not value:
            raise ValueError("takes numbers from 1 to 5, e.g. --tasks 1,3")
        return sorted(set(value))

    @property
    def cases_dir(self) -> Path:
        return self.cases if self.cases is not None else bundled_cases_dir()

    @property
    def key(self) -> str | None:
        return self.api_key.get_secret_value() if self.api_key else None

    def recorded(self, vuldetectbench: bool = False, baseline: bool = False) -> dict[str, Any]:
        """What a run records about how it was made, as far as it applies: never the key,
        and the endpoint without credentials (`redact_url`; requests use the real one).

        Baselines answer offline, so only their seed matters; markdown suites have apps and
        a response format, VulDetectBench runs have tasks and a prompting method.
        """
        recorded: dict[str, Any] = {"seed": self.seed, "limit": self.limit}
        if not baseline:
            recorded.update(
                base_url=redact_url(self.base_url),
                temperature=self.sent_temperature,
                max_tokens=self.sent_max_tokens,
                max_retries=self.max_retries,
                timeout=self.attempt_timeout,
                reasoning_effort=self.reasoning_effort,
                reasoning_model=self.reasoning_model,
            )
            if not vuldetectbench:
                recorded["response_format"] = self.response_format
                recorded["request_style"] = self.request_style
        if vuldetectbench:
            recorded.update(tasks=self.tasks, method=self.method)
        else:
            recorded["apps"] = self.apps
        return recorded


def bundled_cases_dir() -> Path:
    """The suite shipped inside the package, from any working directory or install."""
    return Path(str(resources.files("secbench_tui") / "cases"))


def load_env(dotenv_path: Path | None = None) -> dict[str, str]:
    """The environment with `.env` (from the working directory) beneath it."""
    from dotenv import dotenv_values

    values: dict[str, str] = {}
    path = dotenv_path or Path(".env")
    if path.is_file():
        values.update({k: v for k, v in dotenv_values(path).items() if v is not None})
    values.update(os.environ)
    return values
