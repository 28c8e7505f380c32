"""The HTML report in real headless Chromium: hostile strings stay text, filters work.

A database is filled through `Store` with script tags and event-handler attributes in every
string the report shows (model names, app names, case ids, code, descriptions, explanations,
raw replies, error messages, run settings); the real `secbench-tui --report` command writes
the report; Chromium loads it from a file:// URL and dumps the DOM after the page's script
ran. Each payload, if it ever ran, would set `data-pwned` on <html> and change the title.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode

import pytest

from secbench_tui.core.models import (
    Case,
    Completion,
    Evaluation,
    Message,
    Outcome,
    RecordedSettings,
    Scored,
    SuiteKind,
)
from secbench_tui.core.store.database import Store

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("report-browser"),  # one report written, once (--dist=loadgroup)
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)",
    ),
]

MARK = "document.documentElement.dataset.pwned"
PAYLOADS = (
    f"<script>{MARK}='script';document.title='pwned'</script>",
    f"<img src=x onerror=\"{MARK}='img';document.title='pwned'\">",
    f'"><svg onload="{MARK}=\'svg\'"><x a="',
    f"'><details open ontoggle='{MARK}=\"toggle\"'><summary>x</summary></details><i a='",
    f"</code></pre></td></table><iframe srcdoc=\"<script>parent.{MARK}='iframe'</script>\">",
)


def evil(n: int, prefix: str = "") -> str:
    return prefix + PAYLOADS[n % len(PAYLOADS)]


EVIL_MODEL = "evil/" + PAYLOADS[1]
EVIL_APP = "app" + PAYLOADS[2]
MODELS = ("m/steady", EVIL_MODEL, "baseline/always-bad")


@dataclass(frozen=True)
class Planned:
    case: Case
    answers: dict[str, str | None]  # model -> verdict; None: unparsed, "ERR": error


def plan() -> list[Planned]:
    layout = [
        ("shop", "good", {"m/steady": "good", EVIL_MODEL: "bad"}),
        ("shop", "bad", {"m/steady": "bad", EVIL_MODEL: "bad"}),
        ("shop", "bad", {"m/steady": "bad", EVIL_MODEL: None}),
        (EVIL_APP, "good", {"m/steady": "bad", EVIL_MODEL: "good"}),
        (EVIL_APP, "bad", {"m/steady": "bad", EVIL_MODEL: "ERR"}),
        (EVIL_APP, "good", {"m/steady": "good", EVIL_MODEL: "good"}),
    ]
    planned = []
    for n, (app, expected, answers) in enumerate(layout):
        case = Case(
            kind=SuiteKind.MARKDOWN,
            app=app,
            case_id=f"{app}/{n}{evil(n + 2)}.md",
            test_file=f"/suite/{n}.md",
            expected=expected,
            code=f"SELECT {n};\n{evil(n)}",
            messages=(Message(role="user", content="x"),),
            description=evil(n + 1, "Scenario "),
        )
        planned.append(Planned(case, {**answers, "baseline/always-bad": "bad"}))
    return planned


def scored(case: Case, said: str | None, n: int) -> tuple[Completion, Scored]:
    if said == "ERR":
        return Completion(error=evil(n, "HTTP 400: ")), Scored(actual=None, outcome=Outcome.ERROR)
    if said is None:
        return Completion(text=evil(n, "raw ")), Scored(actual=None, outcome=Outcome.UNPARSED)
    outcome = Outcome.CORRECT if said == case.expected else Outcome.WRONG
    explanation = evil(n + 3, "because ")
    return Completion(text=evil(n + 4)), Scored(
        actual=said, outcome=outcome, explanation=explanation
    )


async def fill(path: Path, planned: list[Planned]) -> None:
    store = await Store.open(path)
    try:
        # An earlier, narrowed run: left out of the report but listed with its hostile --apps.
        narrowed = await store.create_run(
            model=MODELS[0],
            suite_kind="markdown",
            suite_path=evil(0, "/suite"),
            suite_hash="s",
            prompt_hash=evil(1),  # the same prompt as the whole runs': a prompt is its words
            settings=RecordedSettings(repeats=1, apps=[EVIL_APP], limit=1),
            fingerprint="narrowed",
            tool_version="0",
            total_cases=1,
        )
        first = planned[0]
        completion, score = scored(first.case, first.answers[MODELS[0]], 0)
        await store.record(
            Evaluation(run_id=narrowed, case=first.case, completion=completion, scored=score), "n"
        )
        await store.finish_run(narrowed, "completed")
        for model in MODELS:
            run_id = await store.create_run(
                model=model,
                suite_kind="markdown",
                suite_path=evil(0, "/suite"),
                suite_hash="s",
                prompt_hash=evil(1),
                settings=RecordedSettings(repeats=1, note=evil(3)),
                fingerprint=model,
                tool_version=evil(4),
                total_cases=len(planned),
            )
            for index, item in enumerate(planned):
                completion, score = scored(item.case, item.answers[model], index)
                evaluation = Evaluation(
                    run_id=run_id,
                    case=item.case,
                    index=index,
                    completion=completion,
                    scored=score,
                )
                await store.record(evaluation, f"{model}{index}")
            await store.finish_run(run_id, "completed", evil(2, "done "))
    finally:
        await store.close()


class Dom(HTMLParser):
    """What the tests look at in Chromium's DOM dump."""

    def __init__(self) -> None:
        super().__init__()
        self.html: dict[str, str | None] = {}
        self.body: dict[str, str | None] = {}
        self.title = ""
        self.scripts = 0
        self.handlers: list[tuple[str, str]] = []
        self.foreign: list[str] = []
        self.cases: dict[str, dict[str, str | None]] = {}
        self.rows: list[tuple[str, dict[str, str | None]]] = []  # (case anchor, attributes)
        self._in_title = False
        self._case = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.handlers += [(tag, k) for k in attributes if k.startswith("on")]
        ours = {
            "svg": attributes.get("class") == "chart" or attributes.get("aria-hidden") == "true",
            "details": attributes.get("class") in ("case", "differ"),
        }
        if tag in ("img", "iframe", "object", "embed", "x", "i") or not ours.get(tag, True):
            self.foreign.append(tag)
        if tag == "html":
            self.html = attributes
        elif tag == "body":
            self.body = attributes
        elif tag == "title":
            self._in_title = True
        elif tag == "script":
            self.scripts += 1
        elif tag == "details" and "case" in (attributes.get("class") or ""):
            self._case = attributes.get("id") or ""
            self.cases[self._case] = attributes
        elif tag == "tr" and "data-model" in attributes:
            self.rows.append((self._case, attributes))

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data

    def visible_cases(self) -> set[str]:
        return {anchor for anchor, attrs in self.cases.items() if "hidden" not in attrs}


@dataclass
class Loaded:
    dom: Dom
    text: str
    console: list[str]


def load(page: Path, tmp_path: Path, fragment: str = "") -> Loaded:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    result = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    dom = Dom()
    dom.feed(result.stdout)
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    return Loaded(dom, result.stdout, console)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Planned]]:
    """The report written by the real command from a database of hostile strings."""
    work = tmp_path_factory.mktemp("report-browser")
    planned = plan()
    asyncio.run(fill(work / "results.db", planned))
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run(
        [sys.executable, "-m", "secbench_tui", "--report", "--db", "results.db"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    path = work / result.stdout.strip()
    assert re.fullmatch(r"report_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.html", path.name)
    return path, planned


def without_csp(page: Path) -> Path:
    """The same report without its Content-Security-Policy: escaping alone must hold."""
    html = page.read_text("utf-8")
    stripped, count = re.subn(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    assert count == 1
    copy = page.with_name("no-csp.html")
    copy.write_text(stripped, "utf-8")
    return copy


def assert_nothing_ran(loaded: Loaded) -> None:
    dom = loaded.dom
    assert "data-pwned" not in dom.html
    assert dom.title == "secbench-tui report"
    assert dom.scripts == 1  # the report's own
    assert dom.handlers == []
    assert dom.foreign == []
    assert dom.body.get("data-filter-ready") == "1"  # the page's own script did run
    assert loaded.console == []


def test_detector_sees_a_payload_that_runs(tmp_path: Path) -> None:
    """Control: the same payloads unescaped, no policy, do run and are caught."""
    page = tmp_path / "control.html"
    page.write_text(
        "<!DOCTYPE html><html><head><title>secbench-tui report</title></head><body>"
        + "".join(PAYLOADS)
        + "</body></html>",
        "utf-8",
    )
    dom = load(page, tmp_path).dom
    assert "data-pwned" in dom.html
    assert dom.title == "pwned"


def test_hostile_strings_stay_text(written: tuple[Path, list[Planned]], tmp_path: Path) -> None:
    page, planned = written
    for candidate in (page, without_csp(page)):
        loaded = load(candidate, tmp_path)
        assert_nothing_ran(loaded)
        assert len(loaded.dom.cases) == len(planned)
        # The payloads are shown to the reader as text.
        assert "&lt;script&gt;document.documentElement.dataset.pwned=" in loaded.text
        assert "evil/&lt;img src=x onerror=" in loaded.text
        # The verdict names models; the left-out run shows its --apps; settings are text.
        assert 'id="verdict"' in loaded.text and 'id="others"' in loaded.text
        assert '--apps app"&gt;&lt;svg onload=' in loaded.text


def expected_visible(
    planned: list[Planned], app: str = "", model: str = "", failures: bool = False
) -> int:
    judged = [m for m in MODELS if not m.startswith("baseline/")]
    count = 0
    for item in planned:
        passed = {m: item.answers[m] == item.case.expected for m in MODELS}
        if app and item.case.app != app:
            continue
        if failures and not any(not passed[m] for m in ([model] if model else judged)):
            continue
        count += 1
    return count


@pytest.mark.parametrize(
    "params",
    [
        {"failures": "1"},
        {"app": EVIL_APP},
        {"model": EVIL_MODEL, "failures": "1"},
        {"model": "m/steady", "failures": "1", "app": EVIL_APP},
    ],
    ids=["failures", "hostile-app", "hostile-model-failures", "model-app-failures"],
)
def test_filters(
    written: tuple[Path, list[Planned]], tmp_path: Path, params: dict[str, str]
) -> None:
    page, planned = written
    loaded = load(without_csp(page), tmp_path, urlencode(params))
    assert_nothing_ran(loaded)
    want = expected_visible(
        planned, params.get("app", ""), params.get("model", ""), params.get("failures") == "1"
    )
    assert 0 < want < len(planned)  # the filter has something to hide and something to show
    dom = loaded.dom
    assert len(dom.visible_cases()) == want
    assert dom.body.get("data-visible-cases") == str(want)
    if "model" in params:
        shown = [a for case, a in dom.rows if case in dom.visible_cases() and "hidden" not in a]
        assert shown and {a.get("data-model") for a in shown} == {params["model"]}


def test_fragment_opens_a_case(written: tuple[Path, list[Planned]], tmp_path: Path) -> None:
    page, _ = written
    dom = load(page, tmp_path, "c3").dom
    assert "open" in dom.cases["c3"]
    assert "open" not in dom.cases["c2"]
