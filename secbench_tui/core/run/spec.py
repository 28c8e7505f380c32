"""What a run is: its model, cases and settings, and the keys it is found again by.

A `RunSpec` is built once by the front end (the planner). Its fingerprint is what a resumed
run must share with this one; a request hash names one question to one model with the same
settings, so an answer already paid for is found again (`core.run.reuse`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from secbench_tui.core.models import Case, JSONObject, RecordedSettings
from secbench_tui.core.store.values import LEGACY_PROMPT_NAME, prompt_keyed, text_hash
from secbench_tui.core.suites import security_bench
from secbench_tui.core.vuldetectbench import DEFAULT_SCORING

# Settings that change what a model is asked; a resumed run must match them all.
REQUEST_SETTINGS = ("base_url", "temperature", "max_tokens", "seed", "response_format")
# Later ones, with the value that leaves the request as it was before they existed: they
# count only when set otherwise, so results recorded before them are still reused.
OPTIONAL_REQUEST_SETTINGS = {
    "reasoning_effort": None,
    "request_style": security_bench.OWN_STYLE,
    "task": None,  # --task fix: another response_format, so another question
}


# Reuse and resume keys name no prompt: the same words are the same question, whatever file
# they were read from. Keys are still made as the schema-3 ones were, with this one name in
# the place of the prompt's, so every result keyed under it (all those recorded before prompts
# had names, re-keyed by that migration, and every later run of `./evaluation-prompt.txt`)
# keeps its key; results keyed under another name are found through `legacy_names`.
CONTENT_KEYED = LEGACY_PROMPT_NAME


@dataclass
class RunSpec:
    """Everything that defines a run, built once by the front end."""

    model: str
    cases: Sequence[Case]
    suite_kind: str
    suite_path: str
    settings: RecordedSettings = field(default_factory=RecordedSettings)
    prompt_hash: str = ""
    prompt_name: str = ""  # the evaluation prompt's name: part of the reuse and resume keys
    repeats: int = 1
    concurrency: int = 1
    resume: bool = False
    force: bool = False
    retry_errors: bool = False
    max_cost: float | None = None
    vdb_scoring: str = DEFAULT_SCORING
    skipped: tuple[str, ...] = ()
    # The endpoint requests go to, credentials included: hashed into the fingerprint and the
    # request hashes (two keys in a query are two endpoints), never stored; `settings` holds
    # it redacted. None: the one in `settings`.
    base_url: str | None = None
    # --batch: the batch protocol its cases go through (`core.run.batch`); None: asked live.
    # Not part of any key: a batch's answer and a live one to the same request are the same.
    batch: str | None = None
    # USD per million prompt and completion tokens, live and in a batch (--batch: the
    # catalog's, for the summary's prices); None: not known
    live_price: tuple[float, float] | None = None
    batch_price: tuple[float, float] | None = None
    _request_bases: dict[int, tuple[Case, str]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @cached_property
    def suite_hash(self) -> str:
        """The cases as asked: ids, labels, code and every prompt text around it."""
        prefixes = {c.prompt_prefix for c in self.cases}
        return text_hash(
            *sorted(prefixes),
            *(
                f"{c.case_id}\0{c.expected}\0{c.code}\0{c.messages and c.prompt_messages()}"
                for c in self.cases
            ),
        )

    @cached_property
    def fingerprint(self) -> str:
        """What a resumed run must share with this one: the same questions to the same model.

        Keyed on the prompt's content (`prompt_hash`, and its text inside `suite_hash`), not
        on its name: the same words read from another file are the same run."""
        return self.fingerprint_named(CONTENT_KEYED)

    def fingerprint_named(self, prompt_name: str) -> str:
        """The fingerprint as it was written under a prompt's name (`legacy_names`)."""
        return prompt_keyed(self._fingerprint_base, prompt_name)

    @cached_property
    def _fingerprint_base(self) -> str:
        return text_hash(
            self.model,
            self.suite_kind,
            self.suite_path,
            self.suite_hash,
            self.prompt_hash,
            self._request_json,
            str(self.repeats),
            self.vdb_scoring,
        )

    def _request_settings(self) -> JSONObject:
        recorded = self.settings.as_dict()  # the keys recorded, by name
        request = {k: recorded.get(k) for k in REQUEST_SETTINGS}
        endpoint = request["base_url"] if self.base_url is None else self.base_url
        request["base_url"] = str(endpoint or "").rstrip("/")
        for key, unset in OPTIONAL_REQUEST_SETTINGS.items():
            if recorded.get(key, unset) != unset:
                request[key] = recorded[key]
        return request

    @cached_property
    def _request_json(self) -> str:
        return json.dumps(self._request_settings(), sort_keys=True)

    def request_hash(self, case: Case, prompt_name: str = "") -> str:
        """Identifies what was asked: same model, endpoint, settings and messages (the
        evaluation prompt's text is in them; its name is not part of the key). With a
        `prompt_name`, the key as it was written under that name (`legacy_names`)."""
        return prompt_keyed(self._request_base(case), prompt_name or CONTENT_KEYED)

    def _request_base(self, case: Case) -> str:
        """The request's hash before a prompt's name is added, once per case: every name a
        run looks its answers up under (`legacy_names`) starts from it."""
        known = self._request_bases.get(id(case))
        if known is not None and known[0] is case:
            return known[1]
        messages = json.dumps([[m.role, m.content] for m in case.prompt_messages()])
        base = text_hash(
            self.model, case.case_id, messages, str(case.structured), self._request_json
        )
        self._request_bases[id(case)] = (case, base)
        return base
