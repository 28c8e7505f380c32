"""VulDetectBench: its test sets, its tokenizer and its scores."""

from typing import Final

# `--vdb-scoring`'s default: the benchmark's documented definitions (here, where importing it
# costs nothing: the scoring module loads the tokenizer).
DEFAULT_SCORING: Final = "correct"
