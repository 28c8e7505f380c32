"""Where results live: the SQLite store, its stored values, and the original evaluator's
databases adopted in place."""
