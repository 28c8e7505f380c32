"""Benchmarks and maintenance scripts: run from a checkout, never installed with the package.

A package so that the tests can import the harness the scripts share (`scripts.harness`)
where they need the same fixture; the scripts themselves import nothing from `tests/`.
"""
