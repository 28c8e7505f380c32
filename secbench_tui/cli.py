"""Command line: flags derived from the declarations in `config`, then one front end.

Each flag, its choices, its help and its default come from a field of `config.Settings` or
`config.Command`; argparse passes on only the flags that were given, so the declared defaults
are the only ones. Nothing here imports Textual unless the terminal app is what was asked for,
so `--no-ui`, `--report`, `--export` and `--lint` start quickly and work where Textual cannot run.
"""

from __future__ import annotations

import argparse
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any, Literal, NoReturn, Union, get_args, get_origin

from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo

from secbench_tui import __version__
from secbench_tui.config import (
    ENDPOINT,
    FIX_FLAGS,
    MATRIX,
    MODE,
    RUN,
    SELECTION,
    Command,
    FixCommand,
    Flag,
    Settings,
    declared,
    describe_error,
)
from secbench_tui.errors import PROG, UsageError, say_error
from secbench_tui.exit_codes import EXIT_CODES, EXIT_USAGE

GROUPS = (MODE, RUN, ENDPOINT, SELECTION)  # the order --help lists them in


class Parser(argparse.ArgumentParser):
    """argparse, with its error line in the shape of every other one (`errors.say_error`):
    one line, `--flag: what is wrong`, as a setting's own validation says it."""

    def error(self, message: str) -> NoReturn:
        named = message.startswith("argument ")  # names its flag, and what it takes
        say_error(message.removeprefix("argument ") if named else f"{message}; see {PROG} --help")
        raise SystemExit(EXIT_USAGE)


def _plain_type(annotation: Any) -> Any:
    """`int | None` -> int: the type a flag's text is read as."""
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        return _plain_type(rest[0]) if len(rest) == 1 else str
    if get_origin(annotation) is list:  # a repeated flag: each value one item
        return _plain_type(get_args(annotation)[0])
    return annotation


def _choices(annotation: Any) -> tuple[str, ...] | None:
    """The values a `Literal` field allows, to offer them as the flag's choices."""
    plain = _plain_type(annotation)
    return get_args(plain) if get_origin(plain) is Literal else None


def _typed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """A declared parser whose ValueError argparse shows as the message it is."""

    def read(value: str) -> Any:
        try:
            return parse(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    read.__name__ = parse.__name__
    return read


def _default_words(info: FieldInfo, flag: Flag) -> str | None:
    if flag.default is not None:
        return flag.default
    value = info.get_default(call_default_factory=True)
    if value is None or value is False or value == []:
        return None
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def add_flag(group: Any, name: str, info: FieldInfo, flag: Flag) -> None:
    """One field as one flag: its name, type or choices, help and default, all declared."""
    option = flag.name or "--" + name.replace("_", "-")
    kwargs: dict[str, Any] = {"dest": name, "default": argparse.SUPPRESS}
    if info.annotation is bool:
        kwargs["action"] = "store_true"
    else:
        kwargs["metavar"] = flag.metavar or option.lstrip("-").upper().replace("-", "_")
        choices = _choices(info.annotation)
        if flag.parse is not None:
            kwargs["type"] = _typed(flag.parse)
        elif choices:
            kwargs["choices"] = choices
            kwargs["metavar"] = "{" + ",".join(choices) + "}"
        elif _plain_type(info.annotation) not in (int, float):  # numbers: the field checks
            kwargs["type"] = _plain_type(info.annotation)
        if flag.many:
            kwargs["action"] = "append"
        if flag.nargs:
            kwargs["nargs"] = flag.nargs
    words = _default_words(info, flag)
    default = f" (default: {words})" if words else ""
    if flag.env:
        default = f" (default: ${flag.env} or {words})" if words else f" (default: ${flag.env})"
    kwargs["help"] = (flag.help + default).replace("%", "%%")
    group.add_argument(option, **kwargs)


def exit_codes_help() -> str:
    """The exit codes, for the end of `--help` (with several runs, the worst of them)."""
    lines = ["exit codes (with several runs, the worst of them):"]
    lines += [f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES]
    return "\n".join(lines)


EXAMPLES = """examples:
  secbench-tui --model baseline/random --no-ui      offline, no key: the bundled suite
  secbench-tui --model openai/gpt-4o-mini --no-ui   needs OPENROUTER_API_KEY (or .env)
  secbench-tui --model a/x,b/y --dry-run            the plan and its estimated cost
  secbench-tui --model openai/gpt-4o-mini --no-ui --resume   finish an interrupted run
  secbench-tui --report                             HTML report of ./results.db
  secbench-tui --export csv --out results.csv       or json, junit
  secbench-tui --lint --cases my-suite/             check a suite
  secbench-tui --verify --filter 'my-app/*'         prove labels on PostgreSQL
  secbench-tui fix --cases my-suite/ --model X      repair the cases --verify fails"""


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog=PROG,
        description="Measure how well language models find security flaws in code.",
        epilog=EXAMPLES
        + "\n\nWithout --no-ui, --dry-run, --report, --export, --lint, --rescore or --verify\n"
        "the terminal app opens (with no terminal, --model runs headless).\n\n" + exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    groups = {title: p.add_argument_group(title) for title in GROUPS}
    for model in (Command, Settings):
        flags = declared(model, Flag)
        for name in sorted(flags, key=lambda name: name not in MATRIX):  # --model first
            flag = flags[name]
            if flag.help:  # a setting with no help is read from the environment only
                add_flag(groups[flag.group], name, model.model_fields[name], flag)
    return p


FIX_DESCRIPTION = """\
Repair the cases of a suite that --verify fails: a good case that breaks its property,
a bad case that no parameter set breaks. The model proposes each case's code anew; a
proposal proven on PostgreSQL is written beside its case as <case>.md.proposed (never
over a file), for review; --apply applies them (docs/fixes.md)."""


def build_fix_parser() -> argparse.ArgumentParser:
    """`secbench-tui fix`: its own flag and those of the run and of --verify it shares."""
    p = Parser(
        prog=f"{PROG} fix",
        description=FIX_DESCRIPTION,
        epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    groups = {title: p.add_argument_group(title) for title in (MODE, RUN, ENDPOINT)}
    for model in (FixCommand, Command, Settings):
        flags = declared(model, Flag)
        for name in (n for n in flags if model is FixCommand or n in FIX_FLAGS):
            flag = flags[name]
            group = groups.get(flag.group, groups[RUN])
            add_flag(group, name, model.model_fields[name], flag)
    return p


def fix_main(argv: Sequence[str]) -> int:
    """`secbench-tui fix ...`: parse its flags, then hand over to `fixing`."""
    args = build_fix_parser().parse_args(argv)
    from secbench_tui.config import load_env

    try:
        env = load_env()
    except UsageError as exc:  # a .env that cannot be read
        say_error(exc)
        return EXIT_USAGE
    try:
        fix = FixCommand(**_given(args, FixCommand))
        command = command_from_args(args)
        settings = settings_from_args(args, env)
    except ValidationError as exc:  # a value from the environment is named by its variable
        say_error(describe_error(exc, named=from_environment(args, env)))
        return EXIT_USAGE
    from secbench_tui.fixing import fix_suite_main

    return fix_suite_main(settings, command.pg_url, command.verify_deadline, fix.apply)


def _given(args: argparse.Namespace, model: type[BaseModel]) -> dict[str, Any]:
    """The flags given for `model`'s fields; a repeated flag's values in the order given."""
    values: dict[str, Any] = {}
    for name, flag in declared(model, Flag).items():
        if hasattr(args, name):
            value = getattr(args, name)
            if flag.many:
                value = [part for given in value for part in as_list(given)]
            values[name] = value
    return values


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def parse_command(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def command_from_args(args: argparse.Namespace) -> Command:
    return Command(**_given(args, Command))


def from_environment(args: argparse.Namespace, env: dict[str, str]) -> dict[str, str]:
    """The settings the environment (or `.env`) gives, not given as flags: field -> variable."""
    given = _given(args, Settings)
    return {
        name: flag.env
        for name, flag in declared(Settings, Flag).items()
        if flag.env and name not in given and env.get(flag.env)
    }


def settings_from_args(args: argparse.Namespace, env: dict[str, str]) -> Settings:
    """The flags given, over the environment (for settings declared with one), over the
    declared defaults; the API key only when the command sends requests."""
    fields = _given(args, Settings)
    uses_key = command_from_args(args).uses_key
    for name, variable in from_environment(args, env).items():
        if name == "api_key":
            if uses_key:
                fields[name] = SecretStr(env[variable])
        else:
            fields[name] = env[variable]
    return Settings(**fields)


def in_terminal() -> bool:
    """The app needs a terminal on both sides: keys come from stdin, the screen goes to stdout."""
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["fix"]:  # the one subcommand: `secbench-tui fix`
        return fix_main(given[1:])
    args = parse_command(given)
    from secbench_tui.config import load_env

    try:
        env = load_env()
    except UsageError as exc:  # a .env that cannot be read
        say_error(exc)
        return EXIT_USAGE
    try:
        command = command_from_args(args)
        settings = settings_from_args(args, env)
    except ValidationError as exc:  # a value from the environment is named by its variable
        say_error(describe_error(exc, named=from_environment(args, env)))
        return EXIT_USAGE
    if (settings.rewrites or settings.task == "fix" or settings.prove_findings) and command.pg_url:
        settings = settings.replace(pg_url=command.pg_url)  # proven where --verify would run
    if command.lint:
        from secbench_tui.linting import lint_main

        return int(lint_main(settings.cases_dir, settings.apps))
    if command.migrate_db:
        from secbench_tui.migrating import migrate_main

        return migrate_main(*command.migrate_db)
    if command.rescore:
        from secbench_tui.rescoring import rescore_main

        return rescore_main(
            settings.db,
            command.runs,
            command.select_models,
            command.pg_url,
            settings.prove_findings,
        )
    if command.verify:
        from secbench_tui.verifying import verify_main

        return verify_main(
            settings.cases_dir,
            settings.apps,
            command.pg_url,
            mutants=command.mutants,
            allow_unverified=command.allow_unverified,
            deadline=command.verify_deadline,
            only=settings.filters,
            json_out=command.verify_json,
        )
    if command.report or command.export:
        from secbench_tui.reporting import export_main

        return export_main(
            settings,
            command.report,
            command.export,
            command.out,
            command.runs,
            command.select_models,
        )
    if not (command.no_ui or settings.dry_run) and not in_terminal():
        if not settings.models:
            say_error(
                "no terminal for the app (standard input or output is not a terminal): give "
                "--model ID to run headless (--no-ui), e.g. --model baseline/random --no-ui"
            )
            return EXIT_USAGE
        print(
            f"{PROG}: standard input or output is not a terminal: running headless (--no-ui)",
            file=sys.stderr,
            flush=True,
        )
        command = command.replace(no_ui=True)
    if command.no_ui or settings.dry_run:
        from secbench_tui.headless import run_headless

        return run_headless(settings)
    try:
        from secbench_tui.tui.app import run_app
    except ImportError as exc:
        say_error(f"the terminal app cannot start ({exc}); use --no-ui")
        return EXIT_USAGE
    return int(run_app(settings))
