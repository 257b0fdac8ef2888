"""One check for every number that comes from outside: right type, finite, in range.

Outside is anything the harness did not compute itself: a price file (`--model-cost-config`),
a log's fields (a sample's `total_cost`, token counts, seconds), `-T` and `-M` values. Each
reader passes the value it found through `check_number` with the range its meaning allows,
and gets either the number or the reason it is not one:

- type: an `int` or a `float`, never a `bool` (JSON and YAML `true` is not $1), a string or
  a list; an integer where a count is wanted (2.0 passes as 2, 2.5 does not);
- finite: no NaN or infinity (JSON's `NaN`, `Infinity`, and `1e400`, which parses as inf);
- in range: between the `low` and `high` that the value's meaning allows (a price is not
  negative, and no price is a million dollars per million tokens).

The reason is one short phrase ("true is not a number", "nan is not finite", "-1 is below
0"), which a reader puts after the value's name: a usage error for a file or flag the user
gave, "invalid: <reason>" for a field of a log, which is then never published as a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessUsageError

INT64 = 2**63 - 1  # an integer argument ends up in numpy or torch, which hold 64 bits


@dataclass(frozen=True, slots=True)
class Checked:
    """A value from outside, checked.

    Attributes:
        value: The number (an int where `integer` was asked, else a float); None when rejected.
        reason: Empty when the value is a number in range; else why it is not, e.g.
            "true is not a number" or "1e+308 is over 1e+09".

    """

    value: float | int | None
    reason: str

    @property
    def ok(self) -> bool:
        """Whether the value is a number in range."""
        return not self.reason


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value[:40] + ("..." if len(value) > 40 else ""))
    if isinstance(value, int) and abs(value) > 10**15:
        return (
            f"{float(value):g}"
            if abs(value) < 10**308
            else f"an integer of {len(str(value))} digits"
        )
    if isinstance(value, int | float):
        return f"{value:g}"
    return f"a {type(value).__name__}"


def check_number(
    value: Any,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    integer: bool = False,
    above_low: bool = False,
    text: bool = False,
) -> Checked:
    """`value` as a finite number in [`low`, `high`] (or (`low`, `high`] with `above_low`).

    Args:
        value: What was read (from JSON, YAML, a flag): anything.
        low: The lowest value allowed.
        high: The highest value allowed.
        integer: Whether a whole number is wanted (then also within 64 bits).
        above_low: Whether `low` itself is refused (a limit must be more than 0).
        text: Whether a string that reads as a decimal number is taken (YAML 1.1 reads
            `3e-6`, without a dot, as a string); it is then checked as that number.

    Returns:
        A `Checked` with the number, or with the reason it is not one.

    """
    if text and isinstance(value, str) and len(value) <= 64:
        try:
            value = float(value.strip())
        except ValueError:
            return Checked(None, f"{_shown(value)} is not a number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Checked(None, f"{_shown(value)} is not a number")
    if isinstance(value, float) and not math.isfinite(value):
        return Checked(None, f"{_shown(value)} is not finite")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            return Checked(None, f"{_shown(value)} is not a whole number")
        if abs(value) > INT64:
            return Checked(None, f"{_shown(value)} is over {INT64:,} in size")
        number: float | int = int(value)
    else:
        try:
            number = float(value)
        except OverflowError:  # an int past the float range
            return Checked(None, f"{_shown(value)} is not finite as a decimal number")
    if number < low or (above_low and number == low):
        word = "not above" if number == low else "below"
        return Checked(None, f"{_shown(value)} is {word} {_shown(low)}")
    if number > high:
        return Checked(None, f"{_shown(value)} is over {_shown(high)}")
    return Checked(number, "")


def require_number(value: Any, what: str, **bounds: Any) -> float | int:
    """`check_number(value, **bounds)`'s number, or a usage error `"{what}: {reason}"`."""
    checked = check_number(value, **bounds)
    if checked.value is None:
        raise HarnessUsageError(f"{what}: {checked.reason}")
    return checked.value
