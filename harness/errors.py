"""The one error type for mistakes a user can make and fix."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any


class HarnessUsageError(Exception):
    """A mistake in the user's input: a bad flag, a missing file, a malformed row.

    The message says what is wrong and what to do. The CLI prints it as one line and exits
    with code 2, without a traceback. Bugs raise ordinary exceptions instead.
    """


def exit_on_usage_error(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a CLI command: print a `HarnessUsageError` as one line on stderr and exit 2."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HarnessUsageError as ex:
            # one line, whatever the message quotes (a library's multi-line reason included)
            message = " ".join(part.strip() for part in str(ex).splitlines() if part.strip())
            print(f"harness: error: {message}", file=sys.stderr)
            sys.exit(2)

    return wrapper
