r"""AIME answers the way MAS-ProVe reads them (spec §2, "Answer scoring, AIME"; aime.md `lenient`).

Rules, in order, for `lenient` and `lenient_compat`:

1. if an `<answer>...</answer>` block is present, only its text is read;
2. the last `\boxed{...}` there, if any: its content as an integer (the last standalone 1-3 digit
   number in it when it is not a plain integer);
3. the last standalone 1-3 digit number of the last non-empty line;
4. a phrase: "answer is N", "= N", "therefore N", "thus N" (the last such phrase);
5. the last standalone 1-3 digit number anywhere.

"Standalone" means no digit on either side, so "1000" alone has no answer (the authors' code
returns -1 for it), and it scores wrong.

`lenient_compat` mirrors a quirk of the authors' phrase patterns: they have no digit boundary, so
"the answer is 1000" reads as 100. `lenient` (ours) requires the boundary there too. Which line
step 3 reads is our reconstruction: the spec names the steps, not their scope.
"""

from __future__ import annotations

import re
from typing import Literal

from harness.answer_extraction import extract_answer, last_boxed

AimeExtraction = Literal["boxed_or_int", "strict", "lenient", "lenient_compat"]
AIME_EXTRACTIONS: tuple[str, ...] = ("boxed_or_int", "strict", "lenient", "lenient_compat")

_ANSWER_BLOCK = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_STANDALONE = re.compile(r"(?<!\d)\d{1,3}(?!\d)")
_PHRASE = r"(?:answer\s+is|=|therefore,?|thus,?)\s*\$?\s*"
_PHRASE_BOUNDED = re.compile(_PHRASE + r"(\d{1,3})(?!\d)", re.IGNORECASE)
_PHRASE_COMPAT = re.compile(_PHRASE + r"(\d{1,3})", re.IGNORECASE)  # no boundary: the quirk


def _last_standalone(text: str) -> int | None:
    found = _STANDALONE.findall(text)
    return int(found[-1]) if found else None


def lenient_answer(text: str, *, compat: bool = False) -> int | None:
    """The integer answer under MAS-ProVe's lenient rules, or None when there is none.

    Args:
        text: The model's output.
        compat: Mirror the authors' phrase patterns, which have no digit boundary.

    """
    block = _ANSWER_BLOCK.search(text or "")
    scope = block.group(1) if block else (text or "")
    boxed = last_boxed(scope)
    if boxed is not None:
        cleaned = boxed.replace(" ", "").replace("$", "").replace(",", "").rstrip(".")
        if cleaned.isdigit():
            return int(cleaned)
        inside = _last_standalone(boxed)
        if inside is not None:
            return inside
    lines = [line for line in scope.splitlines() if line.strip()]
    if lines:
        last = _last_standalone(lines[-1])
        if last is not None:
            return last
    phrases = (_PHRASE_COMPAT if compat else _PHRASE_BOUNDED).findall(scope)
    if phrases:
        return int(phrases[-1])
    return _last_standalone(scope)


def aime_answer(text: str, mode: AimeExtraction) -> int | None:
    """The integer answer of `text` under an extraction mode, or None."""
    if mode not in AIME_EXTRACTIONS:
        raise ValueError(f"unknown extraction {mode!r}; valid: {AIME_EXTRACTIONS}")
    if mode in ("lenient", "lenient_compat"):
        return lenient_answer(text, compat=mode == "lenient_compat")
    found = extract_answer(text or "", mode)  # type: ignore[arg-type]
    if found is None:
        return None
    cleaned = found.strip().replace("$", "").replace(",", "").rstrip(".")
    return int(cleaned) if cleaned.lstrip("-").isdigit() else None
