"""Keyed green lists: which tokens a watermark favours after a context.

Default scheme (`hash`, after ADFP's `hashing.py`; the hash itself is ours): a keyed 64-bit
mixing hash U(k, c, v) of the key k, the context c (the last h tokens, -1 padding a short
prefix) and the token v, mapped to [0, 1); v is green iff U < gamma. Special tokens are always
red. Distinct (c, v) pairs are then independent Bernoulli(gamma) draws over keys, which is what
makes the deduplicated binomial test exact.

Option `kgw_perm` (after KGW's `simple_1` seeding, h = 1): the green list after token x is the
first floor(gamma |V|) tokens of a permutation of the vocabulary drawn from the seed
key * x (KGW's hash key 15485863); ours draws it with numpy's PCG64, so the lists differ
from KGW's torch ones (reconstructed).

All functions are vectorised over rows: one key per row, so a batch can carry a fresh key per
text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

KGW_HASH_KEY = 15485863  # KGW's default hash key (`simple_1`)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S30, _S27, _S31, _S11 = (np.uint64(s) for s in (30, 27, 31, 11))

Scheme = Literal["hash", "kgw_perm"]


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise on uint64 (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> _S30)) * _M1
        x = (x ^ (x >> _S27)) * _M2
    return x ^ (x >> _S31)


def _u64(values: np.ndarray | Sequence[int] | int) -> np.ndarray:
    """Signed ints (a -1 pad included) as uint64 bit patterns."""
    return np.asarray(values, dtype=np.int64).astype(np.uint64)


def _keys(keys: np.ndarray | Sequence[int]) -> np.ndarray:
    """Keys in [0, 2**64) as uint64, whatever integer type they came in."""
    arr = np.asarray(keys)
    if arr.dtype.kind == "u":
        return arr.astype(np.uint64)
    if arr.dtype.kind == "i":
        return arr.astype(np.uint64)
    return np.array([int(k) % (1 << 64) for k in np.ravel(arr)], dtype=np.uint64)


def _context_state(keys: np.ndarray, contexts: np.ndarray) -> np.ndarray:
    """The hash state after the key and the context tokens: (N,) keys, (N, h) contexts."""
    with np.errstate(over="ignore"):
        state = _mix(_keys(keys) + _GOLDEN)
        for j in range(contexts.shape[1]):
            state = _mix(state ^ (_u64(contexts[:, j]) + _GOLDEN))
    return state


def uniform(keys: np.ndarray, contexts: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """U(k, c, v) in [0, 1) per row: keys (N,), contexts (N, h), tokens (N,) or (N, V)."""
    state = _context_state(np.asarray(keys), np.asarray(contexts).reshape(len(keys), -1))
    tok = _u64(tokens)
    if tok.ndim == 2:
        state = state[:, None]  # (N, 1) against (N, V)
    with np.errstate(over="ignore"):
        h = _mix(state ^ (tok * _GOLDEN + np.uint64(1)))
    return (h >> _S11).astype(np.float64) * 2.0**-53


@dataclass(frozen=True)
class GreenList:
    """The green-list rule of a watermark: fraction, context width, scheme, special tokens.

    Attributes:
        gamma: Expected green fraction of the vocabulary, in (0, 1).
        vocab: Vocabulary size.
        h: Context width (tokens before the scored one).
        special: Token ids that are always red (BOS, EOS, padding).
        scheme: `hash` (default) or `kgw_perm` (h must be 1).

    """

    gamma: float
    vocab: int
    h: int = 2
    special: tuple[int, ...] = ()
    scheme: Scheme = "hash"

    def __post_init__(self) -> None:
        """Refuse a rule that cannot be used."""
        if not 0.0 < self.gamma < 1.0:
            raise ValueError(f"gamma must be in (0, 1), got {self.gamma}")
        if self.h < 1 or self.vocab < 2:
            raise ValueError(f"need h >= 1 and vocab >= 2, got h={self.h}, vocab={self.vocab}")
        if self.scheme not in ("hash", "kgw_perm"):
            raise ValueError(f"scheme must be 'hash' or 'kgw_perm', got {self.scheme!r}")
        if self.scheme == "kgw_perm" and self.h != 1:
            raise ValueError("kgw_perm seeds from the previous token only: h must be 1")

    def contexts(self, tokens: np.ndarray, t: int) -> np.ndarray:
        """The contexts of position t in each row of tokens (N, T): (N, h), -1 before the start."""
        out = np.full((tokens.shape[0], self.h), -1, dtype=np.int64)
        for j in range(self.h):
            src = t - self.h + j
            if src >= 0:
                out[:, j] = tokens[:, src]
        return out

    def mask(self, keys: np.ndarray, contexts: np.ndarray) -> np.ndarray:
        """Green indicators of the whole vocabulary: keys (N,), contexts (N, h) -> bool (N, V)."""
        keys = np.asarray(keys)
        contexts = np.asarray(contexts).reshape(len(keys), self.h)
        if self.scheme == "kgw_perm":
            rows = [_perm_mask(int(k), int(c[0]), self.vocab, self.gamma) for k, c in
                    zip(keys, contexts, strict=True)]  # fmt: skip
            green = np.stack(rows) if rows else np.zeros((0, self.vocab), dtype=bool)
        else:
            vocab = np.broadcast_to(np.arange(self.vocab), (len(keys), self.vocab))
            green = uniform(keys, contexts, vocab) < self.gamma
        if self.special:
            green[:, list(self.special)] = False
        return green

    def is_green(self, keys: np.ndarray, contexts: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """Green indicator of one token per row: keys (N,), contexts (N, h), tokens (N,)."""
        tokens = np.asarray(tokens, dtype=np.int64)
        if self.scheme == "kgw_perm":
            return self.mask(keys, contexts)[np.arange(len(tokens)), tokens]
        green = uniform(np.asarray(keys), np.asarray(contexts), tokens) < self.gamma
        if self.special:
            green &= ~np.isin(tokens, self.special)
        return green


@lru_cache(maxsize=4096)
def _perm_mask(key: int, prev: int, vocab: int, gamma: float) -> np.ndarray:
    seed = (key * (prev + 1 if prev < 0 else prev)) % (1 << 63)
    order = np.random.Generator(np.random.PCG64(seed)).permutation(vocab)
    green = np.zeros(vocab, dtype=bool)
    green[order[: int(gamma * vocab)]] = True
    green.flags.writeable = False
    return green


def parse_key(text: str) -> int:
    """A watermark key from its text form: a decimal or 0x-hex integer in [0, 2**64).

    Raises:
        ValueError: not such an integer (the CLI turns it into a one-line usage error).

    """
    raw = text.strip()
    try:
        value = int(raw, 16) if raw.lower().startswith("0x") else int(raw, 10)
    except ValueError:
        raise ValueError(
            f"key {text!r} is not an integer; give a decimal or 0x-hex integer below 2**64"
        ) from None
    if not 0 <= value < 1 << 64:
        raise ValueError(f"key {text!r} is outside [0, 2**64)")
    return value
