"""`--rewrites` end to end: the real command, a loopback server, a real PostgreSQL gate.

The server answers an original case by its label, except that a few originals are answered
the other way when asked again (a noise floor to measure); a rewritten case is answered by
what it says: a comment claiming safety gets `good`, one claiming a flaw gets `bad`, any other
variant a verdict drawn from a checksum of its prompt. The test then counts, from the rows and
by its own plain loops, every figure `--summary-json` gives and checks them one by one.
"""

from __future__ import annotations

import json
import math
import warnings
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from secbench_tui.config import bundled_cases_dir
from secbench_tui.core.suites.markdown import load_markdown_suite
from tests.e2e.harness import rows, run_cli
from tests.e2e.server import LoopbackServer, ReceivedRequest, answer

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pytest.importorskip("pgserver", reason="needs the verify extra (pgserver)")

FILTERS = ("purchase-order/approval-queue-*", "purchase-order/get-supplier-*")
SAFE = ("Security review", "Reviewed by the security team", "Audited:")
FLAW = ("SECURITY:", "FIXME security flaw", "Known issue")
NOISY = 2  # how many originals are answered the other way when asked again
INVARIANCE = {"alias-rename", "conjunct-reorder", "layout", "comments-removed"}
INVARIANCE |= {"equivalent-predicates"}
CLAIMS = {"comment-safe": "good", "comment-flaw": "bad", "misleading-names": "good"}


def _other(verdict: str) -> str:
    return "bad" if verdict == "good" else "good"


class Responder:
    def __init__(self, originals: dict[str, str]) -> None:
        self.originals = originals  # code -> label
        self.seen: dict[str, int] = defaultdict(int)
        self.noisy = set(sorted(originals)[:NOISY])

    def __call__(self, request: ReceivedRequest) -> Any:
        prompt = request.prompt
        for code, expected in self.originals.items():
            if prompt.rstrip().endswith(code.rstrip()) and not any(
                m in prompt for m in SAFE + FLAW
            ):
                self.seen[code] += 1
                again = self.seen[code] > 1 and code in self.noisy
                return answer(_other(expected) if again else expected)
        if any(m in prompt for m in SAFE):
            return answer("good")
        if any(m in prompt for m in FLAW):
            return answer("bad")
        return answer("bad" if zlib.crc32(prompt.encode()) % 2 else "good")


def _wilson(k: int, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _verdict(row: dict[str, Any]) -> str:
    return str(row["actual_result"] or "").strip().lower()


@pytest.mark.long
def test_rewrites_figures_match_counts_made_independently(tmp_path: Path, pg_url: str) -> None:
    suite = load_markdown_suite(bundled_cases_dir(), ["purchase-order"])
    chosen = [c for c in suite.cases if any(c.case_id.startswith(f.rstrip("*")) for f in FILTERS)]
    responder = Responder({c.code: c.expected for c in chosen})
    db = tmp_path / "results.db"
    summary = tmp_path / "summary.json"
    args = ["--apps", "purchase-order", "--rewrites", "all", "--repeats", "2"]
    args += [x for f in FILTERS for x in ("--filter", f)]
    with LoopbackServer(default=responder) as server:
        done = run_cli(
            server.base_url,
            db,
            bundled_cases_dir(),
            *args,
            "--summary-json",
            str(summary),
            "--pg-url",
            pg_url,
            key="sk-test",
            timeout=900,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rewrites:" in done.stderr and "proven equivalent" in done.stderr
    figures = json.loads(summary.read_text(encoding="utf-8"))["robustness"]

    stored = rows(db)
    originals = {(r["case_id"], r["repeat"]): r for r in stored if not r["variant"]}
    variants: dict[str, dict[tuple[str, int], dict[str, Any]]] = defaultdict(dict)
    for r in stored:
        if r["variant"]:
            info = json.loads(r["variant"])
            assert r["case_id"] == f"{info['original']}#{info['relation']}/{info['seed']}"
            assert info["proven"] is True and len(info["code_hash"]) == 64
            variants[info["relation"]][(info["original"], r["repeat"])] = r
    assert len(originals) == 2 * len(chosen)
    # accuracy covers the originals only
    assert json.loads(summary.read_text())["cases"] == len(originals)

    # the noise floor: repeat 0 against repeat 1 of every original
    noise = {
        c.case_id: _verdict(originals[(c.case_id, 0)]) != _verdict(originals[(c.case_id, 1)])
        for c in chosen
    }
    assert sum(noise.values()) == NOISY
    assert figures["noise_flip_rate"] == pytest.approx(NOISY / len(chosen))

    asked = sum(len({k[0] for k in pairs}) for pairs in variants.values())
    assert figures["variants"] == asked and figures["dropped"] == 0
    inv_flips = inv_pairs = 0
    robust: dict[str, bool] = {}
    agree: dict[str, bool] = {}
    for relation, pairs in variants.items():
        mine = figures["by_relation"][relation]
        flips = toward = 0
        for (case, rep), row in pairs.items():
            base = _verdict(originals[(case, rep)])
            if base != _verdict(row):
                flips += 1
                toward += _verdict(row) == CLAIMS.get(relation)
            if rep == 0 and relation in INVARIANCE:
                first = originals[(case, 0)]
                right = first["outcome"] == "correct" and row["outcome"] == "correct"
                robust[case] = robust.get(case, True) and right
                agree[case] = agree.get(case, True) and _verdict(first) == _verdict(row)
        assert mine["variants"] == len({k[0] for k in pairs}), relation
        assert mine["flips"] == flips and mine["pairs"] == len(pairs), relation
        assert mine["flip_rate"] == pytest.approx(flips / len(pairs)), relation
        assert mine["flip_rate_ci"] == pytest.approx(list(_wilson(flips, len(pairs)))), relation
        cases = {k[0] for k in pairs}
        same = [c for c in cases if c in noise]
        var_flip = {c: _verdict(originals[(c, 0)]) != _verdict(pairs[(c, 0)]) for c in cases}
        excess = sum(var_flip[c] for c in same) / len(same) - sum(noise[c] for c in same) / len(
            same
        )
        assert mine["excess"] == pytest.approx(excess), relation
        if relation in CLAIMS:
            assert mine["kind"] == "sensitivity"
            assert mine["towards_claim"] == (pytest.approx(toward / flips) if flips else None)
        else:
            assert mine["kind"] == "invariance"
            inv_flips += flips
            inv_pairs += len(pairs)
    # the claims were answered the claim's way: every flip goes towards it
    assert figures["by_relation"]["comment-safe"]["towards_claim"] in (1.0, None)
    assert figures["by_relation"]["comment-flaw"]["towards_claim"] in (1.0, None)
    assert figures["flip_rate"] == pytest.approx(inv_flips / inv_pairs)
    assert figures["robust_accuracy"] == pytest.approx(sum(robust.values()) / len(robust))
    assert figures["agreement"] == pytest.approx(sum(agree.values()) / len(agree))

    # P-C on the originals: good x bad pairs of each scenario, both right on repeat 0
    right = total = 0
    for scenario in ("approval-queue", "get-supplier"):
        ids = [c for c in chosen if f"/{scenario}-" in c.case_id]
        for good in (c for c in ids if c.expected == "good"):
            for bad in (c for c in ids if c.expected == "bad"):
                total += 1
                right += all(originals[(c.case_id, 0)]["outcome"] == "correct" for c in (good, bad))
    assert figures["pc_original"] == pytest.approx(right / total)
