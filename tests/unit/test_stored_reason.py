"""A stored reason (`evaluations.reasons`) is written in one exact form and read back checked.

`--rescore` compares the text it would write with the text stored, so the form must not drift
between versions: compact JSON, keys in declaration order, text as written (not escaped to
ASCII), as every version has written it. Anything else read back is no reason, never a crash.
"""

from __future__ import annotations

import pytest

from secbench_tui.core.models import Citation, ReasonScore
from secbench_tui.core.results.reasons import stored_reason

HOSTILE = 'héllo "x"\n\t\x01 \u2028 😀 \\ </script>'

# written by the pydantic models of the versions before (byte for byte)
EARLIER = (
    '{"given":true,"citations":[{"rule":3,"quote":"héllo \\"x\\"\\n\\t\\u0001 \u2028 😀 \\\\ '
    '</script>","lines":[1,2]},{"rule":4,"quote":"","lines":[]}],"problem":null,'
    '"right_rule":true,"right_line":null}'
)


def test_the_stored_form_is_the_one_earlier_versions_wrote() -> None:
    reason = ReasonScore(
        given=True,
        citations=(Citation(rule=3, quote=HOSTILE, lines=(1, 2)), Citation(rule=4)),
        right_rule=True,
    )
    assert reason.to_json() == EARLIER
    assert ReasonScore.from_json(EARLIER) == reason
    assert stored_reason(EARLIER) == reason


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"given": "yes"}',
        '{"given": 1}',
        '{"citations": {}}',
        '{"citations": [3]}',
        '{"citations": [{"rule": "3"}]}',
        '{"citations": [{"rule": true}]}',
        '{"citations": [{"rule": 3, "lines": [1.5]}]}',
        '{"problem": 7}',
        '{"right_line": "no"}',
    ],
)
def test_anything_else_reads_as_no_reason(text: str) -> None:
    assert stored_reason(text) is None


def test_keys_it_does_not_know_are_ignored_and_missing_ones_take_defaults() -> None:
    assert stored_reason('{"given": false, "later": 1}') == ReasonScore()
    assert stored_reason("{}") == ReasonScore()
