"""Can the model fix it? Fixes proven by execution (`--task fix`), and `secbench-tui fix`,
which repairs the cases of a suite that `--verify` fails.

`models` names what verifying a fix finds; `verifying` runs each fix on verify's machinery as
a good case of its scenario and compares it with the scenario's compliant twins (with the
rewrite gate's comparison, `core.rewrites.equivalence`); `proposals` verifies a repaired case
as its label. The wing sits above the rewrites' one, whose comparison it reuses, and below
the figures (`core.results.fixes`), which name its outcomes.
"""
