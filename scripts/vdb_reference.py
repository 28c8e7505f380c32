"""Record what vuldetectbench 0.0.5 itself reports for a fixed set of model replies.

Needs the real library, nltk and nltk's English `punkt_tab` model, so run it in a
scratch environment, never in the project's own:

    python -m venv /tmp/vdbvenv && /tmp/vdbvenv/bin/pip install vuldetectbench==0.0.5
    NLTK_DATA=/path/with/tokenizers/punkt_tab/english \
        /tmp/vdbvenv/bin/python scripts/vdb_reference.py --data ../shared/vuldetectbench/test

It writes two files under tests/fixtures/vdb/:

- `outputs.json`: replies in the shapes models give (right, wrong, both options, prose,
  fenced code, empty, replies that crash the library...) for samples of every task,
  made with a fixed seed, with each sample's gold answer (and task 2's options);
- `library_results.json`: for each task, the library's own report (`evaluation_report.json`
  of `VulDetectBench_Engine.run()`) on the replies it does not crash on (run "clean");
  the report on all replies with each crashing metric call scored 0 instead (run
  "wrapped", which is what `--vdb-scoring library` reproduces); and, per reply, the
  exception each crashing metric raised.

The unit tests compare our scoring with these files, without the library.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import tempfile
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests/fixtures/vdb"


def _load(data: Path, task: int) -> list[dict[str, Any]]:
    with (data / f"task{task}_code.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _statement_lines(code: str) -> list[str]:
    lines = [ln.strip() for ln in code.splitlines()]
    return [ln for ln in lines if len(ln) > 3 and not ln.startswith(("#", "//", "/*", "*"))]


def _task1_replies(gold: str, rng: random.Random) -> list[tuple[str, str]]:
    other = "NO" if gold == "YES" else "YES"
    return [
        ("right", gold),
        ("wrong", other),
        ("lower", gold.lower() + "."),
        ("bold", f"**{gold}**"),
        ("prose-first", f"{gold.capitalize()}, " + rng.choice(_T1_PROSE)),
        ("answer-phrase", "After reviewing the code carefully.\n\nAnswer: " + gold),
        ("prose-only", rng.choice(["The code is vulnerable.", "The code is not vulnerable."])),
        ("substring-yes", "NO. I analysed it yesterday and there is no issue."),
        ("both", "YES or NO: it depends on the caller. NO bounds check is missing."),
        ("empty", ""),
        ("fenced", f"```\n{gold}\n```"),
    ]


_T1_PROSE = [
    "the buffer is copied without a length check.",
    "there is no bounds check before the copy.",
    "the pointer is freed twice.",
    "input is validated before use.",
]


def _task2_replies(row: dict[str, Any], rng: random.Random) -> list[tuple[str, str]]:
    best, second = (p.strip() for p in row["answer"].split("|"))
    options = row["selection"].split("\n")
    wrong = next(o for o in options if o[0] not in (best[0], second[0]))
    cwe = best.split(":")[0].split(".", 1)[1]
    return [
        ("right", best[0] + "."),
        ("second", second[0] + "."),
        ("wrong", wrong[0] + "."),
        ("full-option", best),
        ("both", f"{best[0]}. or {second[0]}."),
        ("cwe-only", f"This looks like {cwe}."),
        ("letter-no-dot", f"The answer is {best[0]}"),
        ("bold", f"**{second[0]}**"),
        ("echo-all", row["selection"]),
        ("eg-prose", f"E.g. the input is not neutralised, so {best[0]}."),
        ("empty", ""),
        ("no-vuln", "No vulnerabilities."),
        ("random", rng.choice(options)[0] + "."),
    ]


def _task3_replies(row: dict[str, Any], rng: random.Random) -> list[tuple[str, str]]:
    gold = row["answer"].split()
    lines = _statement_lines(row["code"]) or ["x = 1;"]
    half = gold[: max(1, len(gold) // 2)]
    return [
        ("right", " ".join(f"`{t}`" for t in gold)),
        ("plain", " ".join(gold)),
        ("half", " ".join(f"`{t}`" for t in half)),
        ("prose", "The risky objects are " + ", ".join(gold) + ". They are not checked."),
        ("sentences", " ".join(f"{t}." for t in gold)),
        ("repeated", " ".join(f"`{t}` `{t}`" for t in gold) + " " + " ".join(gold)),
        ("fenced", "```c\n" + "\n".join(rng.sample(lines, min(3, len(lines)))) + "\n```"),
        ("wrong", "`system` `popen` `gets`"),
        ("empty", ""),
    ]


def _task45_replies(row: dict[str, Any], rng: random.Random) -> list[tuple[str, str]]:
    gold = row["answer"]
    body = gold.strip("`")
    lines = _statement_lines(row["code"]) or ["x = 1;"]
    line = rng.choice(lines)
    return [
        ("right", gold),
        ("fenced-c", f"```c\n{body}\n```"),
        ("fenced-bare", f"```\n{body}\n```"),
        ("prose-then-code", f"The root cause is here: {gold} because the size is unchecked."),
        ("wrong-line", f"`{line}`"),
        ("two-snippets", f"`{line}` and then {gold}"),
        ("no-backticks", body),
        ("single-char", "`{`"),
        ("leading-space", f"` {line}`"),
        ("empty", ""),
        ("cot", f'First "{line}" reads input. Final answer: {gold}'),
        ("brace-first", f"The `{{` opens the loop; the flaw is {gold}"),
        ("space-first", f"` {line}` leads to {gold}"),
    ]


def make_outputs(data: Path, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    counts = {1: 12, 2: 10, 3: 8, 4: 8, 5: 8}
    makers: dict[int, Callable[[dict[str, Any], random.Random], list[tuple[str, str]]]] = {
        1: lambda row, r: _task1_replies(row["answer"], r),
        2: _task2_replies,
        3: _task3_replies,
        4: _task45_replies,
        5: _task45_replies,
    }
    entries: list[dict[str, Any]] = []
    for task, count in counts.items():
        rows = _load(data, task)
        positions = sorted(rng.sample(range(len(rows)), count))
        if task == 3:  # include samples whose gold lists no token
            positions = sorted(set(positions) | {i for i, r in enumerate(rows) if not r["answer"]})
        for pos in positions:
            row = rows[pos]
            for kind, output in makers[task](row, rng):
                entry = {"task": task, "pos": pos, "idx": row["idx"], "gold": row["answer"]}
                if task == 2:
                    entry["selection"] = row["selection"]
                entry |= {"kind": kind, "output": output}
                entries.append(entry)
    return entries


def _run_engine(data: Path, task: int, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The library's own report for these replies, in this order."""
    from vuldetectbench.generation import Agent, Tasks, VulDetectBench_Engine

    rows = _load(data, task)
    replies = iter([e["output"] for e in entries])

    class Replay(Agent):  # type: ignore[misc]
        def __call__(self, prompt: dict[str, str]) -> str:
            return next(replies)

    with tempfile.TemporaryDirectory() as tmp:
        subset = Path(tmp) / f"task{task}_code.jsonl"
        subset.write_text(
            "".join(json.dumps(rows[e["pos"]]) + "\n" for e in entries), encoding="utf-8"
        )
        with contextlib.redirect_stdout(io.StringIO()):
            tasks = Tasks(data_dir=tmp, task_no=task)
            engine = VulDetectBench_Engine(
                model=Replay(), task_and_metrics=tasks, save_path=tmp, verbose=True
            )
            engine.run()
        report: list[dict[str, Any]] = json.loads(
            (Path(tmp) / "evaluation_report.json").read_text(encoding="utf-8")
        )
    for sample in report[0]["verbose"]:
        del sample["gold"]  # outputs.json holds it
    return report[0]


def _crashes(entry: dict[str, Any]) -> dict[str, str]:
    """The exception each of the task's per-sample metric calls raises, by metric name."""
    from vuldetectbench.prompt import task_templates
    from vuldetectbench.utils.metrics import MetricsMapping

    found: dict[str, str] = {}
    for name in task_templates[f"Task{entry['task']}"]["metrics"]["single"]:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                MetricsMapping[name](entry["output"], entry["gold"])
        except Exception as err:  # noqa: BLE001 - recording what the library raises
            found[name] = f"{type(err).__name__}: {err}"
    return found


@contextlib.contextmanager
def _zero_on_crash() -> Any:
    """Make each per-sample metric call score 0 where it raises, as our library mode does."""
    import vuldetectbench.utils.metrics as metrics

    saved = dict(metrics.MetricsMapping)

    def wrap(func: Callable[..., Any], zero: Any) -> Callable[..., Any]:
        def safe(sys_out: str, gold: str) -> Any:
            try:
                return func(sys_out, gold)
            except Exception:  # noqa: BLE001
                return zero, ""

        return safe

    for name in ("Moderate Evaluation Score", "Strict Evaluation Score"):
        metrics.MetricsMapping[name] = wrap(saved[name], 0)
    metrics.MetricsMapping["Token Recall"] = wrap(saved["Token Recall"], (0, 0, 0))
    for name in ("Union Line Recall", "Line Recall"):
        metrics.MetricsMapping[name] = wrap(saved[name], 0)
    try:
        yield
    finally:
        metrics.MetricsMapping.clear()
        metrics.MetricsMapping.update(saved)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO / ".." / "shared/vuldetectbench/test")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    entries = make_outputs(args.data, args.seed)
    for i, entry in enumerate(entries):
        entry["n"] = i
    results: dict[str, Any] = {
        "library": f"vuldetectbench {version('vuldetectbench')}",
        "nltk": version("nltk"),
        "tasks": {},
    }
    for task in range(1, 6):
        mine = [e for e in entries if e["task"] == task]
        crashes = {e["n"]: _crashes(e) for e in mine}
        clean = [e for e in mine if not crashes[e["n"]]]
        with _zero_on_crash():
            wrapped = _run_engine(args.data, task, mine)
        results["tasks"][str(task)] = {
            "clean": {
                "entries": [e["n"] for e in clean],
                "report": _run_engine(args.data, task, clean),
            },
            "wrapped": {"entries": [e["n"] for e in mine], "report": wrapped},
            "crashes": {str(n): c for n, c in crashes.items() if c},
        }
        print(f"task {task}: {len(mine)} replies, {len(mine) - len(clean)} crash the library")
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, payload in (("outputs.json", entries), ("library_results.json", results)):
        text = json.dumps(payload, indent=1, ensure_ascii=False) + "\n"
        (FIXTURES / name).write_text(text, encoding="utf-8")
    print(f"wrote {FIXTURES}/outputs.json and library_results.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
