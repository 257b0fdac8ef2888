"""Declared ranges for a task's numeric arguments, and a work estimate before the task is built.

Each suite's `@task` carries `@checked_args(...)` between `@task` and `def`: the range of each
numeric argument (low, high, integer or not, ends open or closed), and optionally an estimate of
the work the arguments ask for (`Work`). Both are checked in `checked_args`'s wrapper, so
`harness eval`, `harness reproduce` and `inspect eval harness/...` all check them before a
sample is built.

- A number outside its range, NaN or infinite is one line naming the argument, its range and
  the value. Ranges are not overridable: they say what the argument means.
- Work over its limit (a default per task, in the task's own unit) is one line naming the
  estimate, the limit and the flag that raises it: `harness eval --max-work N`, or the
  environment variable `HARNESS_MAX_WORK=N` for `inspect eval`.

Arguments whose names say what they are (`workers`, `seeds`, `seed`, ...) take the range in
`NAMED` unless the task declares its own. tests/suites/test_arg_ranges.py checks that every
numeric argument of every task in the catalog has a range.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar

from harness.errors import HarnessUsageError

F = TypeVar("F", bound=Callable[..., Any])
WORK_ENV = "HARNESS_MAX_WORK"
WORK_FLAG = "--max-work"


@dataclass(frozen=True)
class Range:
    """The values a numeric argument may take."""

    low: float  # lowest value
    high: float  # highest value
    integer: bool = False  # a whole number
    low_open: bool = False  # `low` itself excluded (a positive floor)
    high_open: bool = False  # `high` itself excluded

    def __contains__(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.integer and not float(value).is_integer():
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def describe(self) -> str:
        """For example `an integer in [1, 10,000]` or `a number in (0, 1]`."""
        kind = "an integer" if self.integer else "a number"
        left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
        return f"{kind} in {left}{_shown(self.low)}, {_shown(self.high)}{right}"


def _shown(value: float) -> str:
    """10,000,000 rather than 1e+07; 0.01 as it is."""
    return f"{value:,.0f}" if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def count(high: float, low: float = 1) -> Range:
    """An integer count in [low, high]."""
    return Range(low, high, integer=True)


def positive(high: float) -> Range:
    """A real number in (0, high]."""
    return Range(0, high, low_open=True)


# ranges an argument takes by its name, unless its task declares another
NAMED: dict[str, Range] = {
    "workers": count(4096),  # more than the cores is capped (harness.suites.training_pool)
    "cpus_per_run": count(4096),
    "seeds": count(10_000),
    "seed": count(2**32 - 1, low=0),
    "max_tokens": count(1_000_000),
    "temperature": Range(0, 100),
}


@dataclass(frozen=True)
class Work:
    """How much work a task's arguments ask for, estimated before anything is built."""

    estimate: Callable[[dict[str, Any]], float]  # from every argument (defaults filled in)
    unit: str  # what is counted, for example "slice-minutes simulated"
    limit: float  # the default limit, raised by --max-work


_max_work: ContextVar[float | None] = ContextVar("harness_max_work", default=None)


@contextmanager
def work_limit(limit: float | None) -> Iterator[None]:
    """Within this block, `limit` replaces each task's default work limit (None: no change)."""
    if limit is not None and not (math.isfinite(limit) and limit > 0):
        raise HarnessUsageError(f"{WORK_FLAG} must be a positive number, got {limit!r}")
    if limit is None:
        yield
        return
    token = _max_work.set(limit)
    try:
        yield
    finally:
        _max_work.reset(token)


def current_limit(default: float) -> float:
    """--max-work if given, else HARNESS_MAX_WORK if set, else `default`."""
    given = _max_work.get()
    if given is not None:
        return given
    text = os.environ.get(WORK_ENV)
    if text:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise HarnessUsageError(f"{WORK_ENV}={text!r} must be a positive number")
        return value
    return default


def check_work(where: str, work: float, unit: str, default_limit: float) -> None:
    """A one-line usage error when `work` is over the limit, naming the flag that raises it."""
    limit = current_limit(default_limit)
    if not work <= limit:  # NaN is over any limit
        raise HarnessUsageError(
            f"{where}: these arguments ask for {work:,.0f} {unit}, over the limit of "
            f"{limit:,.0f}; lower them, or raise the limit with {WORK_FLAG} {math.ceil(work)} "
            f"(or {WORK_ENV}={math.ceil(work)})"
        )


def _number(value: Any) -> float | None:
    """A task argument as a number, or None when it is not one (types are checked elsewhere)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):  # `inspect eval -T` may pass numbers as text
        try:
            return float(value)
        except ValueError:
            return None
    return None


def range_of(ranges: dict[str, Range], name: str) -> Range | None:
    """The declared range of argument `name`, else its range by name, else None."""
    return ranges.get(name, NAMED.get(name))


def check_ranges(where: str, ranges: dict[str, Range], args: dict[str, Any]) -> None:
    """A one-line usage error for the first argument outside its range."""
    for name, value in args.items():
        number = _number(value)
        bounds = range_of(ranges, name)
        if number is None or bounds is None:
            continue
        if number not in bounds:
            raise HarnessUsageError(
                f"{where}: -T {name}={value!r} is out of range; {name} takes {bounds.describe()}"
            )


def checked_args(
    ranges: dict[str, Range] | None = None, work: Work | None = None
) -> Callable[[F], F]:
    """Decorate a task function (under `@task`) with its arguments' ranges and work estimate.

    The wrapper checks every argument given or defaulted against its range, then the work
    estimate against its limit, and only then calls the task function.
    """
    declared = dict(ranges or {})

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        unknown = set(declared) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{fn.__name__}: ranges for arguments it lacks: {sorted(unknown)}")

        @wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            where = fn.__name__
            check_ranges(where, declared, dict(bound.arguments))
            if work is not None:
                check_work(
                    where, float(work.estimate(dict(bound.arguments))), work.unit, work.limit
                )
            return fn(*args, **kwargs)

        wrapper.harness_ranges = declared  # type: ignore[attr-defined]
        wrapper.harness_work = work  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
