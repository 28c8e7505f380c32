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

from pydantic import BaseModel, Field, SecretStr, field_validator

from secbench_tui.core.prompts import RESPONSE_FORMATS
from secbench_tui.core.providers.openai_compat import OPENROUTER_URL

VDB_METHODS = ("cot", "few-shot")
VDB_SCORINGS = ("correct", "library")


class Settings(BaseModel):
    model: str | None = None
    cases: Path | None = None
    apps: list[str] | None = None
    limit: int | None = Field(default=None, ge=1)
    db: Path = Path("results.db")
    prompt: Path | None = None
    base_url: str = OPENROUTER_URL
    api_key: SecretStr | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int = Field(default=1024, ge=1)
    seed: int | None = None
    response_format: str = "json_schema"
    max_retries: int = Field(default=5, ge=0)
    timeout: float = Field(default=120.0, gt=0)
    concurrency: int = Field(default=1, ge=1, le=256)
    repeats: int = Field(default=1, ge=1)
    resume: bool = False
    force: bool = False
    retry_errors: bool = False
    max_cost: float | None = Field(default=None, gt=0)
    tasks: list[int] = Field(default_factory=lambda: [1, 2, 3, 4, 5])
    method: str | None = None
    vdb_scoring: str = "correct"
    summary_json: Path | None = None
    reports_dir: Path = Path("reports")

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
                f"{value!r} is not an http(s) URL; give the API root, "
                "e.g. http://127.0.0.1:11434/v1"
            )
        return value.strip().rstrip("/")

    @field_validator("response_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value not in RESPONSE_FORMATS:
            raise ValueError(f"must be one of {', '.join(RESPONSE_FORMATS)}")
        return value

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
        """What a run records about how it was made, as far as it applies: never the key.

        Baselines answer offline, so only their seed matters; markdown suites have apps and
        a response format, VulDetectBench runs have tasks and a prompting method.
        """
        recorded: dict[str, Any] = {"seed": self.seed, "limit": self.limit}
        if not baseline:
            recorded.update(
                base_url=self.base_url,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                max_retries=self.max_retries,
                timeout=self.timeout,
            )
            if not vuldetectbench:
                recorded["response_format"] = self.response_format
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
