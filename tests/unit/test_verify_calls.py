"""The statements verify runs in a case's session name nothing a case could define.

Read with PostgreSQL's own parser (pglast): every function, operator, type and relation they
name is schema-qualified (`pg_catalog`, or the gate's `public`), and every value is a bound
parameter, never part of the text (issue 30: a case that put a `md5` of its own before the
catalog's on its search path was called inside verify's settings check, read the checker's
token from `current_query()` and forged its own verdict).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pglast = pytest.importorskip("pglast", reason="needs the verify extra (pglast)")

from secbench_tui.core.verify import calls  # noqa: E402

OURS = {
    "XACT": calls.XACT,
    "SESSION_SETTINGS": calls.SESSION_SETTINGS,
    "GATE_EXEC_CALL": calls.GATE_EXEC_CALL,
    "GATE_QUERY_CALL": calls.GATE_QUERY_CALL,
    "SEQUENCE_RESET": calls.SEQUENCE_RESET,
    **{
        name: getattr(calls, name)[0]
        for name in (
            "BEGIN",
            "SAVEPOINT",
            "BACK_TO_SAVEPOINT",
            "ROLLBACK",
            "DISCARD",
            "DISCARD_SEQUENCES",
        )
    },
}
SCHEMAS = {"pg_catalog", "public"}


def _tree(text: str) -> Any:
    numbered = text
    for number in range(1, text.count("%s") + 1):
        numbered = numbered.replace("%s", f"${number}", 1)
    return json.loads(pglast.parser.parse_sql_json(numbered))


def _nodes(tree: Any, kind: str) -> Iterator[dict[str, Any]]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key == kind:
                yield value
            yield from _nodes(value, kind)
    elif isinstance(tree, list):
        for value in tree:
            yield from _nodes(value, kind)


def _name(parts: list[dict[str, Any]]) -> list[str]:
    return [part["String"]["sval"] for part in parts]


@pytest.mark.parametrize("name", sorted(OURS))
def test_every_name_in_verifys_own_statements_is_schema_qualified(name: str) -> None:
    tree = _tree(OURS[name])
    functions = [_name(node["funcname"]) for node in _nodes(tree, "FuncCall")]
    operators = [_name(node["name"]) for node in _nodes(tree, "A_Expr")]
    types = [_name(node["typeName"]["names"]) for node in _nodes(tree, "TypeCast")]
    relations = [[node.get("schemaname"), node["relname"]] for node in _nodes(tree, "RangeVar")]

    for kind, found in (
        ("function", functions),
        ("operator", operators),
        ("type", types),
        ("relation", relations),
    ):
        for parts in found:
            assert len(parts) == 2 and parts[0] in SCHEMAS, f"{name}: {kind} {parts}"
    constants = [node for node in _nodes(tree, "A_Const") if "sval" in node]
    assert all(c["sval"]["sval"] == "session" for c in constants), constants


def test_the_token_and_the_rows_are_bound_never_written_into_the_text() -> None:
    gate = calls.Calls("Sekr1t-token", cap=10)
    sent = [
        gate.execute("SELECT 1"),
        gate.query("SELECT 2"),
        gate.result_table([{"id": "Sekr1t-row"}]),
        *calls.sequence_resets([(16400, 7, True)]),
    ]

    for text, params in sent:
        assert "Sekr1t" not in text and "16400" not in text
        assert text.count("%s") == len(params)
    assert sent[0][1][0] == "Sekr1t-token" and "Sekr1t-row" in str(sent[2][1])
