"""Score a recorded `--vdb-scoring library` run with vuldetectbench 0.0.5 itself and compare.

Reads every reply of one run from the results database, feeds them, task by task and in
order, to the real library's `VulDetectBench_Engine` (each crashing per-sample metric call
scored 0, as our library mode does), then compares the library's per-sample scores with the
ones we stored and its reported numbers and crash count with our `--summary-json`. Needs the
library, nltk and `punkt_tab`, so run it in a scratch environment:

    secbench-tui --no-ui --cases ../shared/vuldetectbench/test --model M --db r.db \\
        --vdb-scoring library --summary-json s.json
    NLTK_DATA=/path/with/tokenizers/punkt_tab/english \\
        /tmp/vdbvenv/bin/python scripts/vdb_compare_run.py --db r.db --run 1 --summary s.json

A sample with no reply (an error) is given to the library as the reply our scoring treats it
as: the wrong YES/NO in task 1, an empty reply elsewhere; it is not counted as a crash.
Prints one line per task and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vdb_reference as ref  # noqa: E402

REPORT_KEYS = {
    "Accuracy": "accuracy",
    "F1-Score": "f1",
    "Avg Moderate Evaluation Score": "me",
    "Avg Strict Evaluation Score": "se",
    "Macro Token Recall": "mar",
    "Micro Token Recall": "mir",
    "Avg Union Line Recall": "urs",
    "Avg Line Recall": "ors",
}
SAMPLE_KEYS = {
    "hit": "hit",
    "Moderate Evaluation Score": "me",
    "Strict Evaluation Score": "se",
    "Token Recall": "recall",
    "Union Line Recall": "urs",
    "Line Recall": "ors",
}


def _entries(rows: list[sqlite3.Row], task: int) -> list[dict[str, Any]]:
    entries = []
    for row in rows:
        output = row["raw_reply"] or ""
        if row["outcome"] == "error":
            output = ("no" if row["expected_result"] == "YES" else "yes") if task == 1 else ""
        entries.append(
            {
                "task": task,
                "pos": int(row["case_id"].split("/")[1]),
                "gold": row["expected_result"],
                "output": output,
                "error": row["outcome"] == "error",
                "scores": json.loads(row["scores"] or "{}"),
            }
        )
    return entries


def compare_task(data: Path, task: int, rows: list[sqlite3.Row], ours: dict[str, Any]) -> bool:
    entries = _entries(rows, task)
    crashes = sum(1 for e in entries if not e["error"] and ref._crashes(e))
    with ref._zero_on_crash():
        report = ref._run_engine(data, task, entries)
    reported = {REPORT_KEYS[k]: v for item in report["overall metrics"] for k, v in item.items()}
    differ = {k: (v, ours.get(k)) for k, v in reported.items() if abs(v - ours.get(k, -1)) > 1e-12}
    samples = sum(
        1
        for entry, sample in zip(entries, report["verbose"], strict=True)
        for metric in sample["metrics"]
        if abs(entry["scores"].get(SAMPLE_KEYS[metric["single metric"]], 0.0) - metric["score"])
        > 1e-12
    )
    ok = not differ and not samples and crashes == ours.get("crashes", 0)
    print(
        f"task{task}: {len(entries)} samples  library {reported}  crashes {crashes} "
        f"(ours {ours.get('crashes', 0)})  differing numbers {differ or 'none'}  "
        f"differing samples {samples}  {'OK' if ok else 'DIFFERENT'}"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--run", type=int, required=True)
    parser.add_argument("--summary", type=Path, required=True, help="the run's --summary-json")
    parser.add_argument("--data", type=Path, default=ref.REPO / ".." / "shared/vuldetectbench/test")
    args = parser.parse_args()
    ours = json.loads(args.summary.read_text(encoding="utf-8"))["vuldetectbench"]
    counts = json.loads(args.summary.read_text(encoding="utf-8")).get("vuldetectbench_counts", {})
    with closing(sqlite3.connect(args.db)) as conn:
        conn.row_factory = sqlite3.Row
        rows = conn.execute(
            "SELECT * FROM evaluations WHERE run_id = ? AND repeat = 0 ORDER BY case_index",
            (args.run,),
        ).fetchall()
    ok = True
    for task in range(1, 6):
        mine = [r for r in rows if r["app"] == f"task{task}"]
        if mine:
            metrics = ours[f"task{task}"] | counts.get(f"task{task}", {})
            ok = compare_task(args.data, task, mine, metrics) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
