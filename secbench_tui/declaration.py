"""What a declared setting is made of, and the one check of values against the declarations.

`config.py` declares each setting once, as an annotated attribute of a `Declared` class:
its type (`Literal` for a closed set of values, `X | None`, `list[X]`), its default, and in
`Annotated` metadata its `Bounds`, its `Check`s and what the command line and the record
make of it (`config.Flag`, `config.Record`). Making an instance checks every value given
against its declaration and reports every problem at once (`SettingsError`), each named by
its field, in the shape `config.describe_error` turns into one line naming the flags.

This is small on purpose: it takes values from the command line (text), the environment
(text) and the app's setup screen, converts text to the declared type and checks it. It
exists instead of pydantic because every start of the program makes these settings, and
pydantic's import and model building cost a start more than half of what the whole program
adds to the floor of httpx and SQLite (issue 23, README "Performance").
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self, Union, get_args, get_origin
from typing import get_type_hints as _type_hints

_MISSING: Any = object()


class SecretStr:
    """A secret (the API key) that never shows itself in a repr, a log or a traceback."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "SecretStr('**********')" if self._value else "SecretStr('')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretStr) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True)
class Bounds:
    """The bounds of a number: above `gt`, at least `ge`, below `lt`, at most `le`."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def problem(self, value: float) -> tuple[str, str, float] | None:
        """(kind, bound's name, bound) of the first bound `value` breaks."""
        if self.ge is not None and value < self.ge:
            return "greater_than_equal", "ge", self.ge
        if self.gt is not None and value <= self.gt:
            return "greater_than", "gt", self.gt
        if self.le is not None and value > self.le:
            return "less_than_equal", "le", self.le
        if self.lt is not None and value >= self.lt:
            return "less_than", "lt", self.lt
        return None


@dataclass(frozen=True)
class Check:
    """A check of one field beyond its type: `check(value)` returns the value to keep or
    raises ValueError with words for the user. `before`: run on the value as given, before
    the type is checked (to say something better than the type's own words)."""

    check: Callable[[Any], Any]
    before: bool = False


@dataclass(frozen=True)
class Problem:
    """One value that does not fit its declaration. `kind`: what is wrong (`missing`,
    `int_parsing`, `greater_than_equal`, `check`, ...); `bounds`: the bound broken."""

    field: str
    kind: str
    message: str
    value: object = None
    bounds: Mapping[str, float] | None = None


class SettingsError(ValueError):
    """Every value that does not fit its declaration, in declaration order."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))
        self.problems = problems


class _Invalid(Exception):
    def __init__(self, kind: str, message: str, bounds: Mapping[str, float] | None = None):
        super().__init__(message)
        self.kind, self.message, self.bounds = kind, message, bounds


@dataclass
class Setting:
    """One declared field: its name, type (metadata stripped), default and metadata."""

    name: str
    annotation: Any
    default: Any
    metadata: tuple[Any, ...]

    @property
    def required(self) -> bool:
        return self.default is _MISSING

    def default_value(self) -> Any:
        """The default, a fresh copy for a list (never one list shared by instances)."""
        return list(self.default) if isinstance(self.default, list) else self.default

    def of(self, kind: type[Any]) -> Any:
        """The metadata of type `kind` (a `Flag`, a `Record`, `Bounds`), or None."""
        return next((m for m in self.metadata if isinstance(m, kind)), None)

    def checked(self, value: Any) -> Any:
        checks = [m for m in self.metadata if isinstance(m, Check)]
        for check in checks:
            if check.before:
                value = _run_check(check, value)
        value = _typed(value, self.annotation)
        bounds = self.of(Bounds)
        if bounds is not None and isinstance(value, int | float) and not isinstance(value, bool):
            broken = bounds.problem(value)
            if broken is not None:
                kind, name, bound = broken
                raise _Invalid(kind, f"breaks {name}={bound}", {name: bound})
        for check in checks:
            if not check.before:
                value = _run_check(check, value)
        return value


def _run_check(check: Check, value: Any) -> Any:
    try:
        return check.check(value)
    except ValueError as exc:
        raise _Invalid("check", str(exc)) from None


class Declared:
    """Settings declared as annotated class attributes (see the module's docstring).

    `Class(**values)` checks every value and raises `SettingsError` naming every problem;
    a name that is not declared is a TypeError (a mistake in the program, not the user's).
    Instances compare by their values; `replace` makes a checked copy with some changed.
    """

    FIELDS: ClassVar[dict[str, Setting]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        hints = _hints(cls)
        found: dict[str, Setting] = {}
        for name, hint in hints.items():
            if get_origin(hint) is ClassVar or name.startswith("_") or name == "FIELDS":
                continue
            annotation, metadata = hint, ()
            if get_origin(hint) is Annotated:
                annotation, *rest = get_args(hint)
                metadata = tuple(rest)
            default = cls.__dict__.get(name, _MISSING)
            if default is _MISSING:  # declared by a base class: its default, unless changed
                inherited = [getattr(b, "FIELDS", {}).get(name) for b in cls.__mro__[1:]]
                default = next((s.default for s in inherited if s is not None), _MISSING)
            found[name] = Setting(name, annotation, default, metadata)
        for name in found:
            if name in cls.__dict__:
                delattr(cls, name)  # the instance's value, never the class's default
        cls.FIELDS = found

    def __init__(self, **values: Any) -> None:
        values = self._before(values)
        unknown = set(values) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no setting {', '.join(sorted(unknown))}")
        problems: list[Problem] = []
        for name, setting in self.FIELDS.items():
            value = values.get(name, _MISSING)
            if value is _MISSING:
                if setting.required:
                    problems.append(Problem(name, "missing", "is required"))
                    continue
                setattr(self, name, setting.default_value())
                continue
            try:
                setattr(self, name, setting.checked(value))
            except _Invalid as exc:
                problems.append(Problem(name, exc.kind, exc.message, value, exc.bounds))
        if problems:
            raise SettingsError(problems)

    @classmethod
    def _before(cls, values: dict[str, Any]) -> dict[str, Any]:
        """The values as given, before any is checked (a subclass's shorthands)."""
        return values

    def values(self) -> dict[str, Any]:
        """Every field's value, by name, in declaration order."""
        return {name: getattr(self, name) for name in self.FIELDS}

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes`, checked as any other."""
        return type(self)(**{**self.values(), **changes})

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Declared)
            and type(other) is type(self)
            and self.values() == other.values()
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.values().items())
        return f"{type(self).__name__}({shown})"


def _hints(cls: type) -> dict[str, Any]:
    """The class's annotations with its bases', as objects. Annotations that are already
    objects (a module without `from __future__ import annotations`, as config.py is) are
    taken as they are: evaluating every declaration's text again would cost each start of
    the program a compile per field."""
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if not issubclass(klass, Declared) or klass is Declared:
            continue
        own = klass.__dict__.get("__annotations__", {})
        if any(isinstance(hint, str) for hint in own.values()):
            return _type_hints(cls, include_extras=True)
        hints.update(own)
    return hints


# --- a value against its declared type -----------------------------------------------------


def _typed(value: Any, annotation: Any) -> Any:
    """`value` as `annotation` says (text read as a number or a path), or `_Invalid`."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        options = get_args(annotation)
        if value is None and type(None) in options:
            return None
        first: _Invalid | None = None
        for option in options:
            if option is type(None):
                continue
            try:
                return _typed(value, option)
            except _Invalid as exc:
                first = first or exc
        assert first is not None
        raise first
    if origin is Literal:
        allowed = get_args(annotation)
        if value in allowed:
            return value
        words = [repr(a) for a in allowed]
        said = f"{', '.join(words[:-1])} or {words[-1]}" if len(words) > 1 else words[0]
        raise _Invalid("literal_error", f"must be {said} (got {value!r})")
    if origin is list:
        if not isinstance(value, list | tuple):
            raise _Invalid("list_type", f"must be a list (got {value!r})")
        (item,) = get_args(annotation)
        return [_typed(v, item) for v in value]
    return _plain(value, annotation)


def _plain(value: Any, annotation: Any) -> Any:
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise _Invalid("bool_type", f"must be true or false (got {value!r})")
    if annotation is int:
        return _whole(value)
    if annotation is float:
        return _number(value)
    if annotation is str:
        if isinstance(value, str):
            return value
        raise _Invalid("string_type", f"must be text (got {value!r})")
    if annotation is Path:
        if isinstance(value, Path | str):
            return Path(value)
        raise _Invalid("path_type", f"must be a path (got {value!r})")
    if annotation is SecretStr and isinstance(value, str):
        return SecretStr(value)
    if isinstance(annotation, type) and isinstance(value, annotation):
        return value
    raise _Invalid("type", f"must be a {getattr(annotation, '__name__', annotation)}")


def _whole(value: Any) -> int:
    if isinstance(value, bool):
        raise _Invalid("int_type", "must be a whole number")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise _Invalid("int_from_float", "must be a whole number")
    if isinstance(value, str) and value.isascii():  # not `٣`, which int() takes for 3
        try:
            return int(value.strip())
        except ValueError:
            pass
        try:  # `2.0`, as the command line took it before (pydantic's reading)
            number = float(value.strip())
        except ValueError:
            pass
        else:
            if number.is_integer():
                return int(number)
    raise _Invalid("int_parsing", "must be a whole number")


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise _Invalid("float_type", "must be a number")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str) and value.isascii():  # not `٣`, which float() takes for 3
        try:
            number = float(value.strip())
        except ValueError:
            raise _Invalid("float_parsing", "must be a number") from None
    else:
        raise _Invalid("float_type", "must be a number")
    if not math.isfinite(number):
        raise _Invalid("finite_number", "must be a finite number")
    return number
