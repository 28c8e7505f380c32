"""`--rescore`: score stored replies again after a change to scoring, without the model.

Every figure is computed from stored raw replies; each result keeps the version of the scoring
that scored it (`SCORING_VERSION`). Rescoring reads every markdown result whose reply arrived
(errors and unreadable bodies have nothing to score), scores its raw reply again against its
case (its code and gold as stored; a result recorded before gold was kept takes it from its
case file, when that file still holds the same code), and writes what changed. A result a newer
version scored is left as it is: this version's scoring would undo that version's fix.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from secbench_tui.core.models import Case, SuiteKind
from secbench_tui.core.results.grading import SCORING_VERSION, score_markdown
from secbench_tui.core.results.reasons import stored_gold, stored_spec
from secbench_tui.core.store.database import Store
from secbench_tui.core.store.rows import ResultRow
from secbench_tui.core.store.values import storable
from secbench_tui.core.suites.markdown import gold_from_file, spec_rules_beside


@dataclass
class RescoreReport:
    results: int = 0  # results scored again
    changed_outcome: int = 0
    changed_reason: int = 0
    gold_added: int = 0  # results that took their gold from their case file
    older: int = 0  # results scored by an older scoring version (or none recorded)
    newer: int = 0  # results a newer scoring version scored: left as they are
    newest: int = 0  # the newest version among them

    def text(self) -> str:
        said = (
            f"rescored {self.results} results with scoring version {SCORING_VERSION}"
            f" ({self.older} scored by an older version): outcome changed on"
            f" {self.changed_outcome}, reason changed on {self.changed_reason};"
            f" gold taken from case files for {self.gold_added}"
        )
        if self.newer:
            said += (
                f"\nleft {self.newer} results as they are: a newer secbench-tui scored them"
                f" (scoring version up to {self.newest}); rescore them with that version"
            )
        return said


def _gold_of(row: ResultRow) -> tuple[int | None, tuple[int, ...], tuple[int, ...], bool]:
    """(rule, also, lines, whether it came from the case file) for a stored result."""
    rules = stored_gold(row.get("gold"))
    if rules:
        try:
            lines = json.loads(row.get("gold") or "{}").get("lines", [])
        except (ValueError, AttributeError):
            lines = []
        kept = tuple(n for n in lines if isinstance(n, int) and not isinstance(n, bool))
        return rules[0], rules[1:], kept, False
    if str(row.get("expected_result") or "").strip().lower() != "bad" or not row.get("test_file"):
        return None, (), (), False
    rule, also, lines = gold_from_file(Path(row["test_file"]), row.get("code"))
    return rule, also, lines, rule is not None


def _spec_of(row: ResultRow) -> tuple[int, ...]:
    """The SPEC's rule numbers as stored with the gold, else as its SPEC.md lists them now
    (a result recorded before they were kept), else none."""
    spec = stored_spec(row.get("gold"))
    if spec or not row.get("test_file"):
        return spec
    return spec_rules_beside(Path(row["test_file"]))


def case_of(row: ResultRow) -> tuple[Case, bool]:
    """The case a stored result answered, as scoring needs it."""
    rule, also, lines, from_file = _gold_of(row)
    case = Case(
        kind=SuiteKind.MARKDOWN,
        app=row.get("app") or "",
        case_id=row.get("case_id") or "",
        test_file=row.get("test_file") or "",
        expected=str(row.get("expected_result") or "").strip().lower(),
        code=row.get("code") or "",
        rule=rule,
        also_rules=also,
        gold_lines=lines,
        spec_rules=_spec_of(row) if rule is not None else (),
    )
    return case, from_file


async def rescore(store: Store, run_ids: Sequence[int] = ()) -> RescoreReport:
    from secbench_tui.core.store.values import gold_json

    report = RescoreReport()
    after = 0
    while page := await store.rescorable_page(run_ids, after):
        after = page[-1]["id"]
        updates = []
        for row in page:
            version = row.get("scoring_version") or 0
            if version > SCORING_VERSION:  # never undone by an older scoring
                report.newer += 1
                report.newest = max(report.newest, version)
                continue
            case, from_file = case_of(row)
            scored = score_markdown(case, row.get("raw_reply"))
            # as the store keeps it (a lone surrogate made U+FFFD), so unchanged compares equal
            reasons = storable(scored.reason.to_json()) if scored.reason is not None else None
            report.results += 1
            report.older += version < SCORING_VERSION
            report.gold_added += from_file
            report.changed_outcome += scored.outcome.value != row["outcome"]
            report.changed_reason += reasons != row.get("reasons")
            updates.append(
                (
                    scored.outcome.value,
                    scored.actual,
                    scored.explanation,
                    reasons,
                    gold_json(case),
                    SCORING_VERSION,
                    row["id"],
                )
            )
        await store.update_scores(updates)
    return report
