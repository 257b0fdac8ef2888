"""Long-range key-value recall data for L2A (specs/l2a.md §6; the layout is the spec's CPU one).

A sequence of T tokens over a vocabulary of 64: 24 keys, 24 values and 16 filler tokens.
- 8 "key value" pairs sit at random even slots of the first half (key at s, value at s + 1),
  with 8 distinct keys; every other position of the first T − 8 holds a random filler token.
- The last 8 positions repeat the 8 keys in a random order; each must output its value.
- The loss and the accuracy count those 8 query positions only; chance is 1/24.

With T = 128 and W = 16 every value is more than W tokens before its query, so a sliding
window alone cannot recall it, while filler tokens need no global read.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

N_KEYS, N_VALUES, N_FILLER = 24, 24, 16
VOCAB = N_KEYS + N_VALUES + N_FILLER  # keys 0-23, values 24-47, filler 48-63
IGNORE = -100  # target of positions without loss


@dataclass(frozen=True)
class RecallBatch:
    """Tokens, targets and where the queries are."""

    tokens: Tensor  # (B, T) int64
    targets: Tensor  # (B, T) int64: the value at query positions, IGNORE elsewhere
    query: Tensor  # (B, T) bool


def recall_batch(batch: int, seq_len: int, pairs: int, gen: torch.Generator) -> RecallBatch:
    """Draw `batch` sequences from `gen`."""
    if not 1 <= pairs <= min(N_KEYS, seq_len // 4):
        raise ValueError(f"{pairs} pairs do not fit a sequence of {seq_len} tokens")
    tokens = N_KEYS + N_VALUES + torch.randint(0, N_FILLER, (batch, seq_len), generator=gen)
    targets = torch.full((batch, seq_len), IGNORE, dtype=torch.int64)
    keys = torch.argsort(torch.rand(batch, N_KEYS, generator=gen), dim=1)[:, :pairs]
    values = N_KEYS + torch.randint(0, N_VALUES, (batch, pairs), generator=gen)
    slots = torch.argsort(torch.rand(batch, seq_len // 4, generator=gen), dim=1)[:, :pairs] * 2
    rows = torch.arange(batch)[:, None]
    tokens[rows, slots] = keys
    tokens[rows, slots + 1] = values
    order = torch.argsort(torch.rand(batch, pairs, generator=gen), dim=1)
    qpos = seq_len - pairs + torch.arange(pairs)
    tokens[:, qpos] = torch.gather(keys, 1, order)
    targets[:, qpos] = torch.gather(values, 1, order)
    return RecallBatch(tokens, targets, targets != IGNORE)


def token_name(token: int) -> str:
    """k0-k23 for keys, v0-v23 for values, f0-f15 for filler."""
    if not 0 <= token < VOCAB:
        raise ValueError(f"token {token} is outside the vocabulary of {VOCAB}")
    if token < N_KEYS:
        return f"k{token}"
    if token < N_KEYS + N_VALUES:
        return f"v{token - N_KEYS}"
    return f"f{token - N_KEYS - N_VALUES}"


_IDS = {token_name(t): t for t in range(VOCAB)}


def render(tokens: list[int]) -> str:
    """Tokens as space-separated names."""
    return " ".join(token_name(t) for t in tokens)


def parse(text: str) -> list[int]:
    """Space-separated names back to tokens; an unknown name is a ValueError naming it."""
    words = text.split()
    bad = sorted({w for w in words if w not in _IDS})
    if bad:
        raise ValueError(
            f"{bad[:5]} are not recall tokens; write keys k0-k23, values v0-v23, filler f0-f15"
        )
    return [_IDS[w] for w in words]
