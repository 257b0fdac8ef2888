r"""Sentence segmentation of a chain of thought into the cut points of SuCo's prefixes (ours).

The paper's splitter is unknown (spec suco.md §2 and §4); this one is reconstructed:

- a cut falls after `.`, `?` or `!` followed by whitespace, or after a newline;
- the whitespace run after a cut point belongs to the sentence before it, so no sentence is
  whitespace alone and `"".join(split_sentences(cot)) == cot` for any CoT that is not blank;
- no cut falls inside `$…$`, `$$…$$`, `\[…\]`, `\(…\)` or a ``` code fence. An unclosed fence
  protects the rest of the text (a truncated code block); an unclosed `$`, `$$`, `\[` or `\(` is
  taken as a literal character and protects nothing. `\$` is an escaped dollar.

Notes:
    Abbreviations ("e.g. ", "Fig. 3") and numbered lists ("1. ") are cut like sentence ends; the
    splitter is deliberately simple, and only the cut points matter for SuCo. A blank CoT
    (empty or whitespace) has no sentences: T = 0.

"""

from __future__ import annotations

# (opening, closing) delimiters of spans that are never cut; longer openings are tried first
_PROTECTED: tuple[tuple[str, str], ...] = (("```", "```"), ("$$", "$$"), ("\\[", "\\]"),
                                           ("\\(", "\\)"), ("$", "$"))  # fmt: skip


def _protected_end(text: str, i: int) -> int | None:
    """If a protected span opens at `i`, the index just past its closing delimiter."""
    for opening, closing in _PROTECTED:
        if text.startswith(opening, i):
            close = text.find(closing, i + len(opening))
            if close < 0:
                return len(text) if opening == "```" else None
            return close + len(closing)
    return None


def sentence_ends(cot: str) -> list[int]:
    """End offsets (exclusive) of the sentences of `cot`; the last one is `len(cot)`.

    Returns:
        Strictly increasing offsets, one per sentence; empty for a blank CoT.

    """
    ends: list[int] = []
    start, i, n = 0, 0, len(cot)
    while i < n:
        if cot[i] == "\\" and cot.startswith("\\$", i):
            i += 2
            continue
        skip = _protected_end(cot, i)
        if skip is not None:
            i = skip
            continue
        ch = cot[i]
        cut = ch == "\n" or (ch in ".?!" and i + 1 < n and cot[i + 1].isspace())
        i += 1
        if cut:
            while i < n and cot[i].isspace():
                i += 1
            if cot[start:i].strip():  # a whitespace-only piece joins the next sentence
                ends.append(i)
                start = i
    if cot[start:].strip():
        ends.append(n)
    elif ends:
        ends[-1] = n  # trailing whitespace joins the last sentence
    return ends


def split_sentences(cot: str) -> list[str]:
    """The sentences of `cot`; they join back to `cot` exactly unless it is blank (then `[]`)."""
    ends = sentence_ends(cot)
    return [cot[a:b] for a, b in zip([0, *ends], ends, strict=False)]


def prefixes(cot: str) -> list[str]:
    """The prefixes z_{<=t} for t = 0..T: `""` first, then one per sentence, the last being `cot`.

    A blank CoT gives `[""]` (T = 0).
    """
    return [""] + [cot[:end] for end in sentence_ends(cot)]
