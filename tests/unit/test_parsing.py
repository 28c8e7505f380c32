"""Reply parsing: every accepted shape gives its verdict, everything else is unparsed."""

import pytest

from secbench_tui.core.results.parsing import parse_verdict


@pytest.mark.parametrize(
    ("reply", "assessment", "explanation"),
    [
        ('{"assessment": "bad", "explanation": "no tenant filter"}', "bad", "no tenant filter"),
        ('```json\n{"assessment": "good", "explanation": "ok"}\n```', "good", "ok"),
        ('```\n{"assessment": "good", "explanation": "ok"}\n```', "good", "ok"),
        ('Here is my review.\n{"assessment": "bad", "explanation": "x"}', "bad", "x"),
        ('{"assessment": "bad", "explanation": "x"}\nHope this helps.', "bad", "x"),
        ('{"assessment": "BAD", "explanation": "x"}', "bad", "x"),
        ('{"Assessment": "Good", "Explanation": "y"}', "good", "y"),
        ('{"assessment": "good"}', "good", None),
        ('Prose {not json} then {"assessment": "bad", "explanation": "z"}', "bad", "z"),
        ('{"outer": 1, "assessment": "bad", "explanation": {"rule": 3}}', "bad", '{"rule": 3}'),
    ],
)
def test_accepted_shapes(reply: str, assessment: str, explanation: str | None) -> None:
    verdict = parse_verdict(reply)
    assert verdict.assessment == assessment
    assert verdict.explanation == explanation


@pytest.mark.parametrize(
    "reply",
    [
        None,
        "",
        "   ",
        "The code is bad.",
        "assessment: bad",
        '{"assessment": "maybe", "explanation": "unsure"}',
        '{"verdict": "bad"}',
        '["bad"]',
        '{"assessment": "bad", "explanation": "x"',
        '{"assessment": "bad"} and on reflection {"assessment": "good"}',
        '{"assessment": ["bad"]}',
    ],
)
def test_anything_else_is_unparsed(reply: str | None) -> None:
    verdict = parse_verdict(reply)
    assert verdict.assessment is None
    assert not verdict.parsed


def test_fenced_block_wins_over_prose_examples() -> None:
    reply = (
        'The schema is {"assessment": "good"|"bad"}.\n'
        '```json\n{"assessment": "bad", "explanation": "leaks rows"}\n```'
    )
    assert parse_verdict(reply).assessment == "bad"
