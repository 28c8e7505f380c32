"""What a markdown run asks beyond a verdict, and proves after it: `--task` (issue 33) and
`--prove-findings` (issue 32), declared beside each other.

Each is a typed field as `config.models` declares every setting (its type, `Flag` and `Record`),
written here as an annotated type that `Options` gives its name and default; what they do is
`proving_fixes` and `proving`.
"""

from typing import Annotated, Literal

from secbench_tui.config.flags import Flag, Record

Task = Literal["find", "fix"]

TaskChoice = Annotated[
    Task,
    Flag(
        "what a markdown suite's model is asked: find (a verdict on every case) or fix (the"
        " corrected code of every bad case, verified on PostgreSQL after the run)"
    ),
    Record("markdown"),
]
ProveFindingsSwitch = Annotated[
    bool,
    Flag(
        "after the run, run each finding's exploit on PostgreSQL against the flawed case"
        " and its compliant twins (the prompt exploit asks for them; with --rescore, prove"
        " the stored replies' again)"
    ),
]
