"""VulDetectBench: its test sets, its tokenizer and its scores."""
