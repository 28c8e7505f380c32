"""Proven findings: a run's exploits as proven (`--prove-findings`), and their figures.

Each result's reply may offer exploits (verdict schema 3); the prover runs them
(`core.verify.exploits`) and the store keeps one row per result (`core.store.findings`). This
module turns a reply into the findings to prove (`findings_of_reply`), a result's proofs into
its stored row (`stored_finding`), and a run's rows into its figures (`finding_summary`),
computed whenever they are read, never stored, so a change here needs no proving again:

- proven-finding rate: bad cases with a proven exploit / bad cases;
- exploit precision: exploits proven / exploits offered (on any case, refused ones included);
- P-C proven: pairs right (good answered good, bad answered bad) whose bad case has a proven
  exploit / pairs;
- refutations: the exploits not proven, by reason (false exploits: offered on a case
  labelled good, proving nothing there);

per app and per rule (the bad case's gold rule), with Wilson intervals over cases and the
scenario bootstrap for P-C proven. Only first answers (repeat 0) to original markdown cases
count, as for the other reason figures. A run none of whose results was proven has none.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from secbench_tui.core.results import pairwise
from secbench_tui.core.results.metrics import wilson_interval
from secbench_tui.core.results.parsing import parse_verdict
from secbench_tui.core.results.reasons import answer_of, stored_gold
from secbench_tui.core.store.findings import StoredFinding
from secbench_tui.core.store.rows import ResultRow, originals_only
from secbench_tui.core.suites.exploit_verdict import MAX_EXPLOITS

PROVEN = "proven"
REFUTED = "refuted"
FALSE_EXPLOIT = "false exploit"
NO_EXPLOIT = "no exploit"
REFUSED = "exploit refused"
TOO_MANY = f"more than {MAX_EXPLOITS} exploits in one reply: the rest are not run"


@dataclass(frozen=True)
class OfferedExploit:
    """A violation of a reply that carries an exploit: the rule cited and the exploit as sent."""

    rule: int
    exploit: object


def findings_of_reply(reply: str | None) -> list[OfferedExploit]:
    """The exploits a reply offers, in its order (a reply that is no verdict offers none)."""
    verdict = parse_verdict(reply)
    if verdict.assessment != "bad" or not verdict.violations:
        return []
    return [OfferedExploit(v.rule, v.exploit) for v in verdict.violations if v.exploit is not None]


def offered_json(offered: Sequence[OfferedExploit]) -> str | None:
    """The stored `exploit` value: the exploits as sent, each with its rule (None: none)."""
    if not offered:
        return None
    return json.dumps(
        [{"rule": o.rule, "exploit": o.exploit} for o in offered],
        ensure_ascii=False,
        default=str,
    )


def stored_finding(
    evaluation_id: int,
    offered: Sequence[OfferedExploit],
    proofs: Sequence[Mapping[str, object]],
    version: int,
    engine: str | None,
    when: str,
) -> StoredFinding:
    """A result's row: proven when any exploit is; else the first exploit's outcome and
    reason. `proofs` are the proofs of the first `MAX_EXPLOITS` exploits, in order (each an
    `ExploitProof.to_json()`); the rest are refused unrun."""
    kept = [dict(p) for p in proofs]
    for _ in offered[len(kept) :]:
        kept.append(
            {"outcome": REFUTED, "reason": REFUSED, "detail": f"exploit refused: {TOO_MANY}"}
        )
    if not offered:
        outcome, reason = NO_EXPLOIT, None
    elif any(p.get("outcome") == PROVEN for p in kept):
        outcome, reason = PROVEN, None
    else:
        outcome = str(kept[0].get("outcome") or REFUTED)
        reason = str(kept[0].get("reason") or "") or None
    return StoredFinding(
        evaluation_id=evaluation_id,
        exploit=offered_json(offered),
        outcome=outcome,
        reason=reason,
        proof=json.dumps(kept, ensure_ascii=False, default=str),
        proving_version=version,
        engine=engine,
        proved_at=when,
    )


def proofs_of(row: ResultRow) -> list[dict[str, object]]:
    """A result's stored proofs, one per exploit (none when unreadable: a damaged file)."""
    try:
        data = json.loads(row.get("exploit_proof") or "[]")
    except (ValueError, RecursionError):
        return []
    return [p for p in data if isinstance(p, dict)] if isinstance(data, list) else []


def exploits_of(row: ResultRow) -> list[dict[str, object]]:
    """A result's stored exploits as sent, each `{"rule": n, "exploit": ...}`."""
    try:
        data = json.loads(row.get("exploit") or "[]")
    except (ValueError, RecursionError):
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


# --- figures ---------------------------------------------------------------------------------


class FindingSummary(BaseModel):
    """A run's proven findings (see the module's docstring); in its summary as `findings`."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # --prove-findings only

    bad_cases: int = 0
    proven: int = 0  # bad cases with a proven exploit
    proven_rate: float | None = None
    proven_rate_ci: tuple[float, float] | None = None
    offered: int = 0  # exploits offered, on any case
    offered_proven: int = 0  # of those, proven
    exploit_precision: float | None = None
    exploit_precision_ci: tuple[float, float] | None = None
    false_exploits: int = 0  # offered on cases labelled good, proving nothing there
    pairs: int = 0
    p_c_proven: float | None = None
    p_c_proven_ci: tuple[float, float] | None = None
    refutations: dict[str, int] = {}  # exploits not proven, by reason
    unproven_results: int = 0  # results no proving looked at (asked after it, say)
    # per app and per gold rule: bad_cases, proven
    apps: dict[str, dict[str, int]] = {}
    per_rule: dict[str, dict[str, int]] = {}


def _rate(hits: int, n: int) -> tuple[float | None, tuple[float, float] | None]:
    return (hits / n, wilson_interval(hits, n)) if n else (None, None)


def _proven(row: ResultRow) -> bool:
    return row.get("exploit_outcome") == PROVEN


def _pairs(rows: Sequence[ResultRow]) -> list[pairwise.PairTally]:
    """Per scenario: its pairs, and as `p_c` those right whose bad half is proven."""
    proven = {str(r.get("case_id")): _proven(r) for r in rows}
    tallies = []
    for members in pairwise.by_scenario(answer_of(r) for r in rows).values():
        goods = [a for a in members if a.expected == "good"]
        bads = [a for a in members if a.expected == "bad"]
        hits = sum(
            1
            for g in goods
            for b in bads
            if pairwise.pair_kind(g, b) == "p_c" and proven.get(b.case_id, False)
        )
        tallies.append(pairwise.PairTally(pairs=len(goods) * len(bads), p_c=hits))
    return tallies


def finding_summary(rows: Iterable[ResultRow]) -> FindingSummary | None:
    """The figures of a run's rows as `Store.run_results` reads them (with their findings);
    None when no result of the run was proven."""
    firsts = [
        r
        for r in originals_only(list(rows))
        if r.get("suite_kind", "markdown") == "markdown" and not r.get("repeat")
    ]
    if not any(r.get("exploit_outcome") for r in firsts):
        return None
    bads = [r for r in firsts if str(r.get("expected_result") or "").lower() == "bad"]
    proven = sum(1 for r in bads if _proven(r))
    offered = proven_exploits = false = 0
    refutations: Counter[str] = Counter()
    for row in firsts:
        for proof in proofs_of(row):
            offered += 1
            if proof.get("outcome") == PROVEN:
                proven_exploits += 1
                continue
            false += proof.get("outcome") == FALSE_EXPLOIT
            refutations[str(proof.get("reason") or REFUSED)] += 1
    apps: dict[str, dict[str, int]] = {}
    rules: dict[str, dict[str, int]] = {}
    for row in bads:
        gold = stored_gold(row.get("gold"))
        for key, table in (
            (str(row.get("app") or ""), apps),
            (str(gold[0]) if gold else "", rules),
        ):
            if not key:
                continue
            entry = table.setdefault(key, {"bad_cases": 0, "proven": 0})
            entry["bad_cases"] += 1
            entry["proven"] += _proven(row)
    tallies = _pairs(firsts)
    total = sum(tallies, pairwise.PairTally())
    rate, rate_ci = _rate(proven, len(bads))
    precision, precision_ci = _rate(proven_exploits, offered)
    return FindingSummary(
        bad_cases=len(bads),
        proven=proven,
        proven_rate=rate,
        proven_rate_ci=rate_ci,
        offered=offered,
        offered_proven=proven_exploits,
        exploit_precision=precision,
        exploit_precision_ci=precision_ci,
        false_exploits=false,
        pairs=total.pairs,
        p_c_proven=total.rate("p_c"),
        p_c_proven_ci=pairwise.bootstrap_interval(tallies, "p_c") if total.pairs else None,
        refutations=dict(sorted(refutations.items())),
        unproven_results=sum(1 for r in firsts if not r.get("exploit_outcome")),
        apps=dict(sorted(apps.items())),
        per_rule=dict(sorted(rules.items(), key=lambda kv: int(kv[0]))),
    )


def proof_lines(row: ResultRow) -> list[str]:
    """A result's finding in full, line by line, for the app's result detail: each exploit as
    the model sent it, what ran, and the property's rows or why it was refuted."""
    outcome = row.get("exploit_outcome")
    if not outcome:
        return []
    if outcome == NO_EXPLOIT:
        return ["no exploit offered (--prove-findings proves the exploits of schema 3 replies)"]
    lines = [f"{outcome}" + (f": {row.get('exploit_reason')}" if row.get("exploit_reason") else "")]
    exploits = exploits_of(row)
    for n, proof in enumerate(proofs_of(row)):
        sent = exploits[n] if n < len(exploits) else {}
        lines.append(
            f"exploit {n + 1} (rule {sent.get('rule', '?')}): {proof.get('outcome')}"
            + (f", {proof.get('reason')}" if proof.get("reason") else "")
        )
        lines.append(f"  sent: {json.dumps(sent.get('exploit'), ensure_ascii=False)}")
        if proof.get("ran") is not None:
            lines.append(f"  ran: {json.dumps(proof.get('ran'), ensure_ascii=False)}")
        if proof.get("detail"):
            lines.append(f"  {proof.get('detail')}")
        rows = proof.get("rows")
        for found in rows if isinstance(rows, list) else []:
            lines.append(f"  row: {json.dumps(found, ensure_ascii=False, sort_keys=True)}")
        twins = proof.get("twins")
        if isinstance(twins, list) and twins:
            lines.append(f"  compliant cases run: {', '.join(map(str, twins))}")
    return lines
