"""Proofs kept: the gate's decisions are read back while nothing they depended on changed,
and proved again when something did (a case of the scenario, the app's verification files).

The end-to-end tests prove one bundled scenario on a real PostgreSQL (a copy of its app, so
its fixtures can be edited), twice; the second proves nothing and starts no server.
"""

from __future__ import annotations

import shutil
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.models import Case
from secbench_tui.core.rewrites.proofs import KeptProof, ProofStore, app_digest, proof_key
from secbench_tui.core.rewrites.relations import Variant, make_variants
from secbench_tui.core.suites.markdown import load_markdown_suite

APP = "purchase-order"
SCENARIO = "approval-queue"
RELATIONS = ["alias-rename", "conjunct-reorder", "equivalent-predicates", "comment-safe"]


def _suite(root: Path) -> list[Case]:
    cases = load_markdown_suite(root, [APP]).cases
    return [c for c in cases if c.case_id.startswith(f"{APP}/{SCENARIO}-")]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    shutil.copytree(bundled_cases_dir() / APP, tmp_path / APP)
    return tmp_path


def test_a_key_changes_with_everything_the_proof_depends_on(suite: Path) -> None:
    cases = _suite(suite)
    variants, _ = make_variants(cases, ["alias-rename"], 0)
    variant = variants[0]
    digest = app_digest(suite / APP)
    key = proof_key(variant, cases, digest)
    assert key == proof_key(variant, list(reversed(cases)), digest)  # order is no input
    assert key != proof_key(replace(variant, code=variant.code + "\n-- x"), cases, digest)
    assert key != proof_key(replace(variant, seed=1), cases, digest)
    other = next(c for c in cases if c.case_id != variant.original.case_id)
    edited = [replace(c, code=c.code + " ") if c is other else c for c in cases]
    assert key != proof_key(variant, edited, digest), "a scenario mate is judged beside it"
    fixtures = suite / APP / "verify" / "fixtures.sql"
    fixtures.write_text(fixtures.read_text(encoding="utf-8") + "\n-- more\n", encoding="utf-8")
    assert app_digest(suite / APP) != digest
    moved = suite.parent / "moved"
    shutil.copytree(suite, moved)
    assert app_digest(moved / APP) == app_digest(suite / APP), "a moved suite keeps its proofs"


def test_a_damaged_or_foreign_file_is_no_proof(tmp_path: Path) -> None:
    store = ProofStore(tmp_path / "proofs")
    key = "ab" + "0" * 62
    assert store.get(key) is None
    store.put(key, KeptProof("refused", "not equivalent on parameter set 2", "PostgreSQL 16"))
    assert store.get(key) == KeptProof(
        "refused", "not equivalent on parameter set 2", "PostgreSQL 16"
    )
    path = tmp_path / "proofs" / "ab" / f"{key}.json"
    for text in ("{", '{"decision": "maybe", "reason": "", "engine": ""}', "[]", "\udcff"):
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        assert store.get(key) is None


def test_a_store_that_cannot_be_written_keeps_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "proofs"
    blocker.write_text("a file where the folder would be", encoding="utf-8")
    store = ProofStore(blocker)
    store.put("cd" + "1" * 62, KeptProof("proven", "", "PostgreSQL 16"))
    assert store.get("cd" + "1" * 62) is None


@pytest.mark.long
def test_a_second_proving_reads_every_decision_back(suite: Path, pg_url: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")
    from secbench_tui.core.rewrites.gate import prove_variants
    from secbench_tui.core.rewrites.progress import Proving

    cases = _suite(suite)
    variants, _ = make_variants(cases, RELATIONS, 0)
    planted = Variant(cases[0], "alias-rename", 999, cases[0].code.replace(" AND ", " OR ", 1))
    store = ProofStore(suite.parent / "proofs")
    heard: list[Proving] = []
    first = prove_variants(
        suite, cases, [*variants, planted], pg_url, proofs=store, progress=heard.append
    )
    assert first.kept == 0 and len(first.decided) == len(variants) + 1
    assert heard and heard[-1].done == heard[-1].total == len(variants) + 1
    assert any(d.variant is planted for d in first.dropped), "the planted change is refused"

    second = prove_variants(
        suite, cases, [*variants, planted], "postgresql://nowhere:1/x", proofs=store
    )
    assert second.kept == len(variants) + 1 and not second.decided  # no server was reached
    assert {v.case_id for v in second.proven} == {v.case_id for v in first.proven}
    assert {(d.variant.case_id, d.reason) for d in second.dropped} == {
        (d.variant.case_id, d.reason) for d in first.dropped
    }

    fixtures = suite / APP / "verify" / "fixtures.sql"
    fixtures.write_text(fixtures.read_text(encoding="utf-8") + "\n-- changed\n", encoding="utf-8")
    third = prove_variants(suite, cases, variants, pg_url, proofs=store)
    assert third.kept == 0 and len(third.decided) == len(variants)
