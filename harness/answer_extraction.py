r"""Pull a final answer out of a model's text: the last `\boxed{...}`, or the last integer.

Modes (always recorded in the score's metadata):

- `boxed_or_int` (default, the foundation issue's rule): the content of the last `\boxed{...}`,
  matching nested braces; if the text has no box, the last integer in it.
- `strict` (specs/aime.md §2.3, ours): only the last box counts; spaces, `$` and a trailing period
  are stripped, and the rest must be a decimal integer 0-999, else there is no answer.
"""

from __future__ import annotations

import re
from typing import Literal

ExtractionMode = Literal["boxed_or_int", "strict"]
EXTRACTION_MODES: tuple[str, ...] = ("boxed_or_int", "strict")

_INT = re.compile(r"-?\d+")


def last_boxed(text: str) -> str | None:
    r"""Content of the last `\boxed{...}` (or `\fbox{...}`), matching nested braces."""
    start = max(text.rfind("\\boxed{"), text.rfind("\\fbox{"))
    if start < 0:
        return None
    i = text.index("{", start) + 1
    depth, begin = 1, i
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[begin:i]
        i += 1
    return None  # unbalanced: the box never closes


def last_integer(text: str) -> str | None:
    """The last integer in the text, sign included."""
    found = _INT.findall(text.replace(",", ""))
    return found[-1] if found else None


def extract_answer(text: str, mode: ExtractionMode = "boxed_or_int") -> str | None:
    """The answer string the scorer compares, or None when there is none."""
    if mode not in EXTRACTION_MODES:
        raise ValueError(f"unknown extraction mode {mode!r}; valid modes: {EXTRACTION_MODES}")
    boxed = last_boxed(text)
    if mode == "boxed_or_int":
        return boxed.strip() if boxed is not None else last_integer(text)
    if boxed is None:
        return None
    cleaned = boxed.replace(" ", "").replace("$", "").rstrip(".")
    if cleaned.isdigit() and 0 <= int(cleaned) <= 999:
        return cleaned
    return None
