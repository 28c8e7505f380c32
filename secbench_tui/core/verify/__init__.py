"""Proving a suite's labels by execution: `--verify` runs each case against a real database.

`data` reads the plain files a suite author writes beside the cases, `sql` and `python_app`
execute cases, `judge` decides proven / failed / not verifiable, `runner` ties them together.
"""

# Said before verify runs the code of any suite but the bundled one (the CLI prints it, the
# app asks for a confirmation with it).
SUITE_CODE_NOTICE = (
    "verify executes this suite's SQL (as an unprivileged PostgreSQL role, under a deadline) "
    "and its Python (in a child process, as you, with your network access): run it only on "
    "suites you are willing to execute (docs/verify.md: The sandbox)"
)
