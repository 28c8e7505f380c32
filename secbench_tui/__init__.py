"""secbench-tui: measure how well language models find security flaws in code."""

__version__ = "0.1.0"
