"""Benchmark `--prove-findings`: the time to prove 98 findings (the bundled suite's bad cases,
each answered with its own witness as the exploit), and the chance level of the proven-finding
rate (`baseline/random-exploit`, seed 0).

In one process and on one embedded PostgreSQL (pgserver, started once): first, as the baseline
taken in the same run and on the same stack, `--verify`'s work on the same suite (every case on
every parameter set); then the 98 findings proven (each on its flawed case and, when that shows
a violation of the cited rule, on the scenario's compliant cases); then every case answered by
`baseline/random-exploit` and its exploits proven. Prints the figures; asserts nothing.

    python scripts/bench_findings.py [--seed 0]
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scripts.harness.figures import machine, parser  # noqa: E402
from secbench_tui.config import bundled_cases_dir  # noqa: E402
from secbench_tui.core.results.findings import findings_of_reply  # noqa: E402
from secbench_tui.core.results.metrics import wilson_interval  # noqa: E402
from secbench_tui.core.run.providers.baselines import BaselineProvider  # noqa: E402
from secbench_tui.core.suites.markdown import load_markdown_suite  # noqa: E402
from secbench_tui.core.verify.exploit_plan import exploit_json  # noqa: E402
from secbench_tui.core.verify.exploits import ExploitOutcome, Finding, prove_findings  # noqa: E402
from secbench_tui.core.verify.models import Proof  # noqa: E402
from secbench_tui.core.verify.runner import verify_suite  # noqa: E402
from secbench_tui.core.verify.witnesses import python_apps  # noqa: E402


def _pct(hits: int, n: int) -> str:
    low, high = wilson_interval(hits, n) if n else (0.0, 0.0)
    share = hits / n if n else 0.0
    return f"{share:.1%} ({low:.1%}-{high:.1%}) of {n}"


def main() -> None:
    flags = parser(__doc__, keep=False)
    flags.add_argument("--seed", type=int, default=0, help="the random-exploit baseline's seed")
    args = flags.parse_args()
    print(machine())
    root = bundled_cases_dir()
    suite = load_markdown_suite(root)
    cases = {c.case_id: c for c in suite.cases}
    python = python_apps({app.name: app.root for app in suite.apps})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

    with tempfile.TemporaryDirectory(prefix="secbench-bench-pg-") as folder:
        started = time.perf_counter()
        server = pgserver.get_server(folder, cleanup_mode="delete")
        uri = str(server.get_uri())
        print(f"server start: {time.perf_counter() - started:.1f} s")
        try:
            started = time.perf_counter()
            report = verify_suite(root, pg_url=uri)
            verify_s = time.perf_counter() - started
            print(
                f"baseline, --verify of the same suite: {len(report.cases)} cases,"
                f" {report.count(Proof.PROVEN)} proven, in {verify_s:.1f} s"
            )
            findings = []
            for proof in report.cases:
                if proof.expected != "bad" or proof.witness is None:
                    continue
                w = proof.witness
                rule = int(w.rules[0] if proof.other_rule else proof.rule or w.rules[0])
                exploit = exploit_json(dict(w.params), proof.app in python)
                findings.append(Finding(proof.case_id, cases[proof.case_id], rule, exploit))
            started = time.perf_counter()
            proved = prove_findings(root, findings, uri)
            prove_s = time.perf_counter() - started
            proven = sum(p.outcome is ExploitOutcome.PROVEN for p in proved.proofs)
            print(
                f"prove {len(findings)} findings (the witnesses as exploits): {proven} proven"
                f" in {prove_s:.1f} s, {1000 * prove_s / max(len(findings), 1):.0f} ms a"
                f" finding; {prove_s / verify_s:.2f}x the verify time"
            )
            baseline = BaselineProvider("baseline/random-exploit", args.seed)
            chance = []
            for case in suite.cases:
                for offered in findings_of_reply(baseline.answer(case))[:1]:
                    chance.append(Finding(case.case_id, case, offered.rule, offered.exploit))
            started = time.perf_counter()
            drawn = prove_findings(root, chance, uri)
            chance_s = time.perf_counter() - started
            by_case = {
                f.case.case_id: p.outcome is ExploitOutcome.PROVEN
                for f, p in zip(chance, drawn.proofs, strict=True)
            }
            bads = [c for c in suite.cases if c.expected == "bad"]
            hits = sum(by_case.get(c.case_id, False) for c in bads)
            offered_proven = sum(by_case.values())
            reasons: dict[str, int] = {}
            for p in drawn.proofs:
                if p.reason is not None:
                    reasons[p.reason.value] = reasons.get(p.reason.value, 0) + 1
            print(
                f"chance level, baseline/random-exploit seed {args.seed}: proven findings"
                f" {_pct(hits, len(bads))} bad cases; exploit precision"
                f" {_pct(offered_proven, len(chance))} exploits; in {chance_s:.1f} s"
            )
            print("  refuted: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())))
        finally:
            server.cleanup()


if __name__ == "__main__":
    main()
