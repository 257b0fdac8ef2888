"""Product quantisation for ProtoKV's residual modes: codebooks, codes and top-S decoding.

From the authors' code (`kvcache_utils_proto.py`, specs/protokv.md §2): a D-dimensional residual
is cut into G subspaces of D/G dimensions; each subspace has C codewords, fitted once by k-means
on the residuals of the first far frames. A prototype keeps, per token position, a histogram of
codes per subspace; at query time the S code tuples of highest joint probability (each
subspace's histogram smoothed by ε, subspaces independent) are found by beam search and decoded
into residuals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def subspaces(dim: int, groups: int) -> int:
    """The divisor of D nearest to G (a tie goes to the larger), as the authors' code picks it."""
    target = max(1, int(groups))
    divisors = [d for d in range(1, int(dim) + 1) if dim % d == 0]
    return min(divisors, key=lambda d: (abs(d - target), -d))


def fit_codebooks(
    residuals: np.ndarray, groups: int, codes: int, *, iters: int, sample: int, seed: int
) -> np.ndarray:
    """k-means codebooks per subspace.

    Args:
        residuals: (N, D) residual vectors.
        groups: G subspaces (a divisor of D).
        codes: C codewords per subspace.
        iters: Lloyd iterations.
        sample: At most this many residuals are used (sampled without replacement).
        seed: Seed of the sampling and of the initial codewords.

    Returns:
        (G, C, D/G) codewords. The initial codewords are C distinct residuals (repeated when
        there are fewer than C); a codeword left without members is replaced by a random
        residual, as in the authors' code.

    """
    rng = np.random.default_rng(seed)
    x = np.asarray(residuals, dtype=np.float64)
    if len(x) > sample:
        x = x[rng.choice(len(x), size=sample, replace=False)]
    n, dim = x.shape
    sub = x.reshape(n, groups, dim // groups).transpose(1, 0, 2)  # (G, N, D/G)
    books = np.empty((groups, codes, dim // groups))
    for g in range(groups):
        pts = sub[g]
        if n >= codes:
            centre = pts[rng.permutation(n)[:codes]].copy()  # (C, D/G)
        else:
            centre = np.resize(pts, (codes, pts.shape[1])).copy()
        for _ in range(iters):
            assign = _nearest(pts, centre)
            for c in range(codes):
                members = pts[assign == c]
                centre[c] = members.mean(axis=0) if len(members) else pts[rng.integers(n)]
        books[g] = centre
    return books


def _nearest(points: np.ndarray, centre: np.ndarray) -> np.ndarray:
    d2 = ((points[:, None, :] - centre[None, :, :]) ** 2).sum(-1)  # (N, C)
    return d2.argmin(axis=1)


def quantise(vectors: np.ndarray, books: np.ndarray) -> np.ndarray:
    """(N, D) vectors to their (N, G) nearest-codeword indices."""
    groups, _, width = books.shape
    sub = np.asarray(vectors).reshape(len(vectors), groups, width)  # (N, G, D/G)
    d2 = ((sub[:, :, None, :] - books[None]) ** 2).sum(-1)  # (N, G, C)
    return d2.argmin(axis=2)


def decode(tuples: np.ndarray, books: np.ndarray) -> np.ndarray:
    """(..., G) code tuples to (..., D) residuals."""
    groups = books.shape[0]
    parts = books[np.arange(groups), tuples]  # (..., G, D/G)
    return parts.reshape(*tuples.shape[:-1], -1)


@dataclass(frozen=True, slots=True)
class TopCodes:
    """The S most probable code tuples of one histogram, most probable first."""

    tuples: tuple[tuple[int, ...], ...]  # S tuples of G codes
    probs: tuple[float, ...]  # their joint smoothed probabilities


def top_codes(hist: np.ndarray, s: int, *, beam: int, eps: float = 1e-5) -> TopCodes:
    """Beam search over subspaces for the S code tuples of highest joint log-probability.

    Args:
        hist: (G, C) code counts of one token position.
        s: How many tuples to return.
        beam: Beam width (the authors use 4S).
        eps: Smoothing: prob = (h + ε) / (Σh + Cε) per subspace.

    """
    h = np.asarray(hist, dtype=np.float64)
    groups, codes = h.shape
    logp = np.log((h + eps) / (h.sum(axis=1, keepdims=True) + codes * eps))  # (G, C)
    beams: list[tuple[float, tuple[int, ...]]] = [(0.0, ())]
    for g in range(groups):
        grown = [(lp + logp[g, c], t + (c,)) for lp, t in beams for c in range(codes)]
        grown.sort(key=lambda item: (-item[0], item[1]))
        beams = grown[: max(beam, s)]
    best = beams[:s]
    best += [best[-1]] * (s - len(best))  # fewer than S tuples exist: repeat the last
    return TopCodes(tuple(t for _, t in best), tuple(float(np.exp(lp)) for lp, _ in best))
