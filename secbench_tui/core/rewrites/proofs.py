"""Proofs kept: what the equivalence gate decided of a variant, stored under the hash of
everything that decision depended on, so `--dry-run`, the run and every later run prove only
what changed.

A variant's proof depends on its code, its relation and seed, its original and the other cases
of its scenario (the judge reads them beside it), the app's verification files (fixtures,
harness, every scenario file) and the gate itself (`GATE_VERSION`, the tool's version). A
change to any of them is another key: the old proof is never read again. Only decisions are
kept (proven, or refused with why); a variant left unproven because no server or no data was
at hand is decided again next time.

Each proof is one small JSON file named by its key, written to a temporary name and renamed,
so two runs proving at once never see half a file, and a damaged file is a proof not kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from secbench_tui import __version__
from secbench_tui.core.models import Case
from secbench_tui.core.rewrites.relations import Variant
from secbench_tui.core.suites.markdown import is_parameter_file
from secbench_tui.core.verify.data import FIXTURES, VERIFY_DIR, scenario_of

# Raise when the gate decides differently for the same inputs (gate.py, or the comparison in
# equivalence.py that the fix task shares): every kept proof goes stale.
GATE_VERSION = 1

Decision = Literal["proven", "refused"]


@dataclass(frozen=True)
class KeptProof:
    decision: Decision
    reason: str  # why it was refused ("" when proven)
    engine: str  # the PostgreSQL that proved it


def _files_digest(root: Path, paths: Iterable[Path]) -> str:
    """Names (below `root`, so a moved suite keeps its proofs) and contents."""
    digest = hashlib.sha256()
    for path in sorted(set(paths)):
        name = path.relative_to(root).as_posix()
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"\1unreadable")
        digest.update(b"\0")
    return digest.hexdigest()


def app_digest(app_root: Path) -> str:
    """Every file of an app's verification data: its `verify/` folder and a fixtures file or
    parameter file beside the cases (what `load_app_data` may read)."""
    verify = app_root / VERIFY_DIR
    found = [p for p in verify.rglob("*") if p.is_file()] if verify.is_dir() else []
    found += [p for p in (app_root / FIXTURES,) if p.is_file()]
    found += [p for p in sorted(app_root.glob("*.md")) if is_parameter_file(p)]
    return _files_digest(app_root, found)


def proof_key(variant: Variant, originals: Sequence[Case], app_digest: str) -> str:
    """The hash of what the gate's decision on `variant` depends on."""
    scenario = scenario_of(variant.original.case_id)
    mates = sorted(
        (c.case_id, c.expected, c.code)
        for c in originals
        if c.app == variant.original.app and scenario_of(c.case_id) == scenario
    )
    material = {
        "gate": GATE_VERSION,
        "tool": __version__,
        "app": app_digest,
        "original": [variant.original.case_id, variant.original.expected, variant.original.code],
        "relation": variant.relation,
        "seed": variant.seed,
        "code": variant.code,
        "scenario": mates,
    }
    text = json.dumps(material, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ProofStore:
    """Kept proofs in a folder (one file per key)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> KeptProof | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            decision = data["decision"]
            if decision not in ("proven", "refused"):
                return None
            return KeptProof(decision, str(data["reason"]), str(data["engine"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # none kept, or damaged: proved again

    def put(self, key: str, proof: KeptProof) -> None:
        """Keep a decision; a folder that cannot be written keeps nothing (proved next time)."""
        path = self._path(key)
        text = json.dumps(
            {"decision": proof.decision, "reason": proof.reason, "engine": proof.engine}
        )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", dir=path.parent, delete=False, suffix=".tmp"
            ) as out:
                out.write(text)
            os.replace(out.name, path)
        except OSError:
            return
