"""The settings models: each setting declared once, as a typed pydantic field.

A field's type (`Literal` for a closed set of values), its default, its bounds (`Field(ge=...)`)
and its `Flag` give the command-line flag, its choices, its help (with the default shown) and
its validation; `Record` says whether and when a run records it (`config.flags`). Checks beyond
a type and its bounds are pydantic validators (`config.checks` says them in words). pydantic
reports every problem at once, for `config.errors.describe_error` to say in one line.

`Options` are what every run of a command shares, `Settings` what was asked (the matrix of
models and prompts or methods over them), `RunSettings` one run of it, `Command` the mode.
Front ends receive a `Settings` and never read the environment themselves. The API key is a
`pydantic.SecretStr`: `recorded()` (what goes into the database and reports) never holds it.
"""

from pathlib import Path
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import (
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from secbench_tui.config import checks, flags, stores
from secbench_tui.config.batch import BatchApiChoice, BatchPollSeconds, BatchSwitch
from secbench_tui.config.declared_settings import DeclaredSettings
from secbench_tui.config.environment import bundled_cases_dir
from secbench_tui.config.flags import ENDPOINT, MODE, SELECTION, VDB_PLAIN, Flag, Record, declared
from secbench_tui.config.tasks import ProveFindingsSwitch, TaskChoice
from secbench_tui.core.models import RecordedSettings
from secbench_tui.core.run.batch.protocol import ProtocolName, protocol_for
from secbench_tui.core.run.engine import STOP_GRACE
from secbench_tui.core.run.providers.openai_compat import OPENROUTER_URL
from secbench_tui.core.run.providers.retry import BACKOFF_BASE
from secbench_tui.core.suites import security_bench
from secbench_tui.core.suites.prompts import EvaluationPrompt, ResponseFormat
from secbench_tui.core.suites.security_bench import RequestStyle
from secbench_tui.core.untrusted import redact_url
from secbench_tui.core.vuldetectbench import DEFAULT_SCORING

VdbMethod = Literal["cot", "few-shot"]
VdbScoring = Literal["correct", "library"]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high"]
ExportFormat = Literal["json", "csv", "junit"]
VDB_METHODS: tuple[str, ...] = get_args(VdbMethod)
DEFAULT_MAX_TOKENS = 1024
DEFAULT_TIMEOUT = 120.0  # seconds for one whole attempt
REASONING_TIMEOUT = 600.0  # the same for a model that reasons: 32768 tokens take a while
MAX_REPEATS = 1000  # --repeats: pass^N and consistency need a few; 1000 x a suite fits in memory


class Options(DeclaredSettings):
    """The options every run of a command shares: the suite, the store, the endpoint and what
    every request carries. `Settings` (what was asked) and `RunSettings` (one run) add theirs.
    A number is a finite one (`--timeout nan` is not a number of seconds)."""

    # the suite and the store
    cases: Annotated[
        Path | None, Flag("suite folder", default="the bundled suite", metavar="DIR")
    ] = None
    apps: Annotated[
        list[str] | None,
        Flag("only these apps, comma separated", parse=flags.csv),
        Record("markdown"),
    ] = None
    limit: Annotated[
        int | None,
        Flag("only the first N cases (of each task, for VulDetectBench)", metavar="N"),
        Record("all"),
        Field(ge=1),
    ] = None
    tasks: Annotated[
        list[int],
        Flag("VulDetectBench tasks, e.g. 1,3", parse=flags.tasks, default="all five"),
        Record("vuldetectbench"),
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
    db: stores.Db = stores.DEFAULT_DB
    summary_json: Annotated[
        Path | None, Flag("write the run's summary as JSON", metavar="FILE")
    ] = None
    # at most MAX_REPEATS: a run plans one piece of work per case and repeat before it asks
    # anything (`--repeats 99999999999999999999` took every gigabyte of the machine)
    repeats: Annotated[
        int, Flag("ask each case N times", metavar="N"), Field(ge=1, le=MAX_REPEATS)
    ] = 1
    resume: Annotated[bool, Flag("continue the last unfinished run")] = False
    force: Annotated[bool, Flag("ask again even if a result exists")] = False
    retry_errors: Annotated[
        bool, Flag("re-ask only the cases of the last run that ended in an error")
    ] = False
    max_cost: Annotated[
        float | None, Flag("stop when the reported cost reaches USD", metavar="USD"), Field(gt=0)
    ] = None
    rewrites: Annotated[
        list[str],
        Flag(
            "add meaning-preserving variants of every case, each proven equivalent on "
            "PostgreSQL before it is sent: relation names, or all",
            parse=flags.relations,
            metavar="NAME[,NAME]",
            default="none",
        ),
    ] = []
    unproven_rewrites: Annotated[
        bool,
        Flag("with --rewrites: also send variants that cannot be proven (no verification data)"),
    ] = False
    task: TaskChoice = "find"
    prove_findings: ProveFindingsSwitch = False
    pg_url: str | None = None  # the PostgreSQL of --pg-url: the rewrites' gate, fixes, proofs
    # the endpoint and what every request carries
    base_url: Annotated[
        str,
        Flag(
            "OpenAI-compatible API root", group=ENDPOINT, env="OPENROUTER_BASE_URL", metavar="URL"
        ),
        Record("endpoint"),
    ] = OPENROUTER_URL
    api_key: Annotated[SecretStr | None, Flag(env="OPENROUTER_API_KEY")] = None
    temperature: Annotated[
        float | None,
        Flag("sampling temperature, 0 to 2", group=ENDPOINT, default="the server's"),
        Record("endpoint", sent="sent_temperature"),
        Field(ge=0, le=2),
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
        Field(ge=1),
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
        Field(ge=0),
    ] = 5
    retry_backoff: Annotated[
        float,
        Flag(
            "seconds before the first retry of a failed attempt, doubled for each retry after "
            "it (with jitter); a server's Retry-After is followed instead",
            group=ENDPOINT,
            metavar="S",
        ),
        Field(ge=0, le=60),
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
        Field(gt=0),
    ] = None  # None: chosen per model at run start
    concurrency: Annotated[
        int, Flag("requests in flight", group=ENDPOINT, metavar="N"), Field(ge=1, le=256)
    ] = 1
    batch: BatchSwitch = False
    batch_api: BatchApiChoice = "auto"
    batch_poll: BatchPollSeconds = 30.0
    stop_grace: Annotated[
        float,
        Flag(
            "seconds a stop (Ctrl+C, SIGTERM, the app's stop) gives the requests in flight "
            "before cancelling them; cancelled cases are asked by --resume",
            metavar="S",
        ),
        Field(ge=0, le=REASONING_TIMEOUT),
    ] = STOP_GRACE  # no attempt is given longer
    worker: stores.Worker = False
    lease: stores.Lease = stores.LEASE
    rate: stores.Rate = None
    shared_concurrency: stores.SharedConcurrency = None
    reports_dir: Path = Path("reports")

    @model_validator(mode="after")
    def _workers_share_postgres(self) -> Self:
        stores.workers_share_postgres(self.worker, self.db)
        return self

    @field_validator("tasks")
    @classmethod
    def _known_tasks(cls, value: list[int]) -> list[int]:
        return checks.known_tasks(value)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return checks.http_url(value)

    @field_validator("api_key")
    @classmethod
    def _usable_key(cls, value: SecretStr | None) -> SecretStr | None:
        return checks.usable_key(value)

    @property
    def batch_protocol(self) -> ProtocolName | None:
        """`--batch`: the protocol the endpoint's batch API speaks; None: asked live."""
        return protocol_for(self.base_url, self.batch_api) if self.batch else None

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
    the options. `planning.cells.matrix_cells` makes one `RunSettings` per cell."""

    models: Annotated[
        list[str],
        Flag(
            "model id, e.g. openai/gpt-4o-mini or baseline/random; several: a,b or repeat",
            name="--model",
            parse=flags.csv,
            many=True,
        ),
    ] = []
    prompts: Annotated[
        list[str],
        Flag(
            "evaluation prompt: a file, a folder of *.txt, a bundled name, or all; "
            "several: a,b or repeat",
            name="--prompt",
            parse=flags.csv,
            many=True,
            default="./evaluation-prompt.txt if present, else default",
        ),
    ] = []
    methods: Annotated[
        list[VdbMethod | None],  # None: the plain prompts
        Flag(
            "VulDetectBench prompting: plain, cot or few-shot; several: a,b or repeat",
            name="--method",
            parse=flags.methods,
            many=True,
            default=VDB_PLAIN,
        ),
    ] = []

    @model_validator(mode="before")
    @classmethod
    def _shorthands(cls, data: Any) -> Any:
        """`model=`, `prompt=` and `method=` are shorthand for a list of one."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for one, many in (("model", "models"), ("prompt", "prompts"), ("method", "methods")):
            value = data.pop(one, None)
            if value is not None and not data.get(many):
                data[many] = [value]
        return data

    @field_validator("methods", mode="before")
    @classmethod
    def _known_methods(cls, value: Any) -> Any:
        return checks.known_methods(value, VDB_METHODS)

    @field_validator("models", "methods")
    @classmethod
    def _once_each(cls, value: list[Any]) -> list[Any]:
        return checks.once_each(value)

    def run(
        self, model: str, prompt: EvaluationPrompt | None = None, method: VdbMethod | None = None
    ) -> "RunSettings":
        """One cell of the matrix: these options, with one model and its prompt or method."""
        shared = {name: getattr(self, name) for name in Options.model_fields}
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
        if recorded.get("task") == "find":  # what every run asked before tasks: not recorded,
            del recorded["task"]  # so a run's record (and what it is found again by) is kept
        return RecordedSettings.model_validate(recorded)


class Command(DeclaredSettings):
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
            " (--runs and --models pick runs), and exit",
            group=MODE,
        ),
    ] = False
    migrate_db: stores.MigrateDb = None
    verify: Annotated[bool, Flag("prove the suite's labels on PostgreSQL and exit", group=MODE)] = (
        False
    )
    pg_url: Annotated[
        str | None,
        Flag(
            "PostgreSQL for --verify, --rewrites, --task fix and --prove-findings",
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
    verify_json: Annotated[
        Path | None,
        Flag(
            "with --verify: write every case's outcome, and each proven bad case's witness"
            " (with it as an exploit), as JSON",
            group=MODE,
            name="--json",
            metavar="FILE",
        ),
    ] = None
    verify_deadline: Annotated[
        float,
        Flag(
            "with --verify: seconds each statement of suite code may run (fixtures included)"
            " before it is stopped, and each parameter set of a Python case",
            group=MODE,
            metavar="SECONDS",
            parse=flags.positive_seconds,
        ),
    ] = 10.0
    runs: Annotated[
        list[int] | None, Flag("run ids, comma separated", group=SELECTION, parse=flags.run_ids)
    ] = None
    select_models: Annotated[
        list[str] | None,
        Flag("model names", group=SELECTION, name="--models", parse=flags.model_names),
    ] = None

    @property
    def uses_key(self) -> bool:
        """Only runs send the API key: linting, reports, exports, --rescore, --verify and
        --migrate-db never read it."""
        reads = (self.lint, self.report, self.export, self.verify, self.rescore, self.migrate_db)
        return not any(reads)


RECORDED: dict[str, Record] = declared(RunSettings, Record)
