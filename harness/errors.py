"""The one error type for mistakes a user can make and fix."""

from __future__ import annotations


class HarnessUsageError(Exception):
    """A mistake in the user's input: a bad flag, a missing file, a malformed row.

    The message says what is wrong and what to do. The CLI prints it as one line and exits
    with code 2, without a traceback. Bugs raise ordinary exceptions instead.
    """
