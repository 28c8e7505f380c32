"""How fast the terminal app shows its first screen, and opens the results of 100,000 rows.

    python scripts/bench_tui.py [--rows 100000] [--repeat 3]

Prints figures; asserts nothing. Three measurements:

1. first screen, real terminal: `secbench-tui` started inside tmux (when tmux is installed);
   the wall time from launch until the setup screen's "Model" pane is on the terminal.
2. first screen, headless: a fresh interpreter that imports the app and runs it headless;
   the time from interpreter start to the setup screen mounted and drawn.
3. results screen on a database of N results (built with the store's schema and bulk
   inserts): the time from pushing the screen until the first page, the runs list and the
   filters are shown; then the time a filter, a text search and the next page take, the
   next page again once 10,000 rows are loaded, and switching to newest first.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

HEADLESS_PROBE = """
import time
start = time.perf_counter()
import asyncio, sys
from pathlib import Path
from secbench_tui.config import Settings
from secbench_tui.tui.app import make_app
from secbench_tui.tui.screens.setup import SetupScreen

async def main():
    app = make_app(Settings(model="baseline/random", db=Path(sys.argv[1])), offline_catalog=True)
    async with app.run_test(size=(120, 40)) as pilot:
        while not isinstance(app.screen, SetupScreen) or not app.screen.is_mounted:
            await pilot.pause(0.001)
        await pilot.pause()
        print(f"{time.perf_counter() - start:.4f}")

asyncio.run(main())
"""


def first_screen_tmux(db: Path, repeat: int) -> list[float] | None:
    if shutil.which("tmux") is None:
        return None
    times = []
    env = {**os.environ, "XDG_CACHE_HOME": str(db.parent / "cache")}
    for i in range(repeat):
        name = f"secbench-bench-{os.getpid()}-{i}"
        tmux = ["tmux", "-L", name]  # a server of its own, gone with its session
        command = f"{sys.executable} -m secbench_tui --model baseline/random --db {db}"
        start = time.perf_counter()
        subprocess.run(
            [
                *tmux,
                "new-session",
                "-d",
                "-s",
                name,
                "-x",
                "120",
                "-y",
                "40",
                "-c",
                str(REPO),
                command,
            ],
            check=True,
            env=env,
        )
        try:
            while time.perf_counter() - start < 30:
                screen = subprocess.run(
                    [*tmux, "capture-pane", "-p", "-t", name], capture_output=True, text=True
                ).stdout
                if "Model" in screen and "Suite" in screen:
                    times.append(time.perf_counter() - start)
                    break
                time.sleep(0.01)
        finally:
            subprocess.run([*tmux, "kill-server"], capture_output=True)
    return times


def first_screen_headless(db: Path, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", HEADLESS_PROBE, str(db)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(done.stdout.strip().splitlines()[-1]))
    return times


async def results_figures(db: Path) -> dict[str, float]:
    from textual.widgets import Input, Select
    from textual.worker import WorkerCancelled

    from secbench_tui.config import Settings
    from secbench_tui.tui.app import make_app
    from secbench_tui.tui.screens.results import ResultsScreen
    from secbench_tui.tui.widgets.results_table import PAGE, ResultsTable

    figures: dict[str, float] = {}
    app = make_app(Settings(db=db), offline_catalog=True)
    async with app.run_test(size=(120, 40)) as pilot:

        async def settled() -> None:
            """Every worker done; one replaced by a newer one (exclusive groups) is done too."""
            while any(not w.is_finished for w in app.workers):
                try:
                    await app.workers.wait_for_complete()
                except WorkerCancelled:
                    pass
            await pilot.pause()

        await settled()
        await app.store()
        start = time.perf_counter()
        app.action_results()
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        figures["open"] = time.perf_counter() - start
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        table = screen.query_one(ResultsTable)
        figures["rows_shown"] = table.row_count
        figures["rows_total"] = table.total

        async def timed(action) -> float:  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            action()
            await pilot.pause()
            await settled()
            return time.perf_counter() - t

        figures["filter_outcome"] = await timed(
            lambda: setattr(screen.query_one("#filter-outcome", Select), "value", "unparsed")
        )
        figures["filter_model_and_outcome"] = await timed(
            lambda: setattr(screen.query_one("#filter-model", Select), "value", "vendor/model-3")
        )
        screen.query_one("#filter-outcome", Select).clear()
        screen.query_one("#filter-model", Select).clear()
        await settled()
        figures["search_rare_text"] = await timed(
            lambda: setattr(screen.query_one("#search", Input), "value", "explanation 99999")
        )
        screen.query_one("#search", Input).value = ""
        await pilot.pause(0.3)
        await settled()
        table.focus()
        before = table.row_count

        def to_end() -> None:
            table.move_cursor(row=table.row_count - 1, animate=False)

        figures["next_page"] = await timed(to_end)
        figures["rows_after_next_page"] = table.row_count
        assert table.row_count == before + PAGE or table.exhausted

        # 50 pages down, a page at a time as a user holding `end` would: the table grows
        # to 10,000 rows; each step includes drawing
        steps = []
        for _ in range(48):
            steps.append(await timed(to_end))
        figures["page_at_10k_rows"] = statistics.median(steps[-10:])
        figures["rows_after_paging"] = table.row_count
        figures["newest_first"] = await timed(lambda: screen.action_order(True))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from scripts.harness.databases import fill_results

    with tempfile.TemporaryDirectory(prefix="secbench-bench-") as tmp:
        empty = Path(tmp) / "empty.db"
        big = Path(tmp) / "big.db"
        tmux = first_screen_tmux(empty, args.repeat)
        if tmux:
            print(
                f"first screen, real terminal (tmux 120x40): median {statistics.median(tmux):.3f}s"
                f"  runs {', '.join(f'{t:.3f}' for t in tmux)}"
            )
        else:
            print("first screen, real terminal: skipped (no tmux)")
        headless = first_screen_headless(empty, args.repeat)
        print(
            f"first screen, headless from interpreter start: median "
            f"{statistics.median(headless):.3f}s  runs {', '.join(f'{t:.3f}' for t in headless)}"
        )
        t = time.perf_counter()
        asyncio.run(fill_results(big, args.rows))
        print(
            f"built a database of {args.rows:,} results in {time.perf_counter() - t:.1f}s "
            f"({big.stat().st_size / 1e6:.0f} MB)"
        )
        figures = asyncio.run(results_figures(big))
        print(
            f"results screen open ({int(figures['rows_shown'])} of "
            f"{int(figures['rows_total']):,} rows shown): {figures['open']:.3f}s"
        )
        keys = ("filter_outcome", "filter_model_and_outcome", "search_rare_text", "next_page")
        for key in keys:
            note = "  (includes the 0.25s typing debounce)" if key.startswith("search") else ""
            print(f"  {key.replace('_', ' ')}: {figures[key]:.3f}s{note}")
        print(f"  rows after next page: {int(figures['rows_after_next_page'])}")
        print(
            f"  next page with {int(figures['rows_after_paging']):,} rows loaded (median of the"
            f" last 10): {figures['page_at_10k_rows']:.3f}s"
        )
        print(f"  newest first (count + first page again): {figures['newest_first']:.3f}s")


if __name__ == "__main__":
    main()
