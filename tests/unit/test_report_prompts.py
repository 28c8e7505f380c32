"""The report and exports of a model x prompt matrix, from a real SQLite file filled by the
engine: each model x prompt is its own run, the matrix table, the best prompt, McNemar's test
between prompts of one model, and the prompt on every exported result."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from secbench_tui.core.models import Case, Completion, Message
from secbench_tui.core.results.exports import to_csv, to_json, to_junit
from secbench_tui.core.results.report.gathering import gather
from secbench_tui.core.results.report.rendering import render_html
from secbench_tui.core.run.engine import Engine, RunSpec
from secbench_tui.core.run.providers.base import RetryCallback
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.values import text_hash
from tests.unit.test_engine import cases, verdict

N = 20


class Answers:
    """Right on the cases `right` accepts (by index), wrong on the others."""

    reports_cost = False

    def __init__(self, name: str, right: Callable[[int], bool]) -> None:
        self.name = name
        self.right = right

    async def complete(self, case: Case, on_retry: RetryCallback | None = None) -> Completion:
        index = int(case.case_id[1:4])
        said = case.expected if self.right(index) else ("good" if case.expected == "bad" else "bad")
        return Completion(text=verdict(said))

    async def aclose(self) -> None:
        return None


async def ask(
    store: Store,
    model: str,
    name: str,
    words: str,
    n: int = 4,
    right: Callable[[int], bool] = lambda i: True,
) -> None:
    """One run of `model` asked with the prompt `name` whose text is `words`; the words are
    in what each case sends, as they are in a real suite's."""
    asked = [
        replace(c, **{"messages": (Message(role="user", content=f"{words}: {c.code}"),)})
        for c in cases(n)
    ]
    spec = RunSpec(
        model=model,
        cases=asked,
        suite_kind="markdown",
        suite_path="/s",
        prompt_hash=text_hash(words),
        prompt_name=name,
    )
    async for _ in Engine(spec, Answers(model, right), store).events():
        pass


async def fill(db: Path) -> None:
    store = await Store.open(db)
    plan = {
        ("m/alpha", "default"): lambda i: True,  # 20 of 20
        ("m/alpha", "attacker"): lambda i: i >= 12,  # 8 of 20: differs on 12 cases
        ("m/beta", "default"): lambda i: i % 2 == 0,  # 10 of 20
        ("m/beta", "attacker"): lambda i: i % 2 == 0 or i == 1,  # 11 of 20
    }
    for (model, prompt), right in plan.items():
        await ask(store, model, prompt, prompt, N, right)
    await store.close()


async def test_the_report_shows_models_by_prompts(tmp_path: Path) -> None:
    await fill(tmp_path / "r.db")
    store = await Store.open(tmp_path / "r.db")
    data = await gather(store)
    await store.close()
    assert len(data.contenders) == 4  # one per model x prompt, none hides another
    assert sorted(c.label for c in data.contenders) == [
        "m/alpha \u00b7 attacker",
        "m/alpha \u00b7 default",
        "m/beta \u00b7 attacker",
        "m/beta \u00b7 default",
    ]
    (matrix,) = data.prompt_matrices
    assert matrix.prompts == ["attacker", "default"]
    assert matrix.best["m/alpha"].prompt == "default"
    assert matrix.best["m/beta"].prompt == "attacker"
    by_model = {p.a.model: p.comparison for p in matrix.pairs}
    assert len(matrix.pairs) == 2 and set(by_model) == {"m/alpha", "m/beta"}
    assert by_model["m/alpha"].p_value < 0.05  # 12 cases apart, all one way
    assert by_model["m/beta"].p_value > 0.05  # one case apart
    page = render_html(data)
    assert 'id="prompts"' in page and "Models × evaluation prompts" in page
    assert "explanation</code> before <code>assessment" in page
    cell = matrix.cell("m/alpha", "default")
    assert cell is not None and cell.stats["accuracy"] == 1.0


async def test_exports_carry_the_prompt(tmp_path: Path) -> None:
    await fill(tmp_path / "r.db")
    store = await Store.open(tmp_path / "r.db")
    data = await gather(store)
    await store.close()
    document = json.loads(to_json(data))
    assert sorted((r["model"], r["prompt"]) for r in document["runs"]) == [
        ("m/alpha", "attacker"),
        ("m/alpha", "default"),
        ("m/beta", "attacker"),
        ("m/beta", "default"),
    ]
    assert {r["prompt_name"] for r in document["results"]} == {"attacker", "default"}
    rows = list(csv.DictReader(io.StringIO(to_csv(data))))
    assert len(rows) == 4 * N
    assert {(r["model_name"], r["prompt_name"]) for r in rows} == {
        (m, p) for m in ("m/alpha", "m/beta") for p in ("attacker", "default")
    }
    assert to_junit(data).count('name="prompt" value="attacker"') == 2


async def test_one_prompt_per_model_keeps_plain_labels(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "r.db")
    spec = RunSpec(model="m/solo", cases=cases(4), suite_kind="markdown", suite_path="/s")
    spec.prompt_name = "default"
    async for _ in Engine(spec, Answers("m/solo", lambda i: True), store).events():
        pass
    data = await gather(store)
    await store.close()
    assert [c.label for c in data.contenders] == ["m/solo"]
    assert data.prompt_matrices == []


async def test_one_name_for_different_words_is_two_prompts(tmp_path: Path) -> None:
    """A prompt file edited between runs asks another question: the default report keeps
    both runs and tells them apart by their words' hash; the same words again replace."""
    store = await Store.open(tmp_path / "r.db")
    await ask(store, "m/alpha", "default", "old words")
    await ask(store, "m/alpha", "default", "new words")
    await ask(store, "m/alpha", "default", "new words")  # the same question again
    await ask(store, "m/beta", "default", "new words")
    data = await gather(store)
    await store.close()
    old, new = text_hash("old words")[:8], text_hash("new words")[:8]
    assert sorted((c.run.id, c.label) for c in data.contenders) == [
        (1, f"m/alpha \u00b7 default [{old}]"),
        (3, f"m/alpha \u00b7 default [{new}]"),
        (4, "m/beta"),
    ]
    assert [r.id for r in data.others] == [2]
    (matrix,) = data.prompt_matrices
    assert matrix.prompts == sorted([f"default [{old}]", f"default [{new}]"])
    assert matrix.cell("m/beta", f"default [{new}]") is not None
    assert f"default [{old}]" in render_html(data)
    # a spreadsheet of the results tells the two texts apart too
    rows = list(csv.DictReader(io.StringIO(to_csv(data))))
    assert {(r["model_name"], r["prompt_name"], r["prompt_hash"]) for r in rows} == {
        ("m/alpha", "default", text_hash("old words")),
        ("m/alpha", "default", text_hash("new words")),
        ("m/beta", "default", text_hash("new words")),
    }
