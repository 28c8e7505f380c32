"""What the process exits with, in one place: imported by every front end, importing nothing.

(Before, they lived in `cli`, and `headless` and `reporting` imported `cli`, which imports
them back to hand over: a cycle held together by late imports.)
"""

EXIT_OK = 0
EXIT_FAILED = 1  # lint or --verify found problems, a report or export could not be written
EXIT_USAGE = 2  # a flag, a setting or a path is wrong: the message names it and the fix
EXIT_ABORTED = 3  # bad key, no credits, unknown model, endpoint unreachable, database unusable
EXIT_INTERRUPTED = 130  # Ctrl+C (128 + SIGINT)
EXIT_BROKEN_PIPE = 141  # the output's reader went away, `| head` (128 + SIGPIPE), quietly
EXIT_TERMINATED = 143  # SIGTERM (128 + 15)
