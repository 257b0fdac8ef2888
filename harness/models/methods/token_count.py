"""Count and cut text in tokens: the inner model's tokenizer where it has one, else words.

A workspace is bounded by a token count, so it has to be measured and, when too long, cut. Local
models (`local/`, `hf/`) expose a Hugging Face tokenizer; API models do not, and a tokenizer
download is impossible offline, so they fall back to whitespace-separated words. Which one was
used is recorded with every run (`TokenCounter.kind`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens with `tokenizer` (a Hugging Face tokenizer) or, without one, words."""

    tokenizer: Any = None  # a transformers tokenizer, or None for words

    @property
    def kind(self) -> str:
        """`tokenizer:<class name>` or `words`."""
        if self.tokenizer is None:
            return "words"
        return f"tokenizer:{type(self.tokenizer).__name__}"

    def count(self, text: str) -> int:
        """Tokens in `text`, without special tokens."""
        if self.tokenizer is None:
            return sum(1 for _ in _WORD.finditer(text))
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def truncate(self, text: str, limit: int) -> str:
        """The longest prefix of `text` holding at most `limit` tokens, cut at a token's end.

        The text is cut, never re-rendered, so what survives is exactly what the model wrote.
        """
        if limit <= 0:
            return ""
        if self.tokenizer is None:
            ends = [m.end() for m in _WORD.finditer(text)]
            return text if len(ends) <= limit else text[: ends[limit - 1]]
        if self.count(text) <= limit:
            return text
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = enc["offset_mapping"]
        cut = text[: offsets[limit - 1][1]]
        # a tokenizer whose offsets do not round-trip (rare) is cut until it fits
        while cut and self.count(cut) > limit:
            cut = cut[:-1]
        return cut


def counter_for(api: Any) -> TokenCounter:
    """The counter for an inner model's API: its tokenizer if it exposes a usable one."""
    tok = getattr(api, "tokenizer", None)
    if (
        tok is not None
        and callable(getattr(tok, "encode", None))
        and getattr(tok, "is_fast", False)
    ):
        return TokenCounter(tok)
    return TokenCounter(None)
