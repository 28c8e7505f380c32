"""Proving a suite's labels by execution: `--verify` runs each case against a real database.

`data` reads the plain files a suite author writes beside the cases, `sql` and `python_app`
execute cases, `judge` decides proven / failed / not verifiable, `runner` ties them together.
"""
