"""Give every bad case of a suite a `# Rule` section, from the rule its description names.

The bundled suite's bad cases each name the SPEC rule they break in their description
("Breaks rule 5 (state machines): ..."). This writes that number into a `# Rule` section,
placed just before `# Expected` (after the code block, so the original evaluator, which sends
the first fenced block after `# Code`, sends exactly what it sent before). A case that already
has a `# Rule`, or whose description names no rule or several, is left as it is and listed.

    python scripts/migrate_rules.py [SUITE_DIR]     # default: the bundled suite
    python scripts/migrate_rules.py --check         # exit 1 if a file would change
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from secbench_tui.core.suites.markdown import split_sections

BREAKS = re.compile(r"\bBreaks rules? (\d+)", re.IGNORECASE)
BUNDLED = Path(__file__).resolve().parent.parent / "secbench_tui" / "cases"
EXPECTED = re.compile(r"^#[ \t]+Expected[ \t]*$", re.MULTILINE | re.IGNORECASE)


def migrated(text: str) -> tuple[str | None, str]:
    """(the new text, or None to leave the file; what happened)."""
    sections = split_sections(text)
    if "rule" in sections:
        return None, "has a # Rule already"
    if sections.get("expected", "").split()[:1] != ["bad"]:
        return None, "not a bad case"
    rules = {int(n) for n in BREAKS.findall(sections.get("description", ""))}
    if len(rules) != 1:
        return None, f"its description names {len(rules)} rules: left for a person"
    headings = list(EXPECTED.finditer(text))
    if len(headings) != 1:
        return None, "no single '# Expected' heading"
    newline = "\r\n" if "\r\n" in text else "\n"
    at = headings[0].start()
    section = f"# Rule{newline}{rules.pop()}{newline}{newline}"
    return text[:at] + section + text[at:], "rule added"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "suite",
        nargs="?",
        type=Path,
        default=BUNDLED,
        help="the suite's folder (default: the bundled suite)",
    )
    p.add_argument("--check", action="store_true", help="exit 1 if a file would change")
    args = p.parse_args(argv)
    root, check = args.suite, args.check
    changed = 0
    for path in sorted(root.glob("*/*-bad.md")):
        text = path.read_bytes().decode("utf-8")
        new, what = migrated(text)
        if new is None:
            if what != "not a bad case" and what != "has a # Rule already":
                print(f"{path}: {what}")
            continue
        changed += 1
        if not check:
            path.write_bytes(new.encode("utf-8"))
    print(f"{'would change' if check else 'changed'} {changed} files under {root}")
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
