"""Suite lint: checks a suite before its numbers are trusted (labels readable from the surface,
files that do not parse, rules, verify data)."""
