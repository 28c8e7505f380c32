"""Benchmark the HTML report: a database of 10,000 evaluations, the time to report it, the size.

Fills a fresh SQLite file through `Store` (as the engine does) with several models answering
the same cases, with explanations, unparsed replies and errors of realistic length, then
times each step of `--report`: reading and computing (`gather`), rendering, writing; then
the real command in a fresh process; and, when Debian's chromium is installed, how long the
browser takes to load the page and run its script. Prints the figures; asserts nothing.

    python scripts/bench_report.py [--models 5] [--cases 2000] [--db PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from secbench_tui.core.models import (  # noqa: E402
    Case,
    Completion,
    Evaluation,
    Message,
    Outcome,
    RecordedSettings,
    Scored,
    SuiteKind,
)
from secbench_tui.core.results import exports  # noqa: E402
from secbench_tui.core.results.report.files import report_path, write_text_atomic  # noqa: E402
from secbench_tui.core.results.report.gathering import gather  # noqa: E402
from secbench_tui.core.results.report.rendering import render_html  # noqa: E402
from secbench_tui.core.store.database import Store  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
APPS = ("clinic-portal-api", "purchase-order", "warehouse-management-system")
MODELS = (
    "openai/gpt-4o-mini",
    "anthropic/claude-3.5-haiku",
    "google/gemini-2.0-flash",
    "meta-llama/llama-3.3-70b-instruct",
    "baseline/random",
    "qwen/qwen-2.5-coder-32b",
    "mistralai/mistral-small",
    "deepseek/deepseek-chat",
)


def make_cases(count: int, rng: random.Random) -> list[Case]:
    cases = []
    for n in range(count):
        app = APPS[n % len(APPS)]
        expected = "bad" if n % 2 else "good"
        lines = [
            f"def handler_{n}(request, db):",
            "    user = request.user",
            "    rows = db.execute('SELECT * FROM orders WHERE tenant_id = :t AND id = :id',"
            " {'t': user.tenant_id, 'id': request.args['id']})",
        ]
        lines += [f"    step_{i} = transform(rows, {i})" for i in range(rng.randint(8, 30))]
        lines.append("    return render(rows)")
        code = "\n".join(lines)
        cases.append(
            Case(
                kind=SuiteKind.MARKDOWN,
                app=app,
                case_id=f"{app}/case-{n:05d}-{expected}.md",
                test_file=f"/suite/{app}/case-{n:05d}-{expected}.md",
                expected=expected,
                code=code,
                messages=(Message(role="user", content=code),),
                description=f"Scenario {n}: tenant isolation on order lookup, variant {n % 7}.",
            )
        )
    return cases


def answer(case: Case, skill: float, rng: random.Random) -> tuple[Completion, Scored]:
    roll = rng.random()
    if roll < 0.01:
        return Completion(error="HTTP 503: upstream overloaded (after 5 attempts)"), Scored(
            actual=None, outcome=Outcome.ERROR
        )
    if roll < 0.04:
        reply = "I think this might be a problem, but it depends on the context. " * 3
        return Completion(text=reply, latency_ms=rng.uniform(300, 4000)), Scored(
            actual=None, outcome=Outcome.UNPARSED
        )
    right = rng.random() < skill
    said = case.expected if right else ("good" if case.expected == "bad" else "bad")
    explanation = (
        f"The query filters by tenant_id taken from the authenticated user and binds the id "
        f"as a parameter, so {'no' if said == 'good' else 'a'} cross-tenant read is possible; "
        "the remaining steps only transform rows already scoped to the caller."
    )
    completion = Completion(
        text=f'{{"assessment": "{said}", "explanation": "{explanation}"}}',
        latency_ms=rng.uniform(300, 4000),
        prompt_tokens=rng.randint(600, 1500),
        completion_tokens=rng.randint(60, 200),
        cost=rng.uniform(0.0001, 0.002),
    )
    outcome = Outcome.CORRECT if right else Outcome.WRONG
    return completion, Scored(actual=said, outcome=outcome, explanation=explanation)


async def fill(path: Path, models: int, cases: int) -> float:
    rng = random.Random(7)
    suite = make_cases(cases, rng)
    store = await Store.open(path)
    started = time.perf_counter()
    try:
        for m, model in enumerate(MODELS[:models]):
            run_id = await store.create_run(
                model=model,
                suite_kind="markdown",
                suite_path="/suite",
                suite_hash="bench",
                prompt_hash="bench",
                settings=RecordedSettings(repeats=1, temperature=0),
                fingerprint=model,
                tool_version="bench",
                total_cases=len(suite),
            )
            skill = 0.5 if model.startswith("baseline/") else 0.6 + 0.05 * m
            for index, case in enumerate(suite):
                completion, scored = answer(case, skill, rng)
                evaluation = Evaluation(
                    run_id=run_id, case=case, index=index, completion=completion, scored=scored
                )
                await store.record(evaluation, f"{model}:{case.case_id}")
            await store.finish_run(run_id, "completed")
    finally:
        await store.close()
    return time.perf_counter() - started


async def time_report(path: Path, out_dir: Path) -> tuple[dict[str, float], Path]:
    figures: dict[str, float] = {}
    t0 = time.perf_counter()
    store = await Store.open(path)
    try:
        count = await store.count_results()
        t1 = time.perf_counter()
        data = await gather(store)
    finally:
        await store.close()
    t2 = time.perf_counter()
    html = render_html(data)
    t3 = time.perf_counter()
    target = report_path(out_dir)
    write_text_atomic(target, html)
    t4 = time.perf_counter()
    for name, exporter in exports.EXPORTERS.items():
        e0 = time.perf_counter()
        text = exporter(data)
        figures[f"export_{name}_s"] = time.perf_counter() - e0
        figures[f"export_{name}_bytes"] = len(text.encode("utf-8"))
    figures.update(
        evaluations=count,
        open_s=t1 - t0,
        gather_s=t2 - t1,
        render_s=t3 - t2,
        write_s=t4 - t3,
        total_s=t4 - t0,
        bytes=target.stat().st_size,
    )
    return figures, target


def time_command(db: Path, work: Path) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--report", "--db", str(db)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - started, result.stdout.strip()


def time_browser(page: Path, profile: Path) -> float | None:
    if not CHROMIUM.exists():
        return None
    started = time.perf_counter()
    subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--dump-dom",
            page.resolve().as_uri() + "#failures=1",
        ],
        capture_output=True,
        check=True,
        timeout=300,
    )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=5, help=f"1-{len(MODELS)}")
    parser.add_argument("--cases", type=int, default=2000, help="cases per model")
    parser.add_argument("--db", type=Path, help="keep the database here (default: temporary)")
    args = parser.parse_args()
    if not 1 <= args.models <= len(MODELS):
        parser.error(f"--models must be between 1 and {len(MODELS)}")
    work = Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        db = args.db or work / "results.db"
        if db.exists():
            db.unlink()
        fill_s = asyncio.run(fill(db, args.models, args.cases))
        figures, page = asyncio.run(time_report(db, work / "reports"))
        command_s, printed = time_command(db, work)
        browser_s = time_browser(page, work / "profile")
        print(
            f"database: {int(figures['evaluations']):,} evaluations, {args.models} models x "
            f"{args.cases:,} cases, filled through Store in {fill_s:.1f} s "
            f"({db.stat().st_size / 1e6:.1f} MB)"
        )
        print(
            f"report in process: {figures['total_s']:.3f} s total (open {figures['open_s']:.3f}"
            f", gather {figures['gather_s']:.3f}, render {figures['render_s']:.3f}, write "
            f"{figures['write_s']:.3f})"
        )
        print(f"report size: {figures['bytes'] / 1e6:.2f} MB ({int(figures['bytes']):,} bytes)")
        print(f"secbench-tui --report as a new process: {command_s:.3f} s -> {printed}")
        for name in exports.EXPORTERS:
            print(
                f"export {name}: {figures[f'export_{name}_s']:.3f} s, "
                f"{figures[f'export_{name}_bytes'] / 1e6:.2f} MB"
            )
        if browser_s is None:
            print("chromium: not installed, page load not measured")
        else:
            print(f"chromium headless load + filter + DOM dump: {browser_s:.2f} s")
        goal = "met" if figures["total_s"] < 2 else "NOT met"
        print(f"goal (< 2 s in process): {goal}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
