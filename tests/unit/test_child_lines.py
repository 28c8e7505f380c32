"""The Python verify child's result lines come through a pipe the case's own process (suite
code) could write to: a line whose fields have the wrong types is nonsense, never a proof."""

from __future__ import annotations

import pytest

from secbench_tui.core.verify.python_child import _execution

NONSENSE = "the Python child process answered nonsense"


def test_a_well_formed_line_is_read_whole() -> None:
    line = {
        "params_index": 2,
        "rows": [{"id": 1}],
        "affected": 0,
        "refused": True,
        "status": 403,
        "error": None,
        "violations": [],
        "compared": [[1]],
    }
    execution = _execution(line, 2)
    assert (execution.params_index, execution.rows, execution.status) == (2, [{"id": 1}], 403)
    assert execution.refused and execution.error is None and execution.compared == [[1]]


@pytest.mark.parametrize(
    "line",
    [
        {"params_index": "0"},
        {"params_index": True},
        {"params_index": 0, "rows": "all of them"},
        {"params_index": 0, "rows": [1, 2]},
        {"params_index": 0, "refused": "yes"},
        {"params_index": 0, "status": "200"},
        {"params_index": 0, "affected": 1.5},
        {"params_index": 0, "error": ["x"]},
        {"params_index": 0, "violations": {"a": 1}},
    ],
)
def test_a_field_of_the_wrong_type_is_nonsense(line: dict[str, object]) -> None:
    execution = _execution(line, 0)
    assert execution.error == NONSENSE and not execution.did_something
