"""`gather()`: everything the report and the exports show, read from a `Store`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from secbench_tui.core.models import SuiteKind
from secbench_tui.core.results.metrics import (
    usage_stats,
    verdict_stats,
)
from secbench_tui.core.results.report.charts import accuracy_chart, app_chart
from secbench_tui.core.results.report.contenders import (
    case_views,
    markdown_contender,
    model_pairs,
    run_labels,
    vdb_columns,
    vdb_contender,
)
from secbench_tui.core.results.report.data import Contender, ReportData, VdbContender
from secbench_tui.core.results.report.ranking import hardest_cases, prompt_matrices, rank, verdicts
from secbench_tui.core.results.report.selection import choose_runs, prompt_labels
from secbench_tui.core.results.report.settings import shared_settings
from secbench_tui.core.store.database import Store


async def gather(
    store: Store,
    run_ids: Sequence[int] | None = None,
    models: Sequence[str] | None = None,
    now: datetime | None = None,
) -> ReportData:
    """Everything the report and the exports show, read from `store`."""
    every = await store.runs()
    runs = choose_runs(every, store.path, run_ids, models)
    vdb_kind = SuiteKind.VULDETECTBENCH.value
    prompts = prompt_labels(runs)
    labels = run_labels([r for r in runs if r.suite_kind != vdb_kind], prompts)
    labels |= run_labels([r for r in runs if r.suite_kind == vdb_kind], prompts)
    contenders: list[Contender] = []
    vdb: list[VdbContender] = []
    for run in runs:
        rows = await store.run_results(run.id)
        for row in rows:  # the prompt is the run's: exports carry it on every result
            row["prompt_name"] = run.prompt_name
            row["prompt_hash"] = run.prompt_hash
        if run.suite_kind == vdb_kind:
            vdb.append(vdb_contender(len(vdb), run, labels[run.id], rows))
            vdb[-1].prompt_label = prompts[run.id]
        else:
            contender = markdown_contender(len(contenders), run, labels[run.id], rows)
            contender.prompt_label = prompts[run.id]
            contenders.append(contender)
    contenders = rank(contenders)
    apps = sorted({app for c in contenders for app in c.apps})
    cases = case_views(contenders)
    real = [c for c in contenders if not c.baseline] or contenders
    real_rows = [row for c in real for row in c.rows]
    app_totals = {
        app: verdict_stats([r for c in real for r in c.rows if r["app"] == app]) for app in apps
    }
    pairs = model_pairs(contenders, {c.key: c for c in cases})
    chosen = {r.id for r in runs}
    others = [
        r
        for r in every
        if r.id not in chosen and r.finished > 0 and (not models or r.model_name in models)
    ]
    common = shared_settings([*contenders, *vdb])
    return ReportData(
        database=str(store.path),
        generated_at=(now or datetime.now()).astimezone(),
        explicit_selection=bool(run_ids),
        contenders=contenders,
        vdb=vdb,
        apps=apps,
        cases=cases,
        overall={**verdict_stats(real_rows), **usage_stats(real_rows), "models": len(real)},
        app_totals=app_totals,
        pairs=pairs,
        hardest=hardest_cases(cases),
        vdb_columns=vdb_columns(vdb),
        accuracy_chart=accuracy_chart(contenders),
        app_chart=app_chart(contenders, apps),
        verdicts=verdicts(contenders, pairs),
        common_settings=common,
        others=[] if run_ids else others,
        prompt_matrices=prompt_matrices(contenders, pairs),
    )
