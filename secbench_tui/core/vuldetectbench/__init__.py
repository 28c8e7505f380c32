"""VulDetectBench: its test sets, its tokenizer and its scores."""

import re
from pathlib import Path
from typing import Final

# `--vdb-scoring`'s default: the benchmark's documented definitions (here, where importing it
# costs nothing: the scoring module loads the tokenizer).
DEFAULT_SCORING: Final = "correct"

TASK_FILE = re.compile(r"^task(\d+)_code\.jsonl$")


def is_vuldetectbench_dir(path: Path) -> bool:
    """True for a folder holding at least one `task{N}_code.jsonl` file. Here, not in the
    loader, so that deciding what kind of suite a folder is loads nothing more."""
    if not path.is_dir():
        return False
    return any(TASK_FILE.match(p.name) and p.is_file() for p in path.iterdir())
