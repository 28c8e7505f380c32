"""From what was asked to what will run: one plan, made once, that every front end reads.

`plan.plan(settings, catalog)` makes the `Plan`: the runs of the model x prompt (x method)
matrix (`cells`), the cases of each (`suites`, with the variants of `--rewrites`), what the
catalog decides for each model (a reasoning model's max_tokens), what a request would not fit
(a prompt larger than the model's context) and, with the store, what it would ask and cost.
`--no-ui` and the app run it (`lifecycle.MatrixRun`), `--dry-run` prints it and the app's
setup screen shows its estimate: three readers of one plan, never three planners.
"""
