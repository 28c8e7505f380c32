"""Many models x many evaluation prompts in one command, against the loopback server.

The server answers each request by a verdict derived from (model, prompt, case), so a result
filed under the wrong run, model or prompt shows up as a mismatch with the server's log.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.suites.prompts import bundled_prompt
from tests.e2e import server as srv
from tests.e2e.harness import FAKE_KEY, MODEL, cli_args, cli_env, rows, run_cli, runs, write_suite
from tests.e2e.server import LoopbackServer, ReceivedRequest

ROOT = Path(__file__).resolve().parents[2]  # the repository, with its evaluation-prompt.txt
OTHER = "anthropic/claude-3.5-haiku"
PROMPTS = {"careful": "PROMPT-CAREFUL: judge the code.", "hasty": "PROMPT-HASTY: judge it fast."}


def prompt_of(request: ReceivedRequest) -> str:
    return next(name for name, text in PROMPTS.items() if text.split(":")[0] in request.prompt)


def marker_of(request: ReceivedRequest) -> str:
    start = request.prompt.index("<<case:")
    return request.prompt[start : request.prompt.index(">>", start) + 2]


def scrambled(request: ReceivedRequest) -> srv.Behaviour:
    """A verdict that depends on the model, the prompt and the case: any mix-up shows."""
    body = request.body if isinstance(request.body, dict) else {}
    key = f"{body.get('model')}|{prompt_of(request)}|{marker_of(request)}"
    verdict = "good" if hashlib.sha256(key.encode()).digest()[0] % 2 else "bad"
    return srv.answer(verdict, f"because {key}")


def write_prompts(folder: Path) -> Path:
    folder.mkdir()
    for name, text in PROMPTS.items():
        (folder / f"{name}.txt").write_text(text + "\n", encoding="utf-8")
    (folder / "notes.md").write_text("not a prompt", encoding="utf-8")
    return folder


def test_a_2x2_matrix_files_every_answer_under_its_model_and_prompt(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    cases = write_suite(suite, {"alpha": ["good", "bad"] * 3, "beta": ["bad", "good"] * 2})
    prompts = write_prompts(tmp_path / "prompts")
    summary = tmp_path / "summary.json"
    with LoopbackServer(default=scrambled) as server:
        result = run_cli(
            server.base_url,
            tmp_path / "r.db",
            suite,
            "--model",
            OTHER,
            "--prompt",
            str(prompts),
            "--concurrency",
            "2",
            "--summary-json",
            str(summary),
            key=FAKE_KEY,
        )
        assert result.returncode == 0, result.stderr
        answered = {(r.body["model"], prompt_of(r), marker_of(r)): r for r in server.completions()}
    assert len(answered) == 4 * len(cases) == len(server.completions())  # each asked once
    recorded = runs(tmp_path / "r.db")
    assert sorted((r["model_name"], r["prompt_name"]) for r in recorded) == sorted(
        (m, p) for m in (MODEL, OTHER) for p in PROMPTS
    )
    for run in recorded:
        assert run["status"] == "completed"
        assert (
            run["prompt_hash"]
            == hashlib.sha256((PROMPTS[run["prompt_name"]] + "\n").encode()).hexdigest()
        )
        stored = rows(tmp_path / "r.db", run["id"])
        assert len(stored) == len(cases)
        for case, row in zip(cases, stored, strict=True):
            request = answered[(run["model_name"], run["prompt_name"], case.marker)]
            content = request.response["choices"][0]["message"]["content"]
            assert row["case_id"] == case.case_id
            assert row["raw_reply"] == content
            assert row["actual_result"] == json.loads(content)["assessment"]
            assert row["model_name"] == run["model_name"]
    data = json.loads(summary.read_text(encoding="utf-8"))
    assert sorted((s["model"], s["prompt"]) for s in data["runs"]) == sorted(
        (m, p) for m in (MODEL, OTHER) for p in PROMPTS
    )
    assert "Matrix (accuracy" in result.stdout


def test_each_model_keeps_its_own_concurrency(tmp_path: Path) -> None:
    """Two prompts of one model share its limit of 2; the other model has its own 2."""
    suite = tmp_path / "suite"
    write_suite(suite, {"alpha": ["good", "bad"] * 6})
    with LoopbackServer(delay=0.05) as server:
        result = run_cli(
            server.base_url,
            tmp_path / "r.db",
            suite,
            "--model",
            OTHER,
            "--prompt",
            "default,attacker",
            "--concurrency",
            "2",
            key=FAKE_KEY,
        )
        assert result.returncode == 0, result.stderr
        requests = server.completions()
    for model in (MODEL, OTHER):
        mine = [r for r in requests if r.body["model"] == model]
        assert len(mine) == 24
        events = sorted(
            [(r.received_at, 1) for r in mine] + [(r.answered_at or 0.0, -1) for r in mine],
            key=lambda e: (e[0], e[1]),
        )
        in_flight = peak = 0
        for _, step in events:
            in_flight += step
            peak = max(peak, in_flight)
        assert peak <= 2, f"{model} had {peak} requests in flight"


def test_an_unknown_model_ends_its_own_runs_only(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    cases = write_suite(suite, {"alpha": ["good", "bad"] * 3})
    with LoopbackServer() as server:
        server.script(
            None,
            then=srv.not_found("nope/none"),
            match=lambda r: isinstance(r.body, dict) and r.body.get("model") == "nope/none",
        )
        result = run_cli(
            server.base_url,
            tmp_path / "r.db",
            suite,
            "--model",
            "nope/none",
            "--prompt",
            "default,attacker",
            key=FAKE_KEY,
        )
    assert result.returncode == 3, result.stdout + result.stderr
    by_model: dict[str, list[str]] = {}
    for run in runs(tmp_path / "r.db"):
        by_model.setdefault(run["model_name"], []).append(run["status"])
    assert by_model[MODEL] == ["completed", "completed"]
    assert "aborted" in by_model["nope/none"]
    assert set(by_model["nope/none"]) <= {"aborted", "stopped"}
    good = [r for r in rows(tmp_path / "r.db") if r["model_name"] == MODEL]
    assert len(good) == 2 * len(cases) and all(r["outcome"] == "correct" for r in good)


def test_dry_run_sends_no_chat_request_and_prices_the_plan(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    cases = write_suite(suite, {"alpha": ["good", "bad"] * 2})
    db = tmp_path / "r.db"
    with LoopbackServer() as server:
        first = run_cli(server.base_url, db, suite, "--filter", "alpha/case-0001-*", key=FAKE_KEY)
        assert first.returncode == 0, first.stderr
        asked = len(server.completions())
        assert asked == 1
        result = run_cli(
            server.base_url,
            db,
            suite,
            "--model",
            "vendor/unlisted",
            "--model",
            "baseline/random",
            "--prompt",
            "default,attacker",
            "--dry-run",
            env=cli_env(FAKE_KEY, XDG_CACHE_HOME=str(tmp_path / "cache")),
        )
        assert result.returncode == 0, result.stderr
        assert len(server.completions()) == asked  # nothing was asked
    out = result.stdout
    assert "6 run(s) = 3 model(s) x 2 prompt(s)" in out
    # the case answered before is reused: 3 of 4 requests left for gpt-4o-mini with `default`
    assert f"{MODEL}  prompt default: {len(cases)} cases, 3 of 4 requests" in out
    assert f"{MODEL}  prompt attacker: {len(cases)} cases, 4 of 4 requests" in out
    assert "vendor/unlisted: 2 run(s), 8 requests" in out and "price unknown" in out
    assert "baseline/random: 2 run(s), 8 requests, ~0 in / ~0 out tokens, $0" in out
    line = next(ln for ln in out.splitlines() if ln.startswith(f"  {MODEL}: 2 run(s)"))
    assert "7 requests" in line and "$0.0" in line
    assert len(runs(db)) == 1  # no run was created
    assert list((tmp_path / "cache").rglob("models-*.json"))  # the prices came from GET /models


def test_filter_picks_cases_by_id(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    write_suite(suite, {"alpha": ["good", "bad"], "beta": ["bad", "good"]})
    with LoopbackServer() as server:
        result = run_cli(
            server.base_url,
            tmp_path / "r.db",
            suite,
            "--filter",
            "beta/*",
            "--filter",
            "alpha/case-0002-*",
            key=FAKE_KEY,
        )
        assert result.returncode == 0, result.stderr
        none = run_cli(server.base_url, tmp_path / "r.db", suite, "--filter", "gamma/*")
    assert sorted(r["case_id"] for r in rows(tmp_path / "r.db")) == [
        "alpha/case-0002-bad.md",
        "beta/case-0001-bad.md",
        "beta/case-0002-good.md",
    ]
    assert none.returncode == 2 and "--filter gamma/*: matches no case" in none.stderr


def test_a_prompt_is_known_by_its_words_not_its_name(tmp_path: Path) -> None:
    """The same words under another name and path are the same prompt: nothing is asked the
    second time (and `--dry-run` says so first); other words under the same name are another
    prompt: asked again. Names stay labels of the runs."""
    suite = tmp_path / "suite"
    cases = write_suite(suite, {"alpha": ["good", "bad"]})
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "first.txt").write_text("Judge it.\n", encoding="utf-8")
    (two / "second.txt").write_text("Judge it.\n", encoding="utf-8")
    db = tmp_path / "r.db"
    with LoopbackServer() as server:
        first = run_cli(
            server.base_url, db, suite, "--prompt", str(one / "first.txt"), key=FAKE_KEY
        )
        assert first.returncode == 0, first.stderr
        assert len(server.completions()) == len(cases)
        plan = run_cli(
            server.base_url,
            db,
            suite,
            "--prompt",
            str(two / "second.txt"),
            "--dry-run",
            key=FAKE_KEY,
        )
        assert plan.returncode == 0, plan.stderr
        assert "total: 0 requests" in plan.stdout, plan.stdout
        second = run_cli(
            server.base_url, db, suite, "--prompt", str(two / "second.txt"), key=FAKE_KEY
        )
        assert second.returncode == 0, second.stderr
        assert len(server.completions()) == len(cases)  # not one request more
        (one / "first.txt").write_text("Judge it harshly.\n", encoding="utf-8")
        third = run_cli(
            server.base_url, db, suite, "--prompt", str(one / "first.txt"), key=FAKE_KEY
        )
        assert third.returncode == 0, third.stderr
        assert len(server.completions()) == 2 * len(cases)
        asked = [r.prompt for r in server.completions()]
    assert all("Judge it.\n" in p for p in asked[: len(cases)])
    assert all("Judge it harshly." in p for p in asked[len(cases) :])
    recorded = runs(db)
    assert [r["prompt_name"] for r in recorded] == ["first", "second", "first"]
    assert recorded[0]["fingerprint"] == recorded[1]["fingerprint"] != recorded[2]["fingerprint"]
    reused = [r["reused_from"] is not None for r in rows(db)]
    assert reused == [False, False, True, True, False, False]


def test_the_readme_run_from_another_folder_reuses_the_first(tmp_path: Path) -> None:
    """The README's first run records the repository's `evaluation-prompt.txt` (a copy of the
    bundled `default`) as `evaluation-prompt`; the same run from a folder without that file
    uses the bundled `default` by name: the same words, so nothing is asked again."""
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    shutil.copy(ROOT / "evaluation-prompt.txt", repo / "evaluation-prompt.txt")
    assert (repo / "evaluation-prompt.txt").read_text() == bundled_prompt("default").text
    db = repo / "results.db"
    with LoopbackServer() as server:
        for folder in (repo, elsewhere):
            result = subprocess.run(
                cli_args(server.base_url, db, bundled_cases_dir(), "--limit", "2"),
                cwd=folder,
                env=cli_env(FAKE_KEY),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert result.returncode == 0, result.stderr
        assert len(server.completions()) == 2
    assert [r["prompt_name"] for r in runs(db)] == ["evaluation-prompt", "default"]
    assert [r["reused_from"] is not None for r in rows(db)] == [False, False, True, True]


@pytest.mark.parametrize("spec", ["nope", "missing.txt"])
def test_an_unknown_prompt_names_the_bundled_ones(tmp_path: Path, spec: str) -> None:
    suite = tmp_path / "suite"
    write_suite(suite, {"alpha": ["good"]})
    result = run_cli("http://127.0.0.1:9/unused", tmp_path / "r.db", suite, "--prompt", spec)
    assert result.returncode == 2
    assert f"--prompt {spec}: no such file or folder" in result.stderr
    assert "default" in result.stderr and "attacker" in result.stderr


def test_dry_run_counts_what_a_reasoning_model_would_reuse_and_its_budget(tmp_path: Path) -> None:
    """A reasoning model's requests carry its own max_tokens: the estimate must use the same
    request (reuse, --resume) and the same ceiling as the run would."""
    reasoner = "deepseek/deepseek-r1:free"
    suite = tmp_path / "suite"
    cases = write_suite(suite, {"alpha": ["good", "bad"]})
    db = tmp_path / "r.db"
    env = cli_env(FAKE_KEY, XDG_CACHE_HOME=str(tmp_path / "cache"))
    with LoopbackServer(default=srv.thinking_model()) as server:
        done = run_cli(server.base_url, db, suite, model=reasoner, env=env)
        assert done.returncode == 0, done.stderr
        plan = run_cli(server.base_url, db, suite, "--dry-run", model=reasoner, env=env)
        again = run_cli(server.base_url, db, suite, model=reasoner, env=env)
    assert plan.returncode == 0, plan.stderr
    assert f"{len(cases)} reused" in again.stdout  # the run itself asks nothing
    assert f"prompt default: {len(cases)} cases, 0 of {len(cases)} requests" in plan.stdout


def test_dry_run_ceiling_is_a_reasoning_models_own_max_tokens(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    write_suite(suite, {"alpha": ["good", "bad"]})
    catalog = [
        {**srv.MODELS[0], "id": "think/priced", "supported_parameters": ["reasoning"]},
        srv.MODELS[0],
    ]
    with LoopbackServer(models=catalog) as server:
        plan = run_cli(
            server.base_url,
            tmp_path / "r.db",
            suite,
            "--dry-run",
            model=f"think/priced,{MODEL}",
            env=cli_env(FAKE_KEY, XDG_CACHE_HOME=str(tmp_path / "cache")),
        )
    assert plan.returncode == 0, plan.stderr
    lines = {ln.split(":")[0].strip(): ln for ln in plan.stdout.splitlines() if "run(s)," in ln}
    # 2 requests, input the same; the ceiling: 16384 (the model's own limit) vs 1024 tokens
    think = lines["think/priced"].split("at most $")[1].rstrip(")")
    plain = lines[MODEL].split("at most $")[1].rstrip(")")
    assert float(think) > 10 * float(plain)


def test_a_matrix_reads_the_model_list_once_for_every_model(tmp_path: Path) -> None:
    """Each model's defaults (does it reason?) come from one GET /models, not one per model."""
    suite = tmp_path / "suite"
    write_suite(suite, {"alpha": ["good", "bad"]})
    env = cli_env(FAKE_KEY, XDG_CACHE_HOME=str(tmp_path / "cache"))
    with LoopbackServer(default=srv.thinking_model()) as server:
        done = run_cli(
            server.base_url,
            tmp_path / "r.db",
            suite,
            model="deepseek/deepseek-r1:free,openai/gpt-4o-mini",
            env=env,
        )
        asked = server.catalog_requests
        bodies = {r.body["model"]: r.body["max_tokens"] for r in server.completions()}
    # the thinking server spends gpt-4o-mini's 1024 tokens on thought: that run gets no answer
    assert done.returncode == 4, done.stderr
    assert asked == 1
    assert bodies == {"deepseek/deepseek-r1:free": 32768, "openai/gpt-4o-mini": 1024}


def test_a_run_reads_the_model_list_once_even_for_a_model_it_does_not_list(
    tmp_path: Path,
) -> None:
    """The catalog is read once per command and the plan made from it: a model the list does
    not hold was looked up for its defaults, then again for its context (two GET /models
    per run, every run, since the cache could never list it)."""
    suite = tmp_path / "suite"
    write_suite(suite, {"alpha": ["good", "bad"]})
    env = cli_env(FAKE_KEY, XDG_CACHE_HOME=str(tmp_path / "cache"))
    with LoopbackServer() as server:
        model = f"vendor/unlisted,{MODEL}"
        asked = []
        for extra in (("--dry-run",), (), ("--force",)):
            done = run_cli(server.base_url, tmp_path / "r.db", suite, *extra, model=model, env=env)
            assert done.returncode == 0, done.stderr
            asked.append(server.catalog_requests - sum(asked))
    assert asked == [1, 1, 1]  # the dry run, the run, a run with --force: once each


def test_a_skipped_case_file_is_named_once_for_the_whole_matrix(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    write_suite(suite, {"alpha": ["good", "bad"]})
    (suite / "alpha" / "broken.md").write_text("# Code\nno expected section\n", encoding="utf-8")
    done = run_cli(
        "http://127.0.0.1:9/v1",  # never asked: baselines only
        tmp_path / "r.db",
        suite,
        "--prompt",
        "default,attacker",
        model="baseline/always-bad,baseline/always-good",
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "broken.md" in warnings[0], done.stderr
