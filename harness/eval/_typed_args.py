"""Convert `-T` and `-M` values to the types the task's or the provider's signature declares.

`harness.kv_args` reads each value as JSON where it can; here it is checked against the
parameter's annotation: int, float, bool, str, `Literal[...]`, `X | None` and `list[X]` (a list
may be written `a,b,c`). A value that does not convert is a usage error naming the flag, the key,
the value, the type wanted and, for a `Literal`, the valid choices. Parameters without an
annotation, or with one not listed here, take the value as read.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

from harness.errors import HarnessUsageError
from harness.kv_args import parse_value
from harness.outside_numbers import check_number

TRUE_WORDS = {"true", "yes", "1", "on"}
FALSE_WORDS = {"false", "no", "0", "off"}


class _NoMatch(Exception):
    """The value does not convert to this type."""


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(c) for c in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin is list:
        (item,) = typing.get_args(annotation) or (Any,)
        return f"a list of {_type_name(item)} (a,b,c)"
    if annotation is type(None):
        return "null"
    return getattr(annotation, "__name__", str(annotation))


def _convert(value: Any, annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if annotation is Any or annotation is inspect.Parameter.empty:
        return value
    if origin in (typing.Union, types.UnionType):
        members = typing.get_args(annotation)
        if value is None and type(None) in members:
            return None
        # an exact type match first (so 3 stays an int in `str | int`), then conversions
        for member in members:
            if isinstance(member, type) and type(value) is member:
                return value
        for member in members:
            try:
                return _convert(value, member)
            except _NoMatch:
                continue
        raise _NoMatch
    if origin is typing.Literal:
        choices = typing.get_args(annotation)
        for choice in choices:
            if value == choice or str(value) == str(choice):
                return choice
        raise _NoMatch
    if origin is list:
        (item,) = typing.get_args(annotation) or (Any,)
        items = value if isinstance(value, list) else [v for v in str(value).split(",") if v]
        return [_convert(parse_value(v) if isinstance(v, str) else v, item) for v in items]
    if annotation is type(None):
        if value is None:
            return None
        raise _NoMatch
    if annotation is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in TRUE_WORDS:
            return True
        if text in FALSE_WORDS:
            return False
        raise _NoMatch
    if annotation is int or annotation is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _NoMatch
        checked = check_number(value, integer=annotation is int)
        if checked.value is None:
            raise _NoMatch(checked.reason)
        return checked.value
    if annotation is str:
        if isinstance(value, list | dict):
            raise _NoMatch
        return value if isinstance(value, str) else ("null" if value is None else str(value))
    return value  # a type we do not check: as read


def convert(value: Any, annotation: Any, flag: str, key: str) -> Any:
    """`value` as `annotation`, or a usage error naming the flag, key, value and type wanted."""
    try:
        return _convert(value, annotation)
    except (_NoMatch, TypeError, ValueError) as ex:
        why = f" ({ex.args[0]})" if isinstance(ex, _NoMatch) and ex.args else ""
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        raise HarnessUsageError(
            f"{flag} {key}={shown}: wants {_type_name(annotation)}, got {type(value).__name__}{why}"
        ) from None


def hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Parameter annotations of a function or class constructor, resolved; empty where absent."""
    target = fn.__init__ if inspect.isclass(fn) else fn  # type: ignore[misc]
    target = inspect.unwrap(target)
    try:
        resolved = typing.get_type_hints(target)
    except Exception:  # an annotation that cannot be resolved: check nothing for it
        resolved = {}
    params = inspect.signature(target).parameters
    return {name: resolved.get(name, inspect.Parameter.empty) for name in params}


# Arguments whose names say what range they take, whatever task or provider declares them:
# (test on the name, lowest value, highest value, what the value is).
MAX_COUNT = 1_000_000  # samples, seeds, tokens: more is a typo, and would not fit in memory
NAMED_RANGES: tuple[tuple[Callable[[str], bool], float, float, str], ...] = (
    (lambda k: k == "max_tokens" or k.endswith("_max_tokens"), 1, MAX_COUNT, "a token count"),
    (lambda k: k in ("n", "seeds", "samples"), 1, MAX_COUNT, "a count"),
    (lambda k: k == "temperature" or k.endswith("_temperature"), 0, 100, "a temperature"),
    (lambda k: k.endswith(("timeout", "_seconds", "_minutes")), 1e-9, 1e7, "a duration"),
)


def check_named_range(flag: str, key: str, value: Any) -> None:
    """A usage error when a number is outside the range its argument's name implies."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    for applies, low, high, what in NAMED_RANGES:
        if applies(key) and not low <= value <= high:
            shown = "a positive number" if low < 1e-6 and low > 0 else f"from {low:g}"
            raise HarnessUsageError(f"{flag} {key}={value!r}: {what} must be {shown} to {high:g}")


def typed(fn: Callable[..., Any], args: dict[str, Any], flag: str) -> dict[str, Any]:
    """`args` converted to `fn`'s annotations; keys it does not declare are left as read.

    A number is also checked against the range its name implies (`NAMED_RANGES`).
    """
    annotations = hints(fn)
    out = {
        k: convert(v, annotations[k], flag, k) if k in annotations else v for k, v in args.items()
    }
    for key, value in out.items():
        check_named_range(flag, key, value)
    return out
