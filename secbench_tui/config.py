"""Settings: each declared once, here, as a typed field; everything else is derived from it.

A field's type (with `Literal` for a closed set of values), its default and its `Flag` give the
command-line flag, its choices, its help (with the default shown) and its validation; `Record`
says whether and when a run records it. The command line (`cli.py`) builds its parser from
these declarations and passes on only the flags given, so the defaults here are the only ones;
the terminal app's setup screen offers the same choices and validates through the same model.
The declarations are checked by `declaration.Declared` (bounds with `Bounds`, anything more
with `Check`), which reports every problem at once for `describe_error` to say in one line.

Front ends receive a `Settings` and never read the environment themselves. The API key is a
`SecretStr`: `recorded()` (what goes into the database and reports) never contains it.

The annotations here are evaluated as the classes are made (no `from __future__ import
annotations`): `Declared` reads them as objects, where text would cost every start of the
program a compile of each declaration.
"""

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, cast, get_args
from urllib.parse import urlparse

from secbench_tui.core.models import RecordedSettings
from secbench_tui.core.run.engine import STOP_GRACE
from secbench_tui.core.run.providers.openai_compat import OPENROUTER_URL
from secbench_tui.core.run.providers.retry import BACKOFF_BASE
from secbench_tui.core.suites import security_bench
from secbench_tui.core.suites.prompts import EvaluationPrompt, ResponseFormat
from secbench_tui.core.suites.security_bench import RequestStyle
from secbench_tui.core.untrusted import redact_url
from secbench_tui.core.vuldetectbench import DEFAULT_SCORING
from secbench_tui.declaration import (
    Bounds,
    Check,
    Declared,
    Problem,
    SecretStr,
    SettingsError,
)

VdbMethod = Literal["cot", "few-shot"]
VdbScoring = Literal["correct", "library"]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high"]
ExportFormat = Literal["json", "csv", "junit"]
VDB_METHODS: tuple[str, ...] = get_args(VdbMethod)
VDB_PLAIN = "plain"  # --method plain: the benchmark's plain prompts (no method)
DEFAULT_MAX_TOKENS = 1024
DEFAULT_TIMEOUT = 120.0  # seconds for one whole attempt
REASONING_TIMEOUT = 600.0  # the same for a model that reasons: 32768 tokens take a while

MATRIX = ("models", "prompts", "methods")  # what was asked, beside the options of each run
# The groups of `--help`, in the order it lists them.
MODE, RUN, ENDPOINT, SELECTION = (
    "what to do",
    "the run",
    "the endpoint",
    "report and export selection",
)


@dataclass(frozen=True)
class Flag:
    """How a setting is given on the command line. Its name (`--max-retries` for
    `max_retries`), its type, choices and default come from the field itself."""

    help: str = ""
    group: str = RUN
    name: str | None = None  # the flag, when it is not the field's name
    parse: Callable[[str], Any] | None = None  # text -> value (argparse's `type`)
    many: bool = False  # repeatable, each `a,b`: the values in the order given
    metavar: str | None = None
    default: str | None = None  # the default in words, where the field's own says too little
    env: str | None = None  # the environment variable (or .env entry) read when not given


@dataclass(frozen=True)
class Record:
    """A setting a run records, and when: it changes what is asked or how it is scored.

    `applies`: `all` runs; `endpoint`: runs that ask a server (not offline baselines);
    `markdown` / `vuldetectbench`: runs of that kind of suite; `markdown-endpoint`: both.
    `sent`: the property holding the value actually sent, when it is not the field's own.
    """

    applies: Literal["all", "endpoint", "markdown", "vuldetectbench", "markdown-endpoint"]
    sent: str | None = None


def _positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(seconds):
        raise ValueError(f"{value!r}: the number of seconds must be a finite number")
    if not 0 < seconds <= 3600:
        raise ValueError(f"{value!r}: give a number of seconds above 0 and at most 3600")
    return seconds


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _methods(value: str) -> list[str | None]:
    """`--method a,b`; `plain` is the benchmark's prompts without a method (None). An empty
    value stays, for the check to name the methods there are."""
    return [None if m == VDB_PLAIN else m for m in (_csv(value) or [value])]


def _numbers(what: str, example: str) -> Callable[[str], list[int]]:
    def parse(value: str) -> list[int]:
        try:
            return [int(part) for part in _csv(value)]
        except ValueError:
            raise ValueError(f"takes {what}, e.g. {example}") from None

    parse.__name__ = what  # argparse names the type in its message
    return parse


def _relations(value: str) -> list[str]:
    """`--rewrites a,b` or `all`, checked (sqlglot and libcst load only when it is given)."""
    from secbench_tui.core.rewrites.relations import parse_relations

    return list(parse_relations(value))


_relations.__name__ = "relation names"
_tasks = _numbers("task numbers 1-5", "1,3")
_run_ids = _numbers("run ids", "3,4")


def _usable_key(value: SecretStr | None) -> SecretStr | None:
    if value is None:
        return None
    key = value.get_secret_value().strip().strip("'\"")
    if not all("!" <= ch <= "~" for ch in key):
        raise ValueError(  # shown after the variable's name, which is not repeated
            "holds spaces, line breaks or non-ASCII characters; copy the key again into "
            "the environment or .env"
        )
    return SecretStr(key) if key else None


def _http_url(value: str) -> str:
    try:
        parsed = urlparse(value.strip())
    except ValueError as exc:  # `http://[::1`: urlparse's own words would name no fix
        raise ValueError(
            f"{redact_url(value)!r} is not a URL the client can use ({exc}); give the API root, "
            "e.g. http://127.0.0.1:11434/v1"
        ) from exc
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(
            f"{redact_url(value)!r} is not an http(s) URL; give the API root, "
            "e.g. http://127.0.0.1:11434/v1"
        )
    import httpx  # already loaded with the settings; the client would refuse it later

    try:
        httpx.URL(value.strip())
        parsed.port  # noqa: B018 - raises on a port out of range, which httpx lets through
    except (httpx.InvalidURL, ValueError) as exc:
        raise ValueError(
            f"{redact_url(value)!r} is not a URL the client can use ({exc}); give the "
            "API root, e.g. http://127.0.0.1:11434/v1"
        ) from exc
    return value.strip().rstrip("/")


def _known_tasks(value: list[int]) -> list[int]:
    bad = [t for t in value if t not in (1, 2, 3, 4, 5)]
    if bad or not value:
        raise ValueError("takes numbers from 1 to 5, e.g. --tasks 1,3")
    return sorted(set(value))


def _once_each(value: list[Any]) -> list[Any]:
    """A model or method given twice is run once."""
    return list(dict.fromkeys(value))


def _known_methods(value: Any) -> Any:
    """Named as the flag takes them: `plain` is the benchmark's prompts without a method."""
    given = value if isinstance(value, list) else [value]
    bad = [m for m in given if m is not None and m not in VDB_METHODS]
    if bad:
        raise ValueError(f"must be {VDB_PLAIN} or one of {', '.join(VDB_METHODS)} (got {bad[0]!r})")
    return value


class Options(Declared):
    """The options every run of a command shares: the suite, the store, the endpoint and what
    every request carries. `Settings` (what was asked) and `RunSettings` (one run) add theirs.
    A number is a finite one (`--timeout nan` is not a number of seconds)."""

    # the suite and the store
    cases: Annotated[
        Path | None, Flag("suite folder", default="the bundled suite", metavar="DIR")
    ] = None
    apps: Annotated[
        list[str] | None,
        Flag("only these apps, comma separated", parse=_csv),
        Record("markdown"),
    ] = None
    limit: Annotated[
        int | None,
        Flag("only the first N cases (of each task, for VulDetectBench)", metavar="N"),
        Record("all"),
        Bounds(ge=1),
    ] = None
    tasks: Annotated[
        list[int],
        Flag("VulDetectBench tasks, e.g. 1,3", parse=_tasks, default="all five"),
        Record("vuldetectbench"),
        Check(_known_tasks),
    ] = [1, 2, 3, 4, 5]
    vdb_scoring: Annotated[
        VdbScoring,
        Flag("VulDetectBench scoring: the documented definitions, or as library 0.0.5 does"),
    ] = DEFAULT_SCORING
    filters: Annotated[
        list[str],  # glob patterns on case ids
        Flag(
            "only cases whose id (app/file.md) matches; repeat for several",
            name="--filter",
            many=True,
            metavar="GLOB",
        ),
    ] = []
    dry_run: Annotated[bool, Flag("print the plan, requests and estimated cost; send nothing")] = (
        False
    )
    db: Annotated[Path, Flag("SQLite database", metavar="PATH")] = Path("results.db")
    summary_json: Annotated[
        Path | None, Flag("write the run's summary as JSON", metavar="FILE")
    ] = None
    repeats: Annotated[int, Flag("ask each case N times", metavar="N"), Bounds(ge=1)] = 1
    resume: Annotated[bool, Flag("continue the last unfinished run")] = False
    force: Annotated[bool, Flag("ask again even if a result exists")] = False
    retry_errors: Annotated[
        bool, Flag("re-ask only the cases of the last run that ended in an error")
    ] = False
    max_cost: Annotated[
        float | None, Flag("stop when the reported cost reaches USD", metavar="USD"), Bounds(gt=0)
    ] = None
    rewrites: Annotated[
        list[str],
        Flag(
            "add meaning-preserving variants of every case, each proven equivalent on "
            "PostgreSQL before it is sent: relation names, or all",
            parse=_relations,
            metavar="NAME[,NAME]",
            default="none",
        ),
    ] = []
    unproven_rewrites: Annotated[
        bool,
        Flag("with --rewrites: also send variants that cannot be proven (no verification data)"),
    ] = False
    pg_url: str | None = None  # the PostgreSQL of --pg-url, for the rewrites' gate
    # the endpoint and what every request carries
    base_url: Annotated[
        str,
        Flag(
            "OpenAI-compatible API root", group=ENDPOINT, env="OPENROUTER_BASE_URL", metavar="URL"
        ),
        Record("endpoint"),
        Check(_http_url),
    ] = OPENROUTER_URL
    api_key: Annotated[SecretStr | None, Flag(env="OPENROUTER_API_KEY"), Check(_usable_key)] = None
    temperature: Annotated[
        float | None,
        Flag("sampling temperature, 0 to 2", group=ENDPOINT, default="the server's"),
        Record("endpoint", sent="sent_temperature"),
        Bounds(ge=0, le=2),
    ] = None
    max_tokens: Annotated[
        int | None,
        Flag(
            "reply budget per request",
            group=ENDPOINT,
            metavar="N",
            default=f"{DEFAULT_MAX_TOKENS}, or 32768 for models that reason",
        ),
        Record("endpoint", sent="sent_max_tokens"),
        Bounds(ge=1),
    ] = None  # None: chosen per model at run start
    reasoning_effort: Annotated[
        ReasoningEffort | None,
        Flag("sent as reasoning.effort (OpenRouter)", group=ENDPOINT, default="not sent"),
        Record("endpoint"),
    ] = None
    request_style: Annotated[
        RequestStyle,
        Flag(
            "security-bench: send the original evaluator's request, byte for byte",
            group=ENDPOINT,
        ),
        Record("markdown-endpoint"),
    ] = security_bench.OWN_STYLE
    seed: Annotated[
        int | None,
        Flag(
            "sent with every request; seeds baseline/random",
            group=ENDPOINT,
            metavar="N",
            default="not sent; baseline/random uses 0",
        ),
        Record("all"),
    ] = None
    response_format: Annotated[
        ResponseFormat,
        Flag(
            "structured output to ask for (fall back for servers that reject it)",
            group=ENDPOINT,
        ),
        Record("markdown-endpoint"),
    ] = "json_schema"
    max_retries: Annotated[
        int,
        Flag("retries for timeouts, dropped connections, 408/429/5xx", group=ENDPOINT, metavar="N"),
        Record("endpoint"),
        Bounds(ge=0),
    ] = 5
    retry_backoff: Annotated[
        float,
        Flag(
            "seconds before the first retry of a failed attempt, doubled for each retry after "
            "it (with jitter); a server's Retry-After is followed instead",
            group=ENDPOINT,
            metavar="S",
        ),
        Bounds(ge=0, le=60),
    ] = BACKOFF_BASE
    timeout: Annotated[
        float | None,
        Flag(
            "seconds for each attempt, whole: connecting, the headers and every byte",
            group=ENDPOINT,
            metavar="S",
            default=f"{DEFAULT_TIMEOUT:g}, or {REASONING_TIMEOUT:g} for a model whose "
            "catalog entry says it reasons",
        ),
        Record("endpoint", sent="attempt_timeout"),
        Bounds(gt=0),
    ] = None  # None: chosen per model at run start
    concurrency: Annotated[
        int, Flag("requests in flight", group=ENDPOINT, metavar="N"), Bounds(ge=1, le=256)
    ] = 1
    stop_grace: Annotated[
        float,
        Flag(
            "seconds a stop (Ctrl+C, SIGTERM, the app's stop) gives the requests in flight "
            "before cancelling them; cancelled cases are asked by --resume",
            metavar="S",
        ),
        Bounds(ge=0, le=REASONING_TIMEOUT),
    ] = STOP_GRACE  # no attempt is given longer
    reports_dir: Path = Path("reports")

    @property
    def original_request(self) -> bool:
        """`--request-style security-bench`: the original evaluator's request, byte for byte."""
        return self.request_style == security_bench.STYLE

    @property
    def attempt_timeout(self) -> float:
        """Seconds for one whole attempt: `--timeout`, else the default (one run's own may be
        longer, for a model that reasons: `RunSettings.attempt_timeout`)."""
        return self.timeout if self.timeout is not None else DEFAULT_TIMEOUT

    @property
    def sent_max_tokens(self) -> int:
        """The max_tokens every request carries."""
        if self.original_request:
            return security_bench.MAX_TOKENS
        return self.max_tokens if self.max_tokens is not None else DEFAULT_MAX_TOKENS

    @property
    def sent_temperature(self) -> float | None:
        return security_bench.TEMPERATURE if self.original_request else self.temperature

    @property
    def cases_dir(self) -> Path:
        return self.cases if self.cases is not None else bundled_cases_dir()

    @property
    def key(self) -> str | None:
        return self.api_key.get_secret_value() if self.api_key else None


class Settings(Options):
    """What was asked: the matrix (every model x prompt, or x method for VulDetectBench) over
    the options. `planner.plan_settings` makes one `RunSettings` per cell."""

    models: Annotated[
        list[str],
        Flag(
            "model id, e.g. openai/gpt-4o-mini or baseline/random; several: a,b or repeat",
            name="--model",
            parse=_csv,
            many=True,
        ),
        Check(_once_each),
    ] = []
    prompts: Annotated[
        list[str],
        Flag(
            "evaluation prompt: a file, a folder of *.txt, a bundled name, or all; "
            "several: a,b or repeat",
            name="--prompt",
            parse=_csv,
            many=True,
            default="./evaluation-prompt.txt if present, else default",
        ),
    ] = []
    methods: Annotated[
        list[VdbMethod | None],  # None: the plain prompts
        Flag(
            "VulDetectBench prompting: plain, cot or few-shot; several: a,b or repeat",
            name="--method",
            parse=_methods,
            many=True,
            default=VDB_PLAIN,
        ),
        Check(_known_methods, before=True),
        Check(_once_each),
    ] = []

    @classmethod
    def _before(cls, values: dict[str, Any]) -> dict[str, Any]:
        """`model=`, `prompt=` and `method=` are shorthand for a list of one."""
        values = dict(values)
        for one, many in (("model", "models"), ("prompt", "prompts"), ("method", "methods")):
            value = values.pop(one, None)
            if value is not None and not values.get(many):
                values[many] = [value]
        return values

    def run(
        self, model: str, prompt: EvaluationPrompt | None = None, method: str | None = None
    ) -> "RunSettings":
        """One cell of the matrix: these options, with one model and its prompt or method."""
        shared = {name: getattr(self, name) for name in Options.FIELDS}
        return RunSettings(**shared, model=model, prompt=prompt, method=method)


class RunSettings(Options):
    """One run of the matrix: one model, with one evaluation prompt (markdown suites) or one
    prompting method (VulDetectBench), and what the catalog said about the model."""

    model: str
    prompt: EvaluationPrompt | None = None  # None: the default prompt (and for VulDetectBench)
    method: Annotated[VdbMethod | None, Record("vuldetectbench")] = None
    reasoning_model: Annotated[bool | None, Record("endpoint")] = None  # found at run start

    @property
    def attempt_timeout(self) -> float:
        """Seconds for one whole attempt: `--timeout`, else longer for a model that reasons."""
        if self.timeout is not None:
            return self.timeout
        return REASONING_TIMEOUT if self.reasoning_model else DEFAULT_TIMEOUT

    def recorded(self, vuldetectbench: bool = False, baseline: bool = False) -> RecordedSettings:
        """What a run records about how it was made (the fields declared with `Record`), as
        far as it applies: never the key, and the endpoint without credentials (`redact_url`;
        requests use the real one).

        Baselines answer offline, so only their seed matters; markdown suites have apps and
        a response format, VulDetectBench runs have tasks and a prompting method.
        """
        applies = {"all", "vuldetectbench" if vuldetectbench else "markdown"}
        if not baseline:
            applies.add("endpoint")
            if not vuldetectbench:
                applies.add("markdown-endpoint")
        recorded: dict[str, Any] = {}
        for name, record in RECORDED.items():
            if record.applies in applies:
                recorded[name] = getattr(self, record.sent or name)
        if "base_url" in recorded:
            recorded["base_url"] = redact_url(recorded["base_url"])
        return cast(RecordedSettings, recorded)


class Command(Declared):
    """What the command line asks for besides a run: a mode and what it selects."""

    no_ui: Annotated[bool, Flag("run headless and print progress", group=MODE)] = False
    report: Annotated[bool, Flag("write an HTML report and exit", group=MODE)] = False
    export: Annotated[ExportFormat | None, Flag("export results", group=MODE)] = None
    out: Annotated[
        Path | None,
        Flag(
            "file for --export, or for --report alone",
            group=MODE,
            metavar="FILE",
            default="stdout for --export, reports/report_<time>.html for --report",
        ),
    ] = None
    lint: Annotated[bool, Flag("check a suite and exit", group=MODE)] = False
    rescore: Annotated[
        bool,
        Flag(
            "score the stored replies again with this version's scoring, without a request"
            " (--runs picks runs), and exit",
            group=MODE,
        ),
    ] = False
    verify: Annotated[bool, Flag("prove the suite's labels on PostgreSQL and exit", group=MODE)] = (
        False
    )
    pg_url: Annotated[
        str | None,
        Flag(
            "PostgreSQL for --verify and --rewrites",
            group=MODE,
            default="embedded pgserver",
            metavar="URL",
        ),
    ] = None
    mutants: Annotated[
        bool,
        Flag(
            "with --verify: also verify mutants of every good case (one guard removed or"
            " weakened each) and report the share caught per app and scenario",
            group=MODE,
        ),
    ] = False
    allow_unverified: Annotated[
        bool,
        Flag(
            "with --verify: exit 0 even when some cases are not verifiable (no verification"
            " data); failed cases still fail",
            group=MODE,
        ),
    ] = False
    verify_deadline: Annotated[
        float,
        Flag(
            "with --verify: seconds each statement of suite code may run (fixtures included)"
            " before it is stopped, and each parameter set of a Python case",
            group=MODE,
            metavar="SECONDS",
            parse=_positive_seconds,
        ),
    ] = 10.0
    runs: Annotated[
        list[int] | None, Flag("run ids, comma separated", group=SELECTION, parse=_run_ids)
    ] = None
    select_models: Annotated[
        list[str] | None,
        Flag("model names", group=SELECTION, name="--models", parse=_csv),
    ] = None

    @property
    def uses_key(self) -> bool:
        """Only runs send the API key: linting, reports, exports, --rescore and --verify never
        read it."""
        return not (self.lint or self.report or self.export or self.verify or self.rescore)


def declared(model: type[Declared], kind: type[Any]) -> dict[str, Any]:
    """The fields of `model` declared with a `kind` (`Flag`, `Record`), in declaration order."""
    found: dict[str, Any] = {}
    for name, setting in model.FIELDS.items():
        meta = setting.of(kind)
        if meta is not None:
            found[name] = meta
    return found


RECORDED: dict[str, Record] = declared(RunSettings, Record)


def flag_name(model: type[Declared], field: str) -> str:
    """The flag (or environment variable) a field is given by: `max_retries` -> --max-retries."""
    flag = declared(model, Flag).get(field)
    if flag is not None and flag.name:
        return str(flag.name)
    if flag is not None and flag.env and not flag.help:
        return str(flag.env)  # set only in the environment: never shown
    return "--" + field.replace("_", "-")


def describe_error(exc: SettingsError, model: type[Declared] = Settings) -> str:
    """Every problem with the settings, each named by its flag, in one line: the command line
    and the app's setup screen both say it so."""
    return "; ".join(
        f"{flag_name(model, problem.field)}: {_in_our_words(problem) or problem.message}"
        for problem in exc.problems
    )


_BOUNDS = {
    "greater_than": "give a number above {gt}",
    "greater_than_equal": "give {ge} or more",
    "less_than": "give a number below {lt}",
    "less_than_equal": "give {le} or less",
    "finite_number": "must be a finite number",
    "float_parsing": "must be a number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
}


def _in_our_words(problem: Problem) -> str | None:
    """A bound or type a value breaks, said with the fix and the value given."""
    words = _BOUNDS.get(problem.kind)
    if words is None:
        return None
    bounds = {k: f"{v:g}" if isinstance(v, float) else v for k, v in (problem.bounds or {}).items()}
    return f"{words.format(**bounds)} (got {problem.value!r})"


def bundled_cases_dir() -> Path:
    """The suite shipped inside the package, from any working directory or install."""
    return Path(__file__).parent / "cases"  # installed as files, as prompts/ is


def is_bundled_suite(cases_dir: Path) -> bool:
    """Is `cases_dir` the suite shipped with the tool (whose code verify runs unasked)?"""
    try:
        return cases_dir.resolve() == bundled_cases_dir().resolve()
    except OSError:
        return False


def load_env(dotenv_path: Path | None = None) -> dict[str, str]:
    """The environment with `.env` (from the working directory) beneath it. python-dotenv is
    imported only when there is a file to read (it costs a start about 10 ms)."""
    values: dict[str, str] = {}
    path = dotenv_path or Path(".env")
    if path.is_file():
        from dotenv import dotenv_values

        values.update({k: v for k, v in dotenv_values(path).items() if v is not None})
    values.update(os.environ)
    return values
