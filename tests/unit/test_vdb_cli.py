"""VulDetectBench through the real command: flags, requests on the wire, summary, library mode.

The command runs as a subprocess against the loopback OpenRouter server (tests/e2e/server.py),
which answers each case with a reply recorded in tests/fixtures/vdb/outputs.json; what the
database and `--summary-json` then hold is checked against what vuldetectbench 0.0.5 itself
reported for the same replies (tests/fixtures/vdb/library_results.json).
"""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from vdb_fixtures import SHARED_VDB, library_results, outputs

from secbench_tui.core.models import Case
from secbench_tui.core.vuldetectbench.loader import load_vuldetectbench
from secbench_tui.core.vuldetectbench.task_scores import METRIC_KEYS
from tests.e2e.harness import FAKE_KEY, run_cli
from tests.e2e.server import LoopbackServer, ReceivedRequest, reply

TEST_SET = SHARED_VDB / "test"
SAMPLE = re.compile(r"/\* sample (\d+) \*/")

# one worker makes the module's shared fixture once (pyproject: --dist=loadgroup)
pytestmark = pytest.mark.xdist_group("vdb-cli")
# The server would answer an empty reply with 200 and no content, which the client retries
# as a fault: those replies are left out here (test_vdb_library_scoring covers them).
SENT = [e for e in outputs() if e["output"].strip()]


def _write_set(folder: Path, entries: list[dict[str, Any]]) -> Path:
    """A test set whose record for each entry carries its number in the code."""
    folder.mkdir()
    for task in sorted({e["task"] for e in entries}):
        lines = []
        for e in (e for e in entries if e["task"] == task):
            record = {"idx": e["idx"], "cwe": "0", "answer": e["gold"]}
            record["code"] = f"/* sample {e['n']} */\nint f(char *s);"
            if task == 2:
                record["selection"] = e["selection"]
            lines.append(json.dumps(record))
        (folder / f"task{task}_code.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    return folder


def _replay(request: ReceivedRequest) -> Any:
    found = SAMPLE.search(request.prompt)
    assert found, "every prompt carries its sample number"
    by_number = {e["n"]: e for e in outputs()}
    return reply(by_number[int(found.group(1))]["output"])


def _numbers(entries: list[dict[str, Any]]) -> dict[str, int]:
    """Case id (task and position, as `_write_set` lays them out) -> entry number."""
    ids: dict[str, int] = {}
    for task in sorted({e["task"] for e in entries}):
        for pos, e in enumerate(e for e in entries if e["task"] == task):
            ids[f"task{task}/{pos}"] = e["n"]
    return ids


def _metrics_are_fractions(summary: dict[str, Any], tasks: list[int]) -> None:
    vdb = summary["vuldetectbench"]
    assert sorted(vdb) == [f"task{t}" for t in tasks]
    for task, metrics in vdb.items():
        for key in METRIC_KEYS[task]:
            assert isinstance(metrics[key], float) and 0.0 <= metrics[key] <= 1.0, (task, key)
        assert set(metrics) == set(METRIC_KEYS[task]), task  # exactly the documented keys
    assert sorted(summary["vuldetectbench_counts"]) == sorted(vdb)


@pytest.mark.skipif(not TEST_SET.is_dir(), reason="needs ../shared/vuldetectbench")
def test_tasks_and_method_on_the_real_test_set(tmp_path: Path) -> None:
    summary_json = tmp_path / "s.json"
    out = run_cli(
        "http://127.0.0.1:9/unused",
        tmp_path / "r.db",
        TEST_SET,
        *("--tasks", "1,3", "--method", "cot", "--summary-json", str(summary_json)),
        model="baseline/random",
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads(summary_json.read_text("utf-8"))
    _metrics_are_fractions(summary, [1, 3])
    assert summary["cases"] == 1000 + 100
    assert "task1: accuracy" in out.stdout and "task3: mar" in out.stdout


@pytest.mark.parametrize("method", ["fewshot", "COT", ""])
def test_an_unknown_method_is_a_usage_error(tmp_path: Path, method: str) -> None:
    data = _write_set(tmp_path / "vdb", [e for e in SENT if e["task"] == 1][:2])
    out = run_cli("http://127.0.0.1:9/unused", tmp_path / "r.db", data, "--method", method)
    assert out.returncode == 2
    assert "--method" in out.stderr and "cot" in out.stderr and "few-shot" in out.stderr
    assert not (tmp_path / "r.db").exists()


@dataclass
class LibraryRun:
    requests: list[ReceivedRequest]
    cases: list[Case]
    stored: dict[int, dict[str, float]]  # entry number -> scores recorded for its reply
    summary: dict[str, Any]


@pytest.fixture(scope="module")
def library_run(tmp_path_factory: pytest.TempPathFactory) -> LibraryRun:
    """One `--vdb-scoring library` run of every recorded reply, through the loopback server."""
    tmp = tmp_path_factory.mktemp("vdb-library")
    data = _write_set(tmp / "vdb", SENT)
    with LoopbackServer(default=_replay) as server:
        out = run_cli(
            server.base_url,
            tmp / "r.db",
            data,
            *("--vdb-scoring", "library", "--concurrency", "8"),
            *("--summary-json", str(tmp / "s.json")),
            key=FAKE_KEY,
        )
        requests = server.completions()
    assert out.returncode == 0, out.stderr
    numbers = _numbers(SENT)
    with closing(sqlite3.connect(tmp / "r.db")) as conn:
        stored = {
            numbers[case_id]: json.loads(scores)
            for case_id, scores in conn.execute("SELECT case_id, scores FROM evaluations")
        }
    summary = json.loads((tmp / "s.json").read_text("utf-8"))
    return LibraryRun(requests, load_vuldetectbench(data), stored, summary)


def test_requests_are_the_library_prompts_without_structured_output(
    library_run: LibraryRun,
) -> None:
    assert len(library_run.requests) == len(SENT)
    prompts = {
        c.messages[1].content: [{"role": m.role, "content": m.content} for m in c.messages]
        for c in library_run.cases
    }
    for request in library_run.requests:
        assert "response_format" not in request.body and "provider" not in request.body
        messages = request.body["messages"]
        assert messages == prompts[messages[1]["content"]]


def _library_samples(task: str) -> list[tuple[int, dict[str, Any]]]:
    """(entry number, the library's per-sample report) for the replies sent."""
    wrapped = library_results()["tasks"][task]["wrapped"]
    sent = {e["n"] for e in SENT}
    pairs = zip(wrapped["entries"], wrapped["report"]["verbose"], strict=True)
    return [(n, sample) for n, sample in pairs if n in sent]


@pytest.mark.parametrize("task", ["1", "2", "3", "4", "5"])
def test_library_scoring_stores_the_library_per_sample_scores(
    library_run: LibraryRun, task: str
) -> None:
    samples = _library_samples(task)
    assert len(samples) > 20
    for n, sample in samples:
        for metric in sample["metrics"]:
            key = SAMPLE_KEYS[metric["single metric"]]
            assert library_run.stored[n][key] == pytest.approx(metric["score"], abs=1e-12), n


@pytest.mark.parametrize("task", ["1", "2", "3", "4", "5"])
def test_library_summary_reports_the_library_numbers_and_crashes(
    library_run: LibraryRun, task: str
) -> None:
    samples = _library_samples(task)
    scores = [[m["score"] for m in sample["metrics"]] for _, sample in samples]
    metrics = library_run.summary["vuldetectbench"][f"task{task}"]
    counts = library_run.summary["vuldetectbench_counts"][f"task{task}"]
    crashed = {int(n) for n in library_results()["tasks"][task]["crashes"]}
    assert counts["crashes"] == len(crashed & {n for n, _ in samples})
    assert (counts["n"], counts["errors"]) == (len(samples), 0)
    expected = _library_overall(task, samples, scores)
    for key, value in expected.items():
        assert metrics[key] == pytest.approx(value, rel=1e-12), key


def _library_overall(
    task: str, samples: list[tuple[int, dict[str, Any]]], scores: list[list[float]]
) -> dict[str, float]:
    """What vuldetectbench 0.0.5 reports from its per-sample scores (its formulas)."""
    if task == "1":
        gold = {e["n"]: "yes" in e["gold"].lower() for e in SENT}
        hit = [(s[0] == 1, gold[n]) for (n, _), s in zip(samples, scores, strict=True)]
        tp = sum(h and g for h, g in hit)
        fp = sum(not h and not g for h, g in hit)
        fn = sum(not h and g for h, g in hit)
        return {"accuracy": sum(h for h, _ in hit) / len(hit), "f1": 2 * tp / (2 * tp + fp + fn)}
    if task == "3":
        gold = {e["n"]: len(e["gold"].split()) for e in SENT}
        recalls = [s[0] for s in scores]
        hits = sum(r * gold[n] for (n, _), r in zip(samples, recalls, strict=True))
        return {"mar": sum(recalls) / len(recalls), "mir": hits / sum(gold[n] for n, _ in samples)}
    pooled = [value for s in scores for value in s]  # one list shared by both metrics
    return dict.fromkeys(METRIC_KEYS[f"task{task}"], sum(pooled) / len(pooled))


SAMPLE_KEYS = {
    "hit": "hit",
    "Moderate Evaluation Score": "me",
    "Strict Evaluation Score": "se",
    "Token Recall": "recall",
    "Union Line Recall": "urs",
    "Line Recall": "ors",
}


def test_methods_are_a_dimension_of_the_matrix(tmp_path: Path) -> None:
    """`--method plain,cot` runs the test set twice, each run named by its method."""
    data = _write_set(tmp_path / "vdb", [e for e in SENT if e["task"] == 1][:3])
    db = tmp_path / "r.db"
    with LoopbackServer(default=_replay) as server:
        out = run_cli(
            server.base_url, db, data, "--tasks", "1", "--method", "plain,cot", key=FAKE_KEY
        )
        assert out.returncode == 0, out.stderr
        asked = server.completions()
    with closing(sqlite3.connect(db)) as conn:
        runs = conn.execute("SELECT prompt_name, settings FROM runs ORDER BY id").fetchall()
    assert [name for name, _ in runs] == ["plain", "cot"]
    assert [json.loads(settings)["method"] for _, settings in runs] == [None, "cot"]
    assert len(asked) == 6
    prompted = run_cli("http://127.0.0.1:9/unused", db, data, "--tasks", "1", "--prompt", "all")
    assert prompted.returncode == 2 and "--prompt applies to markdown suites" in prompted.stderr
