"""How fast the comparison views open on a database of 100,000 results.

    python scripts/bench_compare.py [--rows 100000] [--repeat 3]

Prints figures; asserts nothing. The database holds 4 runs of N/4 cases each (the store's
schema, bulk inserts), with 1 case in 7 answered differently by run 2, so the grid has
disagreements and the diff has flips. Each figure is the wall time from the key press (or the
screen push) until every worker is done and the screen is drawn, median of `--repeat`:

- baseline: the results screen opening on the same database (its first page of 200 rows);
- grid: the case x run grid of the 4 runs (counts + the first page of 200 cases), then
  "only disagreements", the next page, and one case's answers side by side;
- diff: run 1 against run 2 (counts both ways + the first page of flipped cases), then only
  the fixed ones;
- sort: the results sorted by case id (keyset on (case_id, id)).

The ratio to the baseline says whether a view costs more than the screen users already know.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


async def measure(db: Path) -> dict[str, float]:
    from textual.worker import WorkerCancelled

    from secbench_tui.config import Settings
    from secbench_tui.tui.app import make_app
    from secbench_tui.tui.screens.compare import AnswersScreen, CompareScreen, DiffScreen
    from secbench_tui.tui.screens.results import ResultsScreen
    from secbench_tui.tui.widgets.case_tables import GridTable

    figures: dict[str, float] = {}
    app = make_app(Settings(db=db), offline_catalog=True)
    async with app.run_test(size=(160, 50)) as pilot:

        async def settled() -> None:
            while any(not w.is_finished for w in app.workers):
                try:
                    await app.workers.wait_for_complete()
                except WorkerCancelled:
                    pass
            await pilot.pause()

        async def timed(name: str, action: Callable[[], object | Awaitable[object]]) -> None:
            start = time.perf_counter()
            result = action()
            if asyncio.iscoroutine(result):
                await result
            await pilot.pause()
            await settled()
            figures[name] = time.perf_counter() - start

        await settled()
        store = await app.store()
        runs = await store.runs()

        await timed("results_open", lambda: app.push_screen(ResultsScreen()))
        results = app.screen
        assert isinstance(results, ResultsScreen)
        await timed("results_sort_by_case", lambda: results.sort_by("case_id"))
        figures["results_rows"] = results.query_one("ResultsTable").row_count  # type: ignore[attr-defined]

        await timed("grid_open", lambda: app.push_screen(CompareScreen(runs, [1, 2, 3, 4])))
        grid = app.screen
        assert isinstance(grid, CompareScreen)
        table = grid.query_one(GridTable)
        figures["grid_rows"] = table.row_count
        figures["grid_cases"] = grid.counts.cases if grid.counts else 0
        figures["grid_disagreements"] = grid.counts.disagreements if grid.counts else 0

        def to_end() -> None:
            table.move_cursor(row=table.row_count - 1, animate=False)

        await timed("grid_next_page", to_end)
        await timed("grid_only_disagreements", grid.action_toggle_disagreements)
        await timed("grid_answers", grid.action_answers)
        assert isinstance(app.screen, AnswersScreen)
        await app.pop_screen()
        await app.pop_screen()
        await settled()

        await timed("diff_open", lambda: app.push_screen(DiffScreen(runs, 1, 2)))
        diff = app.screen
        assert isinstance(diff, DiffScreen)
        figures["diff_flipped"] = diff.counts.flipped if diff.counts else 0
        await timed("diff_only_fixed", diff.action_cycle_flips)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from scripts.harness.databases import fill_results

    with tempfile.TemporaryDirectory(prefix="secbench-bench-") as tmp:
        db = Path(tmp) / "big.db"
        t = time.perf_counter()
        asyncio.run(fill_results(db, args.rows, runs=4))
        with sqlite3.connect(db) as conn:  # run 2 answers 1 case in 7 differently
            conn.execute(
                "UPDATE evaluations SET outcome = CASE outcome WHEN 'correct' THEN 'wrong'"
                " ELSE 'correct' END WHERE run_id = 2 AND case_index % 7 = 0"
            )
        print(f"built a database of {args.rows:,} results in {time.perf_counter() - t:.1f}s")
        rounds = [asyncio.run(measure(db)) for _ in range(args.repeat)]
        first = rounds[0]
        print(
            f"grid: {int(first['grid_cases']):,} cases x 4 runs, "
            f"{int(first['grid_disagreements']):,} disagreements; diff run 1 -> 2: "
            f"{int(first['diff_flipped']):,} flipped"
        )
        base = statistics.median(r["results_open"] for r in rounds)
        print(f"median of {args.repeat} (ratio to the results screen opening, the baseline):")
        for key in (
            "results_open",
            "results_sort_by_case",
            "grid_open",
            "grid_next_page",
            "grid_only_disagreements",
            "grid_answers",
            "diff_open",
            "diff_only_fixed",
        ):
            value = statistics.median(r[key] for r in rounds)
            print(f"  {key.replace('_', ' ')}: {value:.3f}s  (x{value / base:.2f})")


if __name__ == "__main__":
    main()
