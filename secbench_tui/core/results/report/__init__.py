"""The HTML report: results read from the database, arranged for people choosing a model.

`gather()` reads the chosen runs from a `Store` (by default the latest whole run of each model
on each suite), computes every figure through `core.metrics` and ranks the models into a
verdict: the most accurate, those McNemar's test cannot tell from it, those no better than
an offline reference, and what a correct answer costs. `render_html()` turns that into
one self-contained page with jinja2, autoescape on, so every string from a model, a case, a
model name or an app name is escaped. The page's own script and stylesheet are inline and
pinned by hashes in a Content-Security-Policy, so nothing else could run even if a string ever
slipped through unescaped. Nothing is re-run: any past run can be reported again. Control
characters in those strings are shown as `\\x1b` (`rendering._shown`), never written as they are.

One module per job: `data` (what the report is made of), `selection` (which runs),
`contenders` (each run's figures, the cases, the pairs), `ranking` (which model, and how
sure), `charts`, `settings` (what each run was asked with), `gathering` (`gather()`: all of
it from a `Store`), `rendering` (`render_html()`: jinja2) and `files` (where it is written).
"""
