"""What the process exits with, in one place: imported by every front end, importing nothing.

(Before, they lived in `cli`, and `headless` and `reporting` imported `cli`, which imports
them back to hand over: a cycle held together by late imports.)
"""

EXIT_OK = 0
EXIT_FAILED = 1  # lint or --verify found problems, a report or export could not be written
EXIT_USAGE = 2  # a flag, a setting or a path is wrong: the message names it and the fix
EXIT_ABORTED = 3  # bad key, no credits, unknown model, endpoint unreachable; --db unusable
EXIT_NO_ANSWERS = 4  # a run ended without a single answer (every request failed): the reason
EXIT_INTERRUPTED = 130  # Ctrl+C (128 + SIGINT)
EXIT_BROKEN_PIPE = 141  # the output's reader went away, `| head` (128 + SIGPIPE), quietly
EXIT_TERMINATED = 143  # SIGTERM (128 + 15)

# What `--help`, the README and docs/running.md list, in this order.
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "the run completed (whatever the model scored), or stopped at --max-cost"),
    (
        EXIT_FAILED,
        "lint or --verify found problems; a report, export or summary file cannot be written",
    ),
    (
        EXIT_USAGE,
        "usage error: a flag, setting, suite, prompt or --db path is wrong, or --runs names "
        "no run (named)",
    ),
    (
        EXIT_ABORTED,
        "run aborted: bad key, no credits, unknown model, endpoint unreachable; or --db "
        "unusable (damaged, locked, newer), for every command",
    ),
    (EXIT_NO_ANSWERS, "no case got an answer (every request failed): the commonest error is said"),
    (EXIT_INTERRUPTED, "stopped by Ctrl+C"),
    (EXIT_BROKEN_PIPE, "the output's reader went away (| head)"),
    (EXIT_TERMINATED, "stopped by SIGTERM"),
)
