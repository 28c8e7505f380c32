"""Command line: parse flags, build `Settings`, then hand over to one front end.

Nothing here imports Textual unless the terminal app is what was asked for, so `--no-ui`,
`--report`, `--export` and `--lint` start quickly and work where Textual cannot run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import SecretStr, ValidationError

from secbench_tui import __version__
from secbench_tui.config import REASONING_EFFORTS, VDB_PLAIN, VDB_SCORINGS
from secbench_tui.core.suites import security_bench
from secbench_tui.core.suites.prompts import RESPONSE_FORMATS
from secbench_tui.exit_codes import EXIT_USAGE


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _flat(values: list[list[str]] | None) -> list[str]:
    """A repeatable comma-separated flag, in the order given."""
    return [part for value in values or [] for part in value]


def _methods(value: str) -> list[str]:
    """`--method a,b`; an empty value stays, for Settings to name the methods there are."""
    return _csv(value) or [value]


def _tasks(value: str) -> list[int]:
    try:
        return [int(part) for part in _csv(value)]
    except ValueError:
        raise argparse.ArgumentTypeError("takes task numbers 1-5, e.g. 1,3") from None


def _run_ids(value: str) -> list[int]:
    try:
        return [int(part) for part in _csv(value)]
    except ValueError:
        raise argparse.ArgumentTypeError("takes run ids, e.g. 3,4") from None


def _relations(value: str | None) -> list[str]:
    """`--rewrites a,b` or `all`: the relation names, checked (sqlglot and libcst load only
    when the flag is given)."""
    if value is None:
        return []
    from secbench_tui.core.suites.rewrites.relations import RelationError, parse_relations

    try:
        return list(parse_relations(value))
    except RelationError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--rewrites {value}: ")) from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="secbench-tui",
        description="Measure how well language models find security flaws in code.",
        epilog="Without --no-ui, --report, --export or --lint the terminal app opens.",
    )
    p.add_argument("--version", action="version", version=f"secbench-tui {__version__}")
    mode = p.add_argument_group("what to do")
    mode.add_argument("--no-ui", action="store_true", help="run headless and print progress")
    mode.add_argument("--report", action="store_true", help="write an HTML report and exit")
    mode.add_argument("--export", choices=("json", "csv", "junit"), help="export results")
    mode.add_argument(
        "--out",
        type=Path,
        help="file for --export (default: stdout), or for --report alone"
        " (default: reports/report_<time>.html)",
    )
    mode.add_argument("--lint", action="store_true", help="check a suite and exit")
    mode.add_argument(
        "--verify", action="store_true", help="prove the suite's labels on PostgreSQL and exit"
    )
    mode.add_argument("--pg-url", help="PostgreSQL for --verify (default: embedded pgserver)")

    run = p.add_argument_group("the run")
    run.add_argument(
        "--model",
        action="append",
        type=_csv,
        help="model id, e.g. openai/gpt-4o-mini or baseline/random; several: a,b or repeat",
    )
    run.add_argument("--cases", type=Path, help="suite folder (default: the bundled suite)")
    run.add_argument("--apps", type=_csv, help="only these apps, comma separated")
    run.add_argument(
        "--limit", type=int, help="only the first N cases (of each task, for VulDetectBench)"
    )
    run.add_argument("--tasks", type=_tasks, help="VulDetectBench tasks, e.g. 1,3 (default all)")
    run.add_argument(
        "--method",
        action="append",
        type=_methods,
        help="VulDetectBench prompting: plain, cot or few-shot; several: a,b or repeat",
    )
    run.add_argument(
        "--vdb-scoring",
        default="correct",
        choices=VDB_SCORINGS,
        help="VulDetectBench scoring: correct (default) or as library 0.0.5 does",
    )
    run.add_argument(
        "--prompt",
        action="append",
        type=_csv,
        help="evaluation prompt: a file, a folder of *.txt, a bundled name, or all; "
        "several: a,b or repeat",
    )
    run.add_argument(
        "--filter",
        action="append",
        metavar="GLOB",
        help="only cases whose id (app/file.md) matches; repeat for several",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan, requests and estimated cost; send nothing",
    )
    run.add_argument("--db", type=Path, default=Path("results.db"), help="SQLite database")
    run.add_argument("--summary-json", type=Path, help="write the run's summary as JSON")
    run.add_argument("--repeats", type=int, default=1, help="ask each case N times")
    run.add_argument("--resume", action="store_true", help="continue the last unfinished run")
    run.add_argument("--force", action="store_true", help="ask again even if a result exists")
    run.add_argument(
        "--retry-errors",
        action="store_true",
        help="re-ask only the cases of the last run that ended in an error",
    )
    run.add_argument("--max-cost", type=float, help="stop when the reported cost reaches USD")
    run.add_argument(
        "--rewrites",
        type=_relations,
        metavar="NAME[,NAME]",
        help="add meaning-preserving variants of every case, each proven equivalent on "
        "PostgreSQL before it is sent: relation names, or all",
    )
    run.add_argument(
        "--unproven-rewrites",
        action="store_true",
        help="also send variants that cannot be proven (no verification data or no PostgreSQL)",
    )

    api = p.add_argument_group("the endpoint")
    api.add_argument(
        "--base-url",
        help="OpenAI-compatible API root "
        "(default $OPENROUTER_BASE_URL or https://openrouter.ai/api/v1)",
    )
    api.add_argument("--temperature", type=float)
    api.add_argument(
        "--max-tokens",
        type=int,
        help="reply budget per request (default 1024, or 32768 for models that reason)",
    )
    api.add_argument(
        "--reasoning-effort",
        choices=REASONING_EFFORTS,
        help="sent as reasoning.effort (OpenRouter); not sent by default",
    )
    api.add_argument(
        "--request-style",
        default="secbench-tui",
        choices=security_bench.STYLES,
        help="security-bench: send the original evaluator's request, byte for byte",
    )
    api.add_argument("--seed", type=int)
    api.add_argument(
        "--response-format",
        default="json_schema",
        choices=RESPONSE_FORMATS,
        help="structured output to ask for (fall back for servers that reject it)",
    )
    api.add_argument("--max-retries", type=int, default=5)
    api.add_argument(
        "--timeout",
        type=float,
        help="seconds for each attempt, whole: connecting, the headers and every byte "
        "(default 120, or 600 for a model whose catalog entry says it reasons)",
    )
    api.add_argument("--concurrency", type=int, default=1, help="requests in flight")

    sel = p.add_argument_group("report and export selection")
    sel.add_argument("--runs", type=_run_ids, help="run ids, comma separated")
    sel.add_argument("--models", type=_csv, help="model names")
    return p


def uses_key(args: argparse.Namespace) -> bool:
    """Only runs send the API key: linting, reports, exports and --verify never read it."""
    return not (args.lint or args.report or args.export or args.verify)


def settings_from_args(args: argparse.Namespace, env: dict[str, str]):  # type: ignore[no-untyped-def]
    from secbench_tui.config import Settings
    from secbench_tui.core.run.providers.openai_compat import OPENROUTER_URL

    key = (env.get("OPENROUTER_API_KEY") or None) if uses_key(args) else None
    fields = {
        "models": _flat(args.model),
        "cases": args.cases,
        "apps": args.apps,
        "limit": args.limit,
        "db": args.db,
        "prompts": _flat(args.prompt),
        "filters": args.filter or [],
        "dry_run": args.dry_run,
        "base_url": args.base_url or env.get("OPENROUTER_BASE_URL") or OPENROUTER_URL,
        "api_key": SecretStr(key) if key else None,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "reasoning_effort": args.reasoning_effort,
        "request_style": args.request_style,
        "seed": args.seed,
        "response_format": args.response_format,
        "max_retries": args.max_retries,
        "timeout": args.timeout,
        "concurrency": args.concurrency,
        "repeats": args.repeats,
        "resume": args.resume,
        "force": args.force,
        "retry_errors": args.retry_errors,
        "max_cost": args.max_cost,
        "methods": [None if m == VDB_PLAIN else m for m in _flat(args.method)],
        "vdb_scoring": args.vdb_scoring,
        "summary_json": args.summary_json,
        "rewrites": args.rewrites or [],
        "unproven_rewrites": args.unproven_rewrites,
        "pg_url": args.pg_url,
    }
    if args.tasks is not None:
        fields["tasks"] = args.tasks
    return Settings(**fields)


def _validation_message(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        if not error["loc"]:  # a check across settings names its flag itself
            lines.append(error["msg"].removeprefix("Value error, "))
            continue
        flag = "--" + "-".join(str(p) for p in error["loc"]).replace("_", "-")
        if flag == "--api-key":
            flag = "OPENROUTER_API_KEY"  # the value is never shown
        lines.append(f"{flag}: {error['msg'].removeprefix('Value error, ')}")
    return "; ".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from secbench_tui.config import load_env

    try:
        settings = settings_from_args(args, load_env())
    except ValidationError as exc:
        print(f"secbench-tui: error: {_validation_message(exc)}", file=sys.stderr)
        return EXIT_USAGE
    if args.lint:
        from secbench_tui.linting import lint_main

        return int(lint_main(settings.cases_dir))
    if args.verify:
        from secbench_tui.verifying import verify_main

        return verify_main(settings.cases_dir, args.apps, args.pg_url)
    if args.report or args.export:
        from secbench_tui.reporting import export_main

        return export_main(settings, args.report, args.export, args.out, args.runs, args.models)
    if args.no_ui or args.dry_run:
        from secbench_tui.headless import run_headless

        return run_headless(settings)
    try:
        from secbench_tui.tui.app import run_app
    except ImportError as exc:
        print(f"secbench-tui: the terminal app cannot start ({exc}); use --no-ui", file=sys.stderr)
        return EXIT_USAGE
    return int(run_app(settings))
