"""What the benchmark scripts share: a loopback OpenAI-compatible server with configurable
latency (`loopback`), suites the server can answer (`suites`), running the tool and timing a
process (`processes`), the common flags and how figures are printed (`figures`), and databases
filled without a model (`databases`, `original_db`).

The scripts import nothing from `tests/`; tests may import from here where it spares a copy.
The package (`secbench_tui`) never ships any of it.
"""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL = "openai/gpt-4o-mini"  # the model the loopback server's catalog lists first
