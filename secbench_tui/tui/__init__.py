"""The terminal app (Textual). Only `secbench_tui.cli` imports it, and only without --no-ui."""
