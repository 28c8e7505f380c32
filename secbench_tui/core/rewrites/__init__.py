"""`--rewrites`: meaning-preserving variants of a suite's cases, each proven by execution.

`relations` names the relations and makes variants (`sql` with sqlglot, `python` with
libcst: real parsers, never regular expressions); `gate` proves each variant equivalent to
its original on the verify machinery before it may be sent.
"""
