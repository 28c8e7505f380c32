"""Prompt inputs that must not be sent as they are (issue 22), against a loopback server.

- a `--prompt` folder skips a link that leaves it (`passwd.txt -> a file elsewhere`) with a
  warning, as suites do; its target is never sent;
- a prompt file over the size a prompt may have is refused, unread, naming it;
- a prompt (with the case) larger than the model's context in its catalog entry is refused
  before anything is sent, naming both sizes, unless `--force`; `--dry-run` warns.
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e import server as srv
from tests.e2e.harness import FAKE_KEY, cli_env, run_cli, runs, write_suite
from tests.e2e.server import LoopbackServer

EXIT_USAGE = 2


def _env(tmp_path: Path) -> dict[str, str]:
    return cli_env(FAKE_KEY, XDG_CACHE_HOME=str(tmp_path / "cache"))


def test_a_prompt_folder_skips_a_link_that_leaves_it(
    tmp_path: Path, server: LoopbackServer
) -> None:
    write_suite(tmp_path / "suite", {"app": ["bad", "good"]})
    secret = tmp_path / "elsewhere" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:SECRET-OUTSIDE:/root:/bin/bash\n", encoding="utf-8")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "plain.txt").write_text("Answer in JSON.\n", encoding="utf-8")
    (prompts / "passwd.txt").symlink_to(secret)
    db = tmp_path / "r.db"

    result = run_cli(server.base_url, db, tmp_path / "suite", "--prompt", str(prompts))

    assert result.returncode == 0, result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if "passwd.txt" in line]
    assert warning.startswith("warning: skipped prompt") and "outside the prompt folder" in warning
    assert server.completions() and all(
        "SECRET-OUTSIDE" not in r.prompt for r in server.completions()
    )
    assert [r["prompt_name"] for r in runs(db)] == ["plain"]


def test_a_prompt_file_too_large_is_refused_unread(tmp_path: Path, server: LoopbackServer) -> None:
    write_suite(tmp_path / "suite", {"app": ["bad", "good"]})
    huge = tmp_path / "huge.txt"
    huge.write_bytes(b"x" * (2 * 1024 * 1024))

    result = run_cli(server.base_url, tmp_path / "r.db", tmp_path / "suite", "--prompt", str(huge))

    assert result.returncode == EXIT_USAGE, result.stderr
    assert f"--prompt {huge}: 2,097,152 bytes, more than the 1,048,576" in result.stderr
    assert server.completions() == []


def test_a_prompt_larger_than_the_models_context_is_refused_unless_forced(
    tmp_path: Path,
) -> None:
    write_suite(tmp_path / "suite", {"app": ["bad", "good"]})
    prompt = tmp_path / "long.txt"
    prompt.write_text("Consider every rule. " * 400 + "\nAnswer in JSON.\n", encoding="utf-8")
    small = [{**srv.MODELS[0], "context_length": 1000}, *srv.MODELS[1:]]
    db = tmp_path / "r.db"
    with LoopbackServer(models=small) as server:
        refused = run_cli(
            server.base_url, db, tmp_path / "suite", "--prompt", str(prompt), env=_env(tmp_path)
        )
        assert server.completions() == []
        plan = run_cli(
            server.base_url,
            db,
            tmp_path / "suite",
            *("--prompt", str(prompt), "--dry-run"),
            env=_env(tmp_path),
        )
        forced = run_cli(
            server.base_url,
            db,
            tmp_path / "suite",
            *("--prompt", str(prompt), "--force"),
            env=_env(tmp_path),
        )
        sent = len(server.completions())

    assert refused.returncode == EXIT_USAGE, refused.stderr
    (said,) = [line for line in refused.stderr.splitlines() if "context" in line]
    assert "--prompt long: the request for app/case-0" in said
    assert (
        "tokens (characters / 4), more than the 1,000-token context of openai/gpt-4o-mini" in said
    )
    assert "--force" in said
    assert plan.returncode == 0 and "warning: --prompt long" in plan.stdout
    assert forced.returncode == 0, forced.stderr
    assert sent == 2


def test_a_suite_with_no_usable_case_is_refused_and_nothing_recorded(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """A run that would measure nothing is a usage error (exit 2), as a `--filter` matching
    nothing is: it names the folder and why each case was skipped, and records no run."""
    suite = tmp_path / "bx"
    (suite / "a").mkdir(parents=True)
    (suite / "a" / "SPEC.md").write_text("# Prompt\nRules.\n", encoding="utf-8")
    (suite / "a" / "x-01-good.md").write_text(
        "# Code\n```sql\nSELECT 1;\n```\n# Expected\nmaybe\n", encoding="utf-8"
    )
    db = tmp_path / "r.db"

    result = run_cli(server.base_url, db, suite, key=FAKE_KEY)
    plan = run_cli(server.base_url, db, suite, "--dry-run", key=FAKE_KEY)

    for said in (result, plan):
        assert said.returncode == EXIT_USAGE, said.stderr
        assert f"no usable case in {suite} (1 skipped: {suite / 'a' / 'x-01-good.md'}: " in (
            said.stderr
        )
        assert "found 'maybe'" in said.stderr and "give --cases another folder" in said.stderr
    assert "started" not in result.stdout
    assert server.completions() == []
    assert not db.exists() or runs(db) == []


def test_every_skipped_prompt_entry_is_said_by_the_run_and_the_dry_run(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """A prompt folder's link that leaves it, a link to nothing and a folder named `*.txt`
    are each skipped with a warning: by `--dry-run`, where a user checks what will be asked,
    as by the run."""
    write_suite(tmp_path / "suite", {"app": ["bad", "good"]})
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("SECRET-OUTSIDE\n", encoding="utf-8")
    prompts = tmp_path / "pf"
    prompts.mkdir()
    (prompts / "a.txt").write_text("Answer in JSON.\n", encoding="utf-8")
    (prompts / "leak.txt").symlink_to(outside)
    (prompts / "dangling.txt").symlink_to("nothere.txt")
    (prompts / "dir.txt").mkdir()
    db = tmp_path / "r.db"

    plan = run_cli(server.base_url, db, tmp_path / "suite", "--prompt", str(prompts), "--dry-run")
    result = run_cli(server.base_url, db, tmp_path / "suite", "--prompt", str(prompts))

    for said, stream in ((plan, plan.stdout), (result, result.stderr)):
        assert said.returncode == 0, said.stderr
        warnings = [ln for ln in stream.splitlines() if ln.startswith("warning: skipped prompt")]
        assert [w.split(": ", 2)[1] for w in warnings] == [
            f"skipped prompt {prompts / name}" for name in ("dangling.txt", "dir.txt", "leak.txt")
        ], stream
        assert "a link to nothing" in warnings[0] and "not a file" in warnings[1]
        assert "outside the prompt folder" in warnings[2]
    assert all("SECRET-OUTSIDE" not in r.prompt for r in server.completions())
    assert [r["prompt_name"] for r in runs(db)] == ["a"]
