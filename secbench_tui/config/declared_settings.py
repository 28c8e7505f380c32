"""The base of every settings model (`config.models`, `config.fix_command`): declared fields,
each value checked when the model is made and when it is copied.
"""

from typing import Any, Self

from pydantic import BaseModel, ConfigDict


class DeclaredSettings(BaseModel):
    """Settings declared as fields: every value checked when made, and when copied (`replace`).

    A number is a finite one (`--timeout nan` is not a number of seconds); a name that is not
    declared is refused (`extra_forbidden`), not dropped.
    """

    # defer_build: pydantic builds a model's validator on its first use, so --help and
    # --version, which read only the declarations (`model_fields`), never build one
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", defer_build=True)

    def values(self) -> dict[str, Any]:
        """Every field's value, by name, in declaration order (secrets as they are)."""
        return {name: getattr(self, name) for name in type(self).model_fields}

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes`, validated as any other (pydantic's `model_copy` is not)."""
        return self.model_validate({**self.values(), **changes})
