"""What one run of one case on one parameter set produced, for either kind of app."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

# A row of a query's result, or of a Python app's reply: the suite's column (or key) names ->
# values made JSON-ready (`json_value`). The columns are the suite's: no type names them.
ResultSetRow = dict[str, object]
# One parameter set of a case's scenario: the suite's parameter names -> their values.
Parameters = dict[str, object]
# How an execution's error starts when the rows an exploit adds (`Scenario.rows`) do not go
# in (a key taken, a foreign key, a check): the exploit is refused, the case is not at fault.
ROWS_NOT_INSERTED = "its rows do not insert"


@dataclass
class Execution:
    params_index: int
    rows: list[ResultSetRow] = field(default_factory=list)  # result rows, JSON-ready
    affected: int = 0  # rows changed by a write without RETURNING
    refused: bool = False  # the case refused the request (RAISE, 403/404...): a legal outcome
    status: int | None = None  # HTTP status, for a Python app
    error: str | None = None  # the case could not run: never a proof either way
    violations: list[ResultSetRow] = field(default_factory=list)  # rows of `# Property`
    compared: Any = None  # what the original's rule compares (rows, read-back or affected)

    @property
    def did_something(self) -> bool:
        ok_status = self.status is None or 200 <= self.status < 400
        return not self.refused and ok_status and (bool(self.rows) or self.affected > 0)


def json_value(value: Any) -> Any:
    """A database or response value as plain JSON (uuid, dates and decimals as text)."""
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, uuid.UUID | dt.date | dt.time | dt.timedelta | decimal.Decimal):
        return str(value) if not isinstance(value, dt.date) else value.isoformat()
    if isinstance(value, bytes | memoryview):
        return bytes(value).hex()
    return value


def dumps(value: Any) -> str:
    return json.dumps(json_value(value), sort_keys=True, default=str)
