"""Parse `-T key=value` and `-M key=value` flags into typed dictionaries."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from harness.bounded_json import MAX_DEPTH, depth
from harness.errors import HarnessUsageError


class ValueShapeError(ValueError):
    """A value no reader should take: nested past `MAX_DEPTH`, or an integer too long to read."""


def parse_value(text: str) -> Any:
    """JSON when the text is valid JSON (numbers, booleans, lists), else the text itself.

    Raises:
        ValueShapeError: the text nests brackets deeper than `MAX_DEPTH` (a JSON reader
            recurses once per level: 500,000 `[` raised RecursionError), or holds an integer
            of more than 4,300 digits (Python refuses to read it).

    """
    if (found := depth(text.encode("utf-8", "surrogatepass"))) > MAX_DEPTH:
        raise ValueShapeError(f"nested {found} deep, over the limit of {MAX_DEPTH}")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
    except ValueError:  # an integer of more than 4,300 digits: not a number we can take
        raise ValueShapeError("an integer too long to read") from None


def parse_kv(pairs: Iterable[str], flag: str) -> dict[str, Any]:
    """`["a=1", "b=x"]` -> `{"a": 1, "b": "x"}`; a pair without `=` or a key is a usage error."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key or not key.replace("_", "").replace("-", "").isalnum():
            raise HarnessUsageError(
                f"malformed {flag} '{pair}'; write it as {flag} key=value (an unknown key is "
                "answered with the keys the task or model takes)"
            )
        try:
            parsed = parse_value(value)
        except ValueShapeError as ex:
            raise HarnessUsageError(
                f"{flag} {key}=...: {ex}; give a number, a word or a list"
            ) from None
        if _has_non_finite(parsed):
            raise HarnessUsageError(
                f"{flag} {key}={value}: not a finite number; give a number such as 0.5"
            )
        out[key.replace("-", "_")] = parsed
    return out


def _has_non_finite(value: Any) -> bool:
    """NaN or infinity, alone or in a list (JSON's NaN, Infinity, 1e400; text 'nan', 'inf')."""
    if isinstance(value, list):
        return any(_has_non_finite(v) for v in value)
    if isinstance(value, str):
        parts = [p.strip().lower() for p in value.split(",")]
        return any(p.lstrip("+-") in ("nan", "inf", "infinity") for p in parts)
    return isinstance(value, float) and not math.isfinite(value)
