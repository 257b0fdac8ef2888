"""SuCo's adaptive sufficiency threshold δ(x) = δ0 + α·C(x) and its dynamic complexity pool.

C(x_i) is the percentile rank of the full trajectory's length, (1/N)·Σ_j 1[|z_j| <= |z_i|];
the paper preferred it to min-max or log scaling for its robustness to outliers (secondhand,
spec suco.md §2). In SAPO the lengths come from a pool holding an EMA of each question's mean
rollout length, z̄_i <- (1 - η)·z̄_i + η·mean_k |z_i^(k)| with η = 0.1 (secondhand).

The defaults δ0 = 0.6 and α = 0.3 are **ours**: the paper's values are unknown (spec §4); they
sit inside a plausible grid δ0 in [0.5, 0.8], α in [0.1, 0.4]. A pool's first observation of a
question sets z̄ to that mean (ours: the paper does not say how the EMA starts).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import overload

import numpy as np

DELTA0 = 0.6  # ours (spec §2): the paper's value is unknown
ALPHA = 0.3  # ours (spec §2): the paper's value is unknown
ETA = 0.1  # EMA rate of the dynamic complexity pool (secondhand)


def percentile_ranks(lengths: Sequence[float] | np.ndarray) -> np.ndarray:
    """C_i = (1/N)·Σ_j 1[len_j <= len_i]; ties share the higher rank, and the longest gets 1.

    Raises:
        ValueError: no lengths, or a NaN among them.

    """
    x = np.asarray(lengths, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"percentile_ranks needs a non-empty 1-D sequence, got shape {x.shape}")
    if np.isnan(x).any():
        raise ValueError("percentile_ranks: a length is NaN")
    return np.searchsorted(np.sort(x), x, side="right") / x.size


def check_threshold(delta0: float, alpha: float) -> None:
    """Raise ValueError unless 0 <= δ0, 0 <= α and δ0 + α <= 1 (so that δ(x) <= 1 everywhere)."""
    if not (delta0 >= 0 and alpha >= 0 and delta0 + alpha <= 1 + 1e-12):
        raise ValueError(
            f"the threshold needs 0 <= delta0, 0 <= alpha and delta0 + alpha <= 1; "
            f"got delta0={delta0}, alpha={alpha}"
        )


@overload
def adaptive_delta(c: float, delta0: float = ..., alpha: float = ...) -> float: ...
@overload
def adaptive_delta(c: np.ndarray, delta0: float = ..., alpha: float = ...) -> np.ndarray: ...
def adaptive_delta(
    c: float | np.ndarray, delta0: float = DELTA0, alpha: float = ALPHA
) -> float | np.ndarray:
    """δ = δ0 + α·C for a complexity C in [0, 1] (a float, or an array elementwise).

    Raises:
        ValueError: the threshold parameters fail `check_threshold`, or C is outside [0, 1].

    """
    check_threshold(delta0, alpha)
    arr = np.asarray(c, dtype=float)
    if np.isnan(arr).any() or (arr < 0).any() or (arr > 1).any():
        raise ValueError(f"complexity C must be in [0, 1], got {c}")
    delta = delta0 + alpha * arr
    return float(delta) if arr.ndim == 0 else delta


def ema_update(zbar: float, rollout_mean: float, eta: float = ETA) -> float:
    """z̄ <- (1 - η)·z̄ + η·(mean rollout length), 0 < η <= 1."""
    if not 0 < eta <= 1:
        raise ValueError(f"eta must be in (0, 1], got {eta}")
    return (1 - eta) * zbar + eta * rollout_mean


class ComplexityPool:
    """Per-question EMA of rollout lengths, and complexities C as percentile ranks over it."""

    def __init__(self, eta: float = ETA) -> None:
        if not 0 < eta <= 1:
            raise ValueError(f"eta must be in (0, 1], got {eta}")
        self.eta = eta
        self.zbar: dict[Hashable, float] = {}

    def update(self, question: Hashable, rollout_lengths: Iterable[float]) -> float:
        """Fold one group of rollouts' mean length into the question's EMA; return the new z̄."""
        lengths = list(rollout_lengths)
        if not lengths:
            raise ValueError(f"question {question!r}: no rollout lengths")
        mean = float(np.mean(lengths))
        old = self.zbar.get(question)
        self.zbar[question] = mean if old is None else ema_update(old, mean, self.eta)
        return self.zbar[question]

    def complexities(self) -> dict[Hashable, float]:
        """C for every question in the pool."""
        keys = list(self.zbar)
        ranks = percentile_ranks([self.zbar[k] for k in keys]) if keys else []
        return {k: float(r) for k, r in zip(keys, ranks, strict=True)}

    def complexity(self, question: Hashable) -> float:
        """C of one question within the current pool."""
        if question not in self.zbar:
            raise KeyError(f"question {question!r} is not in the pool")
        values = np.fromiter(self.zbar.values(), dtype=float)
        return float(np.mean(values <= self.zbar[question]))

    def delta(self, question: Hashable, delta0: float = DELTA0, alpha: float = ALPHA) -> float:
        """δ(x) = δ0 + α·C(x) from the current pool."""
        return adaptive_delta(self.complexity(question), delta0, alpha)
