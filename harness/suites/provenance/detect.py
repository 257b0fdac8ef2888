"""The text detector: green count over deduplicated (context, token) tuples, exact p-value.

Position t (t >= h) is scored only if its tuple (c_t, x_t) has not occurred earlier in the text
(Sander et al.'s `v2` dedup, KGW's `ignore_repeated_ngrams`). With n scored tokens and s green,
p = P(Bin(n, gamma) >= s) = I_gamma(s, n - s + 1), the regularised incomplete beta function.
Distinct tuples are independent Bernoulli(gamma) over keys, so this p is exact under "the text
does not depend on the key"; over texts for one fixed key it is not (repeated low-diversity
text shares its tuples), which is why the guarantee is stated over keys.

KGW's z-score (s - gamma n) / sqrt(n gamma (1 - gamma)) and its normal p are logged beside the
exact p, never decided on: at n = 50 and alpha = 1e-3 the z-test's true size is 2.6e-3.

References:
    Kirchenbauer et al., "A Watermark for Large Language Models", arXiv 2301.10226.
    Sander et al., "Watermarking Makes Language Models Radioactive", arXiv 2402.14904.

"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from harness.suites.provenance.greenlist import GreenList


def binomial_p(green: int, n: int, gamma: float) -> float:
    """P(Bin(n, gamma) >= green), exact (regularised incomplete beta); 1.0 when green <= 0."""
    if n < 0 or green > n:
        raise ValueError(f"need 0 <= green <= n, got green={green}, n={n}")
    if green <= 0:
        return 1.0
    return float(special.betainc(green, n - green + 1, gamma))


def critical_count(n: int, gamma: float, alpha: float) -> int:
    """The least c with P(Bin(n, gamma) >= c) <= alpha (n + 1 when none is: never rejects)."""
    tail = stats.binom.sf(np.arange(-1, n), n, gamma)  # tail[c] = P(X >= c) for c = 0..n
    hits = np.nonzero(tail <= alpha)[0]
    return int(hits[0]) if hits.size else n + 1


@dataclass(frozen=True, slots=True)
class Detection:
    """The detector's reading of one text under one key.

    Attributes:
        p_value: Exact one-sided binomial p (1.0 when nothing is scored).
        scored: Tokens scored (unique (context, token) tuples when deduplicated).
        green: Green tokens among them.
        z: KGW's z-score (nan when nothing is scored); logged, not decided on.
        p_z: The normal tail of z (anti-conservative at small n).
        gamma: The green fraction tested against.

    """

    p_value: float
    scored: int
    green: int
    z: float
    p_z: float
    gamma: float

    def summary(self) -> str:
        """`p=3.1e-09 scored=180 green=131 z=6.2`."""
        return f"p={self.p_value:.3g} scored={self.scored} green={self.green} z={self.z:.3g}"


def from_counts(green: int, scored: int, gamma: float) -> Detection:
    """The detection for s green of n scored."""
    if scored == 0:
        return Detection(1.0, 0, 0, math.nan, math.nan, gamma)
    z = (green - gamma * scored) / math.sqrt(scored * gamma * (1 - gamma))
    return Detection(binomial_p(green, scored, gamma), scored, green, z, float(stats.norm.sf(z)),
                     gamma)  # fmt: skip


def scored_positions(tokens: Sequence[int] | np.ndarray, h: int, dedup: bool = True) -> np.ndarray:
    """Positions t >= h whose (c_t, x_t) tuple is new in the text (all t >= h without dedup)."""
    arr = np.asarray(tokens, dtype=np.int64)
    positions = np.arange(h, arr.size)
    if not dedup or positions.size == 0:
        return positions
    windows = np.lib.stride_tricks.sliding_window_view(arr, h + 1)  # (T - h, h + 1)
    _, first = np.unique(windows, axis=0, return_index=True)
    return positions[np.sort(first)]


def green_sequence(
    tokens: Sequence[int] | np.ndarray, key: int, rule: GreenList, dedup: bool = True
) -> np.ndarray:
    """Green indicators of the scored positions of one text, in text order."""
    arr = np.asarray(tokens, dtype=np.int64)
    pos = scored_positions(arr, rule.h, dedup)
    if pos.size == 0:
        return np.zeros(0, dtype=bool)
    ctx = np.stack([arr[pos - rule.h + j] for j in range(rule.h)], axis=1)  # (n, h)
    keys = np.full(pos.size, key, dtype=np.uint64)
    return rule.is_green(keys, ctx, arr[pos])


def detect(
    tokens: Sequence[int] | np.ndarray, key: int, rule: GreenList, dedup: bool = True
) -> Detection:
    """Test one token sequence for the watermark of `key` under `rule`."""
    green = green_sequence(tokens, key, rule, dedup)
    return from_counts(int(green.sum()), int(green.size), rule.gamma)


def green_sequences(
    texts: np.ndarray, keys: np.ndarray, rule: GreenList, dedup: bool = True
) -> list[np.ndarray]:
    """Green indicators of each row's scored positions: texts (N, T), one key per row.

    One hash call for the whole batch; the dedup is per row.
    """
    texts = np.asarray(texts, dtype=np.int64)
    n_rows, length = texts.shape
    if length <= rule.h:
        return [np.zeros(0, dtype=bool) for _ in range(n_rows)]
    ctx = np.stack([texts[:, j : length - rule.h + j] for j in range(rule.h)], axis=2)
    tok = texts[:, rule.h :]  # (N, T - h)
    row_keys = np.repeat(np.asarray(keys, dtype=np.uint64), length - rule.h)
    green = rule.is_green(row_keys, ctx.reshape(-1, rule.h), tok.reshape(-1))
    green = green.reshape(n_rows, length - rule.h)
    out = []
    for row in range(n_rows):
        pos = scored_positions(texts[row], rule.h, dedup) - rule.h
        out.append(green[row, pos])
    return out
