"""The bets of a betting confidence sequence: the plug-in schedule, or a mix tuned to a planned n.

A betting CS rejects a candidate mean m once its capital passes 1/alpha. Any predictable bet
lambda_t keeps the capital a nonnegative martingale under m, so the choice of bets changes the
width, never the validity. Two choices:

- **plug-in** (Waudby-Smith and Ramdas 2024, eq. 26): lambda_t = sqrt(2 log(2/alpha) /
  (sigma2_{t-1} t log(1 + t))). It shrinks with t so that the CS narrows at every n, at the cost
  of a width at n of about sqrt(log n) times what a bet tuned to n gives: at several thousand
  items, 2-2.5 times the fixed-n normal interval's width.
- **planned** (a mixture over bets): the capital is the weighted mean sum_k w_k K_k(m) of
  several capitals, each with its own bet (a mean of martingales is one, so Ville still gives
  P(ever >= 1/alpha) <= alpha). Bet k is tuned to n_k: lambda_k = sqrt(2 log(2 / (alpha w_k)) /
  (sigma2_{t-1} n_k)), the bet that makes the hedged capital's boundary narrowest at n = n_k.
  `PLANNED_BETS` puts half the weight on the planned n (the budget, or the number of items),
  a quarter on n / 8, and a quarter on the plug-in schedule, so that pairs far apart still
  resolve early. At the planned n its half-width is about sqrt(2 log(4 / alpha)) sigma /
  sqrt(n): 2.96 sigma / sqrt(n) at alpha 0.05, against 1.96 for a fixed-n normal interval.

sigma2_{t-1} = (1/4 + sum_{i<t} (X_i - mu_hat_i)^2) / t on the [0, 1] scale: predictable,
shrunk towards the largest variance by one pseudo-observation. Every bet is truncated by the
CS (c / m, c / (1 - m)) so each capital's factor stays >= 1 - c > 0 and monotone in m.

References:
    Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by
    betting. JRSS-B 86(1), 1-27 (section 5.4 mixes capitals over bets; eq. 26 is the plug-in).

"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

PLANNED_BETS = ((0.25, None), (0.25, 0.125), (0.5, 1.0))  # (weight, n_k / planned n; None: plug-in)


@dataclass(frozen=True, slots=True)
class Bets:
    """The bets a CS mixes.

    Attributes:
        weights: Weight of each bet's capital (they sum to 1).
        tuned: Per bet, the n its bet is tuned to, or None for the plug-in schedule.
        planned: The planned n the mixture was made for (None: the plug-in alone).

    """

    weights: tuple[float, ...]
    tuned: tuple[float | None, ...]
    planned: int | None

    @property
    def log_weights(self) -> np.ndarray:
        """(K,) log of each bet's weight."""
        return np.log(np.asarray(self.weights, dtype=float))

    def describe(self) -> str:
        """The bets in words, for a CS's method string."""
        if self.planned is None:
            return "predictable plug-in"
        return (
            f"mixture of bets tuned to the planned n = {self.planned} (weights "
            + ", ".join(f"{w:g} at {'plug-in' if n is None else f'n {n:.0f}'}"
                        for w, n in zip(self.weights, self.tuned, strict=True))
            + ")"
        )  # fmt: skip


def bets_for(planned: int | None) -> Bets:
    """The plug-in schedule (planned None) or `PLANNED_BETS` scaled to `planned` observations."""
    if planned is None:
        return Bets((1.0,), (None,), None)
    if planned < 1:
        raise ValueError(f"planned n must be a positive count, got {planned}")
    tuned = tuple(None if s is None else max(1.0, s * planned) for _, s in PLANNED_BETS)
    return Bets(tuple(w for w, _ in PLANNED_BETS), tuned, int(planned))


def bet_sizes(n_seen: np.ndarray, var_sum: np.ndarray, alpha: float, bets: Bets) -> np.ndarray:
    """(B, K) bets for draw t = n_seen + 1, from the past only (before truncation).

    Args:
        n_seen: (B,) observations before this one.
        var_sum: (B,) sum over those of (X_i - mu_hat_i)^2 on the [0, 1] scale.
        alpha: The CS's level.
        bets: The mixture.

    """
    t = np.asarray(n_seen, dtype=float)[:, None] + 1.0  # (B, 1)
    sigma2 = (0.25 + np.asarray(var_sum, dtype=float)[:, None]) / t  # (B, 1)
    out = []
    for w, n in zip(bets.weights, bets.tuned, strict=True):
        level = 2.0 * math.log(2.0 / (alpha * w))
        scale = t * np.log1p(t) if n is None else np.full_like(t, n)
        out.append(np.sqrt(level / (sigma2 * scale)))
    return np.concatenate(out, axis=1)
